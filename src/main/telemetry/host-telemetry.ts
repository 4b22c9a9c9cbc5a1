/**
 * A host's telemetry (B9, docs/observability.md): decides whether the host records, makes its
 * instruments once, observes what the host holds (open sessions, budgets, permits, event loops) at
 * each collection, counts worker exits, takes the workers' event-loop reports, and gives each new
 * session its {@link SessionTelemetry}.
 *
 * Whether it records is asked at each session's creation until the answer is yes: the `telemetry`
 * option's providers (only those it names: one alone is that signal only), else the ones the
 * application registered globally, else nothing. With
 * nothing to record into, no instrument exists, no listener is added and `prompt()` reads no
 * context: the cost is one cached `import()` and two checks per created session. `telemetry: false`
 * skips even those.
 */
import type { Worker } from "node:worker_threads";
import type { BatchObservableResult, Context, Meter, ObservableResult, Tracer } from "@opentelemetry/api";
import type { LoopDelay } from "../../shared/wire/protocol.js";
import type { CoordinationSnapshot } from "../coordination/host-coordination.js";
import { type EventLoopObserver, observeEventLoops } from "./event-loop-metrics.js";
import { type Instruments, instrumentsOf } from "./instruments.js";
import {
  hasGlobalMeterProvider,
  hasGlobalTracerProvider,
  hasRegisteredGlobals,
  loadOtel,
  type Otel,
  SCOPE,
} from "./otel-api.js";
import { PromptSpans } from "./prompt-spans.js";
import { SessionTelemetry } from "./session-telemetry.js";
import type { TelemetryOptions } from "./telemetry-options.js";
import { parseTraceparent } from "./traceparent.js";

/** What the host lets its telemetry read, at each collection. */
export interface HostTelemetrySources {
  sessionCount: () => number;
  coordination: () => CoordinationSnapshot;
  workerThreads: () => readonly Worker[];
  /** Has every worker report its event-loop delay to {@link HostTelemetry.workerLoopDelay}; called once metrics start. */
  watchWorkerLoops: () => void;
}

/** The host's recording, once it records. */
interface Recording {
  otel: Otel;
  instruments: Instruments | undefined;
  tracer: Tracer | undefined;
  /** The event-loop gauges, when metrics are recorded. */
  loops: EventLoopObserver | undefined;
  stop: () => void;
}

/** See the file comment. Main thread only; one per `SessionHost`. */
export class HostTelemetry {
  readonly #options: TelemetryOptions | false | undefined;
  readonly #sources: HostTelemetrySources;
  #recording: Recording | undefined;
  #closed = false;
  /** Fleet mode: the trace context each session's next prompt continues (a job's `traceparent`). */
  readonly #parents = new Map<string, Context>();
  /** Prompts begun and not settled, across the host's sessions (`lifeline.prompts.in_flight`). */
  #promptsLive = 0;

  constructor(options: TelemetryOptions | false | undefined, sources: HostTelemetrySources) {
    this.#options = options;
    this.#sources = sources;
  }

  /**
   * The telemetry of a session being opened, or undefined when the host records nothing. Never
   * rejects: a telemetry that cannot start records nothing rather than failing the session.
   */
  async openSession(sessionId: string): Promise<SessionTelemetry | undefined> {
    const recording = await this.#start();
    if (recording === undefined) return undefined;
    return new SessionTelemetry({
      otel: recording.otel,
      instruments: recording.instruments,
      spans: recording.tracer === undefined ? undefined : new PromptSpans(recording.otel, recording.tracer, sessionId),
      recordContent: this.#options !== false && this.#options?.recordContent === true,
      promptsLive: (delta) => {
        this.#promptsLive += delta;
      },
      takeParent: () => {
        const parent = this.#parents.get(sessionId);
        this.#parents.delete(sessionId);
        return parent;
      },
    });
  }

  /**
   * Fleet mode: the next prompt of `sessionId` continues the trace of `traceparent` (a W3C
   * `traceparent` header value) rather than the context `prompt()` is called in. A malformed
   * value, or a host that records no spans, is ignored.
   */
  continueTrace(sessionId: string, traceparent: string | undefined): void {
    const otel = this.#recording?.otel;
    if (otel === undefined || this.#recording?.tracer === undefined || traceparent === undefined) return;
    const spanContext = parseTraceparent(traceparent);
    if (spanContext !== undefined)
      this.#parents.set(sessionId, otel.trace.setSpanContext(otel.ROOT_CONTEXT, spanContext));
  }

  /** X5/X8: a worker died or was terminated (`cause`: how; `start` for one that never started). */
  workerExited(cause: string): void {
    this.#recording?.instruments?.workerExits.add(1, { "lifeline.worker.exit_cause": cause });
  }

  /** B9: a worker's event-loop report (thread `threadId`); ignored unless metrics are recorded. */
  workerLoopDelay(threadId: number, delay: LoopDelay): void {
    this.#recording?.loops?.workerDelay(threadId, delay);
  }

  /** The host closed: observable callbacks are removed and the delay sampler stops. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#recording?.stop();
    this.#parents.clear();
  }

  async #start(): Promise<Recording | undefined> {
    if (this.#recording !== undefined || this.#options === false) return this.#recording;
    const given = this.#options?.meterProvider !== undefined || this.#options?.tracerProvider !== undefined;
    // Nothing to record into, known without loading the API (about 40 modules on the main thread).
    if (!given && !hasRegisteredGlobals()) return undefined;
    const otel = await loadOtel();
    // A concurrent open may have started it meanwhile; a closed host starts nothing.
    if (otel === undefined || this.#closed || this.#recording !== undefined) return this.#recording;
    const options = this.#options ?? {};
    // Providers given in the option replace the globals as a pair: one given alone means that
    // signal only ("metrics only", "traces only"), not that one plus the other's global.
    const own = options.meterProvider !== undefined || options.tracerProvider !== undefined;
    const meterProvider = own
      ? options.meterProvider
      : hasGlobalMeterProvider(otel)
        ? otel.metrics.getMeterProvider()
        : undefined;
    const tracerProvider = own
      ? options.tracerProvider
      : hasGlobalTracerProvider(otel)
        ? otel.trace.getTracerProvider()
        : undefined;
    if (meterProvider === undefined && tracerProvider === undefined) return undefined;
    const meter = meterProvider?.getMeter(SCOPE) as Meter | undefined;
    const tracer = tracerProvider?.getTracer(SCOPE) as Tracer | undefined;
    const loops = meter === undefined ? undefined : observeEventLoops(meter, this.#sources.workerThreads);
    const stop = meter === undefined ? () => {} : this.#observeHost(meter);
    this.#recording = {
      otel,
      instruments: meter === undefined ? undefined : instrumentsOf(meter),
      tracer,
      loops,
      stop: () => {
        stop();
        loops?.stop();
      },
    };
    if (loops !== undefined) this.#sources.watchWorkerLoops();
    return this.#recording;
  }

  /** The host-wide gauges but the event loops'; returns what removes their callbacks. */
  #observeHost(meter: Meter): () => void {
    const sources = this.#sources;
    const sessions = meter.createObservableUpDownCounter("lifeline.sessions.open", {
      unit: "{session}",
      description: "Sessions open on the host.",
    });
    const readSessions = (result: ObservableResult) => result.observe(sources.sessionCount());
    sessions.addCallback(readSessions);
    const prompts = meter.createObservableUpDownCounter("lifeline.prompts.in_flight", {
      unit: "{prompt}",
      description: "Prompts begun and not yet settled.",
    });
    const readPrompts = (result: ObservableResult) => result.observe(this.#promptsLive);
    prompts.addCallback(readPrompts);
    const budget = meter.createObservableGauge("lifeline.retry.budget.available", {
      unit: "{retry}",
      description: "Retries the host's retry budget of each provider would allow now (B8).",
    });
    const inUse = meter.createObservableGauge("lifeline.permits.in_use", {
      unit: "{permit}",
      description: "Request permits held, per provider (B8, retry.maxConcurrentRequests).",
    });
    const waiting = meter.createObservableGauge("lifeline.permits.waiting", {
      unit: "{request}",
      description: "Model requests waiting for a permit, per provider.",
    });
    const readCoordination = (observer: BatchObservableResult) => {
      const snapshot = sources.coordination();
      for (const row of snapshot.budgets)
        observer.observe(budget, row.available, { "gen_ai.provider.name": row.provider });
      for (const row of snapshot.permits) {
        observer.observe(inUse, row.inUse, { "gen_ai.provider.name": row.provider });
        observer.observe(waiting, row.waiting, { "gen_ai.provider.name": row.provider });
      }
    };
    const coordinationGauges = [budget, inUse, waiting];
    meter.addBatchObservableCallback(readCoordination, coordinationGauges);
    return () => {
      sessions.removeCallback(readSessions);
      prompts.removeCallback(readPrompts);
      meter.removeBatchObservableCallback(readCoordination, coordinationGauges);
    };
  }
}
