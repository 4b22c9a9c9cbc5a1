/**
 * B9 on the real stack (STYLE 17, tier two): the built package, real worker threads, the mock
 * model server over HTTP, and the real OpenTelemetry SDK with in-memory exporters. What is
 * recorded is compared exactly with what the scripted traffic must produce. Run `npm run build`
 * first. Every wait is bounded; nothing is timed.
 */
import { context, metrics, trace } from "@opentelemetry/api";
import {
  type DataPoint,
  MeterProvider,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
  type ResourceMetrics,
} from "@opentelemetry/sdk-metrics";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionHost, type SessionHost, type SessionHostOptions } from "../../../dist/main/index.js";
import { startMetricsEndpoint } from "../../../dist/main/telemetry/metrics-endpoint.js";
import type { RequestTiming } from "../../../dist/shared/request-timing.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { mockModel, workerApiModel } from "../../fixtures/models.mjs";
import {
  AsyncLocalContextManager,
  counted,
  histogramCount,
  pointsOf,
  type Recorded,
  recordInMemory,
} from "../../fixtures/otel.js";

const KILLER_MODULE = new URL("../../fixtures/killer-module.mjs", import.meta.url);
const KILLER_MODEL = workerApiModel("lifeline-test-killer", "killer-1");
const TOOL_MODULE = new URL("../../fixtures/tool-module.mjs", import.meta.url);
const TOOLS_MODEL = workerApiModel("lifeline-test-tools", "tools-1");
/** The session's key: it must appear in nothing exported. */
const SECRET_KEY = "sk-telemetry-secret-4f1d9a";

const suite = mockServerSuite();
const { cleanups } = suite;

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalContextManager());
});
afterAll(() => {
  context.disable();
});

function recordingHost(recorded: Recorded, options: SessionHostOptions = {}): SessionHost {
  const dir = tempDir(cleanups, "lifeline-telemetry-");
  const host = createSessionHost({
    lifelineDir: dir,
    cwd: dir,
    telemetry: { meterProvider: recorded.meterProvider, tracerProvider: recorded.tracerProvider },
    ...options,
  });
  cleanups.push(() => host.close());
  return host;
}

function byName(spans: ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((span) => span.name === name);
}

describe("a scripted retry chain (503, 429 with a hint, success)", () => {
  it("B9 R7: records exactly three attempts, one chain ended by success, and one trace under the caller's span", async () => {
    suite.server.setScript({
      conversations: [
        {
          match: "otel chain",
          // The answer streams 6 chunks (one word each), so 5 gaps.
          steps: [503, { type: "error", status: 429, retryAfterMs: 40 }, { type: "ok", tokens: 6, tokenDelayMs: 15 }],
        },
      ],
    });
    const recorded = recordInMemory();
    cleanups.push(() => recorded.shutdown());
    const host = recordingHost(recorded, {
      settings: { retry: { baseDelayMs: 1, respectRetryAfter: true } },
    });
    const session = await host.createSession({ model: mockModel(suite.server.port), apiKey: SECRET_KEY });
    const timings: (RequestTiming | undefined)[] = [];
    session.subscribe((event) => {
      if (event.type === "message_end" && event.message.role === "assistant") timings.push(event.timing);
    });
    const parent = recorded.tracerProvider.getTracer("test-app").startSpan("app request");
    const result = await within(
      context.with(trace.setSpan(context.active(), parent), () => session.prompt("otel chain")),
      20_000,
      "the retried prompt",
    );
    parent.end();
    expect(result.stopReason).toBe("stop");
    expect(result.retries).toBe(2);

    const data = await recorded.metrics();
    const model = { "gen_ai.provider.name": "mock", "gen_ai.request.model": "mock-1", "gen_ai.operation.name": "chat" };
    expect(counted(data, "lifeline.model.attempts")).toBe(3);
    expect(
      counted(data, "lifeline.model.attempts", {
        ...model,
        "error.type": "503",
        "lifeline.attempt.outcome": "failure",
        "lifeline.retry_class": "transient",
        "lifeline.attempt.kind": "first",
      }),
    ).toBe(1);
    expect(
      counted(data, "lifeline.model.attempts", {
        ...model,
        "error.type": "429",
        "lifeline.retry_class": "rate_limit",
        "lifeline.attempt.kind": "retry",
      }),
    ).toBe(1);
    expect(
      counted(data, "lifeline.model.attempts", {
        ...model,
        "lifeline.attempt.outcome": "success",
        "lifeline.retry_class": "none",
        "lifeline.attempt.kind": "retry",
      }),
    ).toBe(1);
    expect(histogramCount(data, "gen_ai.client.operation.duration", model)).toBe(3);
    expect(histogramCount(data, "gen_ai.client.operation.duration", { "error.type": "503" })).toBe(1);
    expect(histogramCount(data, "gen_ai.client.operation.duration", { "error.type": "429" })).toBe(1);
    expect(histogramCount(data, "gen_ai.client.operation.time_to_first_chunk", model)).toBe(1);
    // B9 X9: one time per output chunk for each chunk after the first, of the one streamed reply
    // (the failures streamed none), with time_to_first_chunk's attributes; its values are the gaps
    // the worker stamped, which the reply's message_end carries.
    expect(timings).toHaveLength(3);
    const streamed = timings[2];
    expect(timings.slice(0, 2).map((timing) => timing?.chunks)).toEqual([0, 0]);
    expect(streamed?.chunks).toBe(6);
    expect(histogramCount(data, "gen_ai.client.operation.time_per_output_chunk")).toBe(5);
    expect(histogramCount(data, "gen_ai.client.operation.time_per_output_chunk", model)).toBe(5);
    const [perChunk, ...others] = pointsOf(data, "gen_ai.client.operation.time_per_output_chunk");
    expect(others).toEqual([]);
    expect(perChunk?.attributes).toEqual(pointsOf(data, "gen_ai.client.operation.time_to_first_chunk")[0]?.attributes);
    const gaps = streamed?.chunkGapsMs ?? [];
    const histogram = perChunk?.value as { sum: number; min: number; max: number };
    expect(histogram.sum).toBeCloseTo(gaps.reduce((sum, gap) => sum + gap, 0) / 1000, 9);
    expect(histogram.min).toBe(Math.min(...gaps) / 1000);
    expect(histogram.max).toBe(Math.max(...gaps) / 1000);
    expect(histogramCount(data, "gen_ai.client.token.usage", { "gen_ai.token.type": "output" })).toBe(1);
    expect(counted(data, "lifeline.retry.chains", { "lifeline.retry.end_reason": "success" })).toBe(1);
    expect(counted(data, "lifeline.retry.chains")).toBe(1);
    const perChain = pointsOf(data, "lifeline.retry.chain.attempts")[0]?.value as { sum: number; count: number };
    expect(perChain).toMatchObject({ sum: 2, count: 1 });
    expect(histogramCount(data, "lifeline.retry.delay", { "gen_ai.provider.name": "mock" })).toBe(2);
    expect(histogramCount(data, "lifeline.prompt.duration", { "lifeline.prompt.stop_reason": "stop" })).toBe(1);
    expect(counted(data, "lifeline.prompts.in_flight")).toBe(0);
    expect(counted(data, "lifeline.sessions.open")).toBe(1);

    const spans = recorded.spans();
    const [prompt] = byName(spans, "invoke_agent");
    const [chain] = byName(spans, "lifeline.retry_chain");
    const attempts = byName(spans, "chat mock-1").sort(
      (a, b) => (a.attributes["lifeline.retry.attempt"] as number) - (b.attributes["lifeline.retry.attempt"] as number),
    );
    expect(prompt?.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.conversation.id": session.id,
      "lifeline.prompt.retries": 2,
      "lifeline.prompt.stop_reason": "stop",
    });
    // One trace: the application's span → invoke_agent → the chain → its three attempts.
    const traceId = parent.spanContext().traceId;
    expect(prompt?.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
    expect(chain?.parentSpanContext?.spanId).toBe(prompt?.spanContext().spanId);
    expect(chain?.attributes).toMatchObject({ "lifeline.retry.end_reason": "success", "lifeline.retry.attempts": 2 });
    expect(attempts).toHaveLength(3);
    for (const span of [prompt, chain, ...attempts]) expect(span?.spanContext().traceId).toBe(traceId);
    for (const span of attempts) expect(span.parentSpanContext?.spanId).toBe(chain?.spanContext().spanId);
    expect(attempts.map((span) => span.attributes["lifeline.retry.attempt"])).toEqual([0, 1, 2]);
    expect(attempts.map((span) => span.attributes["error.type"])).toEqual(["503", "429", undefined]);
    expect(attempts[1]?.attributes["lifeline.retry.hint"]).toBe(0.04);
    expect(attempts[2]?.attributes).toMatchObject({ "lifeline.retry.hint_honoured": true });
    expect(attempts[2]?.attributes["lifeline.retry.delay"]).toBeGreaterThanOrEqual(0.04);
    expect(attempts[0]?.attributes["lifeline.retry.delay"]).toBeUndefined();

    // No attribute, metric or span anywhere carries the key, nor any prompt text (content is off).
    const exported = JSON.stringify({ data, spans: spans.map((span) => [span.name, span.attributes, span.events]) });
    expect(exported).not.toContain(SECRET_KEY);
    expect(exported).not.toContain("otel chain");
  });
});

describe("fleet mode's trace continuation", () => {
  it("B9: a prompt after continueTrace(traceparent) is a child of that remote span, in its trace", async () => {
    suite.server.setScript({ conversations: [{ match: "continued", steps: ["ok"] }] });
    const recorded = recordInMemory();
    cleanups.push(() => recorded.shutdown());
    const host = recordingHost(recorded);
    const session = await host.createSession({ model: mockModel(suite.server.port), apiKey: "mock-key" });
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    host.continueTrace(session.id, `00-${traceId}-b7ad6b7169203331-01`);
    await within(session.prompt("continued"), 20_000, "the prompt");
    const [prompt] = byName(recorded.spans(), "invoke_agent");
    expect(prompt?.spanContext().traceId).toBe(traceId);
    expect(prompt?.parentSpanContext).toMatchObject({ spanId: "b7ad6b7169203331", isRemote: true });
    expect(byName(recorded.spans(), "chat mock-1")[0]?.parentSpanContext?.spanId).toBe(prompt?.spanContext().spanId);
  });
});

describe("a worker killed mid-run", () => {
  it("B9 X7: the worker's exit is counted with its cause, the restore with its reason, and both are events of the prompt's span", async () => {
    const recorded = recordInMemory();
    cleanups.push(() => recorded.shutdown());
    const host = recordingHost(recorded, { threads: 1, settings: { retry: { baseDelayMs: 1 } } });
    const killed = new SharedArrayBuffer(4);
    const session = await host.createSession({
      model: KILLER_MODEL,
      workerModule: KILLER_MODULE,
      workerModuleOptions: { killed, killAfterMs: 30 },
    });
    const result = await within(session.prompt("die once"), 20_000, "the prompt to outlive its worker");
    expect(result.stopReason).toBe("stop");
    const data = await recorded.metrics();
    expect(counted(data, "lifeline.worker.exits", { "lifeline.worker.exit_cause": "exit" })).toBe(1);
    expect(counted(data, "lifeline.worker.exits")).toBe(1);
    expect(counted(data, "lifeline.session.restores", { "lifeline.worker.exit_cause": "exit" })).toBe(1);
    expect(
      counted(data, "lifeline.model.attempts", { "error.type": "worker_exit", "lifeline.retry_class": "transient" }),
    ).toBe(1);
    const [prompt] = byName(recorded.spans(), "invoke_agent");
    expect(prompt?.events.map((event) => event.name)).toEqual(["lifeline.worker.exited", "lifeline.session.restored"]);
    expect(prompt?.events[1]?.attributes).toMatchObject({
      "lifeline.worker.exit_cause": "exit",
      "lifeline.session.restarts": 1,
    });
  });
});

describe("each worker's event loop", () => {
  /** A loop delay this long (s) is the tool's 800 ms block. */
  const SEEN_BLOCK_S = 0.7;

  it("B9: a worker blocked by a synchronous tool shows in its own lifeline.worker.event_loop.delay, not in the host's", async () => {
    // The host's and the workers' loop gauges of every export (one each 100 ms), from the prompt on.
    const host: number[] = [];
    const worker: DataPoint<number>[] = [];
    let reported: () => void = () => {};
    const workerReported = new Promise<void>((resolve) => (reported = resolve));
    let sampling: () => void = () => {};
    const workerSampling = new Promise<void>((resolve) => (sampling = resolve));
    const exporter: PushMetricExporter = {
      export(resourceMetrics: ResourceMetrics, done) {
        for (const metric of resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics)) {
          const points = metric.dataPoints as DataPoint<number>[];
          if (metric.descriptor.name === "lifeline.host.event_loop.delay.max") host.push(...points.map((p) => p.value));
          if (metric.descriptor.name === "lifeline.worker.event_loop.delay.max") worker.push(...points);
        }
        if (worker.length > 0) sampling();
        if (worker.some((point) => point.value >= SEEN_BLOCK_S)) reported();
        done({ code: 0 });
      },
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    const meterProvider = new MeterProvider({
      readers: [new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 100 })],
    });
    cleanups.push(() => meterProvider.shutdown());
    // A 1 s heartbeat: the worker reports its loop every 5 s (LOOP_REPORT_BEATS). The hang timeout
    // stays well above the 800 ms block even on a loaded machine, so the watchdog leaves the worker be.
    const dir = tempDir(cleanups, "lifeline-telemetry-");
    const lifeline = createSessionHost({
      lifelineDir: dir,
      cwd: dir,
      threads: 1,
      hangTimeoutMs: 4000,
      telemetry: { meterProvider },
    });
    cleanups.push(() => lifeline.close());
    const session = await lifeline.createSession({ model: TOOLS_MODEL, workerModule: TOOL_MODULE });
    // The worker samples its loop from when the host asks it to (once metrics start): wait for its
    // first report, so the block below happens while it samples.
    await within(workerSampling, 30_000, "the worker's first loop report");
    const restored: string[] = [];
    session.subscribe((event) => {
      if (event.type === "session_restored") restored.push(event.reason);
    });
    host.length = 0;
    const result = await within(session.prompt("crunch [busy=800]"), 30_000, "the busy tool's prompt");
    // The block must have happened on the watched worker, not been cut by a restart.
    expect(restored).toEqual([]);
    expect(result.stopReason).toBe("stop");
    // On a timeout, say what the worker did report (each collection's highest max, in seconds).
    await within(workerReported, 30_000, "the worker's loop report of its 800 ms block").catch((error: unknown) => {
      const seen = worker.map((point) => point.value.toFixed(3)).join(", ");
      throw new Error(`${error instanceof Error ? error.message : String(error)}; reports seen: ${seen}`);
    });
    const blocked = worker.find((point) => point.value >= SEEN_BLOCK_S);
    expect(blocked?.attributes).toEqual({ "lifeline.worker.slot": 0 });
    expect(host.length).toBeGreaterThan(0);
    // The main thread was never blocked: its worst delay stays below what counts as the block. A
    // machine loaded by other work delays the main thread too (up to 0.46 s seen at load average
    // 10 on 2 cores), but a synchronous 800 ms on it would read 0.8 s or more.
    expect(Math.max(...host)).toBeLessThan(SEEN_BLOCK_S);
  }, 120_000);
});

describe("the application's globally registered providers", () => {
  it("B9: a host without the telemetry option records into the providers the application registered with its API copy (1.9.0)", async () => {
    suite.server.setScript({ conversations: [{ match: "global", steps: ["ok"] }] });
    const recorded = recordInMemory();
    cleanups.push(() => recorded.shutdown());
    expect(metrics.setGlobalMeterProvider(recorded.meterProvider)).toBe(true);
    expect(trace.setGlobalTracerProvider(recorded.tracerProvider)).toBe(true);
    cleanups.push(() => {
      metrics.disable();
      trace.disable();
    });
    const dir = tempDir(cleanups, "lifeline-telemetry-");
    const host = createSessionHost({ lifelineDir: dir, cwd: dir });
    cleanups.push(() => host.close());
    const session = await host.createSession({ model: mockModel(suite.server.port), apiKey: "mock-key" });
    await within(session.prompt("global"), 20_000, "the prompt");
    const data = await recorded.metrics();
    expect(counted(data, "lifeline.model.attempts", { "lifeline.attempt.outcome": "success" })).toBe(1);
    expect(byName(recorded.spans(), "invoke_agent")).toHaveLength(1);
  });

  it("B9: telemetry false records nothing even into registered providers", async () => {
    suite.server.setScript({ conversations: [{ match: "opted out", steps: ["ok"] }] });
    const recorded = recordInMemory();
    cleanups.push(() => recorded.shutdown());
    metrics.setGlobalMeterProvider(recorded.meterProvider);
    trace.setGlobalTracerProvider(recorded.tracerProvider);
    cleanups.push(() => {
      metrics.disable();
      trace.disable();
    });
    const dir = tempDir(cleanups, "lifeline-telemetry-");
    const host = createSessionHost({ lifelineDir: dir, cwd: dir, telemetry: false });
    cleanups.push(() => host.close());
    const session = await host.createSession({ model: mockModel(suite.server.port), apiKey: "mock-key" });
    await within(session.prompt("opted out"), 20_000, "the prompt");
    expect(pointsOf(await recorded.metrics(), "lifeline.model.attempts")).toEqual([]);
    expect(recorded.spans()).toEqual([]);
  });
});

describe("the Prometheus scrape path", () => {
  it("B9: /metrics over real HTTP parses as Prometheus text with OpenTelemetry's names and carries the recorded values", async () => {
    suite.server.setScript({ conversations: [{ match: "scraped", steps: [503, "ok"] }] });
    const endpoint = await startMetricsEndpoint({
      port: 0,
      host: "127.0.0.1",
      resource: { "lifeline.fleet.name": "f1" },
    });
    cleanups.push(() => endpoint.close());
    const dir = tempDir(cleanups, "lifeline-telemetry-");
    const host = createSessionHost({
      lifelineDir: dir,
      cwd: dir,
      settings: { retry: { baseDelayMs: 1 } },
      telemetry: { meterProvider: endpoint.meterProvider },
    });
    cleanups.push(() => host.close());
    const session = await host.createSession({ model: mockModel(suite.server.port), apiKey: SECRET_KEY });
    await within(session.prompt("scraped"), 20_000, "the prompt");
    const response = await within(fetch(`http://127.0.0.1:${endpoint.port}/metrics`), 10_000, "the scrape");
    expect(response.status).toBe(200);
    const text = await response.text();
    // Every sample line is `name{labels} value`; comments are # HELP / # TYPE.
    const samples = new Map<string, number>();
    for (const line of text.split("\n")) {
      if (line === "" || line.startsWith("#")) continue;
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
      expect(match, line).not.toBeNull();
      samples.set(`${match?.[1]}${match?.[2] ?? ""}`, Number(match?.[3]));
    }
    const sample = (name: string, labels: Record<string, string>) =>
      [...samples.entries()]
        .filter(
          ([key]) =>
            key.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => key.includes(`${k}="${v}"`)),
        )
        .reduce((sum, [, value]) => sum + value, 0);
    expect(text).toContain("# TYPE lifeline_model_attempts_total counter");
    expect(sample("lifeline_model_attempts_total", { error_type: "503", lifeline_attempt_kind: "first" })).toBe(1);
    expect(
      sample("lifeline_model_attempts_total", { lifeline_attempt_outcome: "success", lifeline_attempt_kind: "retry" }),
    ).toBe(1);
    expect(sample("gen_ai_client_operation_duration_count", { gen_ai_provider_name: "mock" })).toBe(2);
    expect(sample("lifeline_retry_chains_total", { lifeline_retry_end_reason: "success" })).toBe(1);
    expect(sample("target_info", { service_name: "lifeline", lifeline_fleet_name: "f1" })).toBe(1);
    expect(text).not.toContain(SECRET_KEY);
  });
});
