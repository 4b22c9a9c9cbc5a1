/**
 * What a load run measures, from the sessions' own events: one record per model request and per
 * prompt, and the running counters the progress display and the timeline read. Main thread; no
 * timers of its own (the clock is injected, so tests drive it with plain numbers).
 *
 * A model request is one assistant reply. Its times are the worker's stamps carried on the reply's
 * `message_end` (`timing`, see shared/request-timing.ts): the HTTP request's start, the response's
 * first byte, the first token, every delta and the end, taken where they happened, so the worker's
 * event batching does not quantize them. A reply without stamps (one the main thread made for a
 * run whose worker died) is timed from the `turn_start` before it to its `message_end`, as the
 * events reach the main thread.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import type { PromptResult, SessionEvent } from "../../../shared/events.js";
import { explainMessage, type FailureClass, isFailedStop } from "../../../shared/failures/classify.js";
import { errorText } from "../../../shared/failures/error-text.js";
import { requestFailureOf, workerExitOf } from "../../../shared/failures/request-failure.js";
import { type RequestTiming, roundMicros } from "../../../shared/request-timing.js";
import { AgenticMetrics } from "./agentic-metrics.js";
import { Sketch } from "./sketch.js";

/** One model request (a line of records.jsonl). */
export interface RequestRecord {
  type: "request";
  /** Session number, 0-based. */
  session: number;
  /** The session's prompt number, 0-based. */
  prompt: number;
  /** 0 for a turn's first request; n for the request of its n-th retry. */
  attempt: number;
  /** The agent turn within the prompt, 0-based: a reply with tool calls makes the next request a new turn (agentic-metrics.ts). */
  turn: number;
  /** When the request started, ms since the run began. */
  startMs: number;
  /** Time to first token: to the first streamed text, thinking or tool-call delta; null if none came. */
  ttftMs: number | null;
  /** Time to first byte: to the response's status and headers; null when no response came (or no stamps). */
  ttfbMs: number | null;
  /** End-to-end: start to the reply's end. */
  e2eMs: number;
  outputTokens: number;
  inputTokens: number;
  /** From the model's price table (pi-ai's `usage.cost.total`). */
  costUsd: number;
  stopReason: string;
  /** Present when the request failed (stopReason error or aborted). */
  failure?: { kind: string; class: FailureClass; message: string };
}

/** How a prompt ended: answered; failed (after any retries); cancelled by the run's end or Ctrl+C. */
export type PromptOutcome = "succeeded" | "failed" | "cancelled";

/** One prompt (a line of records.jsonl). */
export interface PromptRecord {
  type: "prompt";
  session: number;
  prompt: number;
  startMs: number;
  /** From `prompt()` to its settling, retries and their back-off included. */
  latencyMs: number;
  /** Model requests the prompt made: its turns plus its retries. */
  requests: number;
  retries: number;
  /** Agent turns whose request started (1 without tools; 1 + the replies with tool calls). */
  turns: number;
  /** Tool executions the prompt started. */
  toolCalls: number;
  outcome: PromptOutcome;
  error?: string;
  /** Back-off its retries slept, ms (retry-ledger.ts); set by `runLoad`, absent for a prompt that never settled. */
  backoffMs?: number;
}

/** Live counters, for the progress display (`onProgress`). */
export interface LoadProgress {
  elapsedMs: number;
  /** Prompts the run will send when it is bounded by `prompts`; null for a duration only. */
  plannedPrompts: number | null;
  /** The run's `durationMs`, or null. */
  durationMs: number | null;
  promptsSent: number;
  promptsDone: number;
  promptsFailed: number;
  inFlightPrompts: number;
  inFlightRequests: number;
  retries: number;
  requests: number;
  /** Output tokens per second over the last progress interval. */
  outputTokensPerSecond: number;
  /** The host's largest event-loop delay over the last progress interval, in ms. */
  loopDelayMs: number;
  /** The open model's or the sweep's current step (`baseline`, `probe`, `12.5/s`, `open`); absent in the closed model. */
  stage?: string;
}

/** Running totals (report.json `totals` is built from them). */
export interface LoadCounters {
  promptsSent: number;
  promptsSucceeded: number;
  promptsFailed: number;
  promptsCancelled: number;
  inFlightPrompts: number;
  inFlightRequests: number;
  requests: number;
  failedRequests: number;
  /** Failed requests by kind: `http_503`, `connection`, `stream_idle`, `stream_cut`, `stream_error`, `aborted`, … */
  failuresByKind: Record<string, number>;
  /** Failed requests by the retry controller's class: retryable, fatal, usage_limit, overflow, aborted. */
  failuresByClass: Record<string, number>;
  retries: number;
  /** Ended retry chains by `auto_retry_end.reason`. */
  retryChains: Record<string, number>;
  /** `provider_gate_wait` events: a retry or a new prompt held at its provider's closed gate. */
  gateWaits: number;
  /** Sum of those events' `waitMs`: how long the gate stayed closed ahead of each waiter. */
  gateWaitMs: number;
  toolCalls: number;
  outputTokens: number;
  inputTokens: number;
  costUsd: number;
  /** `session_restored` events by the dead worker's cause (`hung` is a watchdog termination). */
  restores: Record<string, number>;
}

interface SessionState {
  prompt: number;
  attempt: number;
  requestStart: number | undefined;
  firstToken: number | undefined;
  promptRequests: number;
}

const TOKEN_DELTAS = new Set(["text_delta", "thinking_delta", "toolcall_delta"]);

/** The counters of a run that has done nothing yet. */
export function emptyLoadCounters(): LoadCounters {
  return {
    promptsSent: 0,
    promptsSucceeded: 0,
    promptsFailed: 0,
    promptsCancelled: 0,
    inFlightPrompts: 0,
    inFlightRequests: 0,
    requests: 0,
    failedRequests: 0,
    failuresByKind: {},
    failuresByClass: {},
    retries: 0,
    retryChains: {},
    gateWaits: 0,
    gateWaitMs: 0,
    toolCalls: 0,
    outputTokens: 0,
    inputTokens: 0,
    costUsd: 0,
    restores: {},
  };
}

/** Collects a run's records and counters; see the file comment. */
export class LoadMetrics {
  readonly counters: LoadCounters = emptyLoadCounters();
  readonly requests: RequestRecord[] = [];
  readonly prompts: PromptRecord[] = [];
  /** Turns and tools (report.json `agentic`). */
  readonly agentic: AgenticMetrics;
  /**
   * The gaps between consecutive streamed deltas of the successful requests, in ms (report.json
   * `latency.chunkGapMs`): a sketch, not a list, since a long run has one gap per token.
   */
  readonly chunkGaps = new Sketch();
  readonly #now: () => number;
  readonly #epochAtStart: number;
  readonly #sessions = new Map<number, SessionState>();

  /**
   * @param now ms since the run began
   * @param epochAtStart epoch ms at which the run began, on the main thread's high-resolution clock
   *   (`performance.timeOrigin + performance.now()` then): converts the worker's stamps to run time.
   *   With the default 0, a stamped request's `startMs` stays in epoch ms (its durations are the same).
   */
  constructor(now: () => number, epochAtStart = 0) {
    this.#now = now;
    this.agentic = new AgenticMetrics();
    this.#epochAtStart = epochAtStart;
  }

  /** Feeds one event of session `session` (a `subscribe()` listener calls this). */
  onEvent(session: number, event: SessionEvent): void {
    const state = this.#state(session);
    switch (event.type) {
      case "turn_start":
        if (state.requestStart === undefined) this.counters.inFlightRequests++;
        state.requestStart = this.#now();
        state.firstToken = undefined;
        break;
      case "message_update":
        if (state.firstToken === undefined && TOKEN_DELTAS.has(event.assistantMessageEvent.type)) {
          state.firstToken = this.#now();
        }
        break;
      case "message_end":
        if (event.message.role === "assistant") this.#endRequest(session, state, event.message, event.timing);
        // The next request is a new turn's first, not a retry.
        if (event.message.role === "assistant" && event.message.stopReason === "toolUse") state.attempt = 0;
        break;
      case "tool_execution_start":
        this.counters.toolCalls++;
        break;
      case "auto_retry_start":
        this.counters.retries++;
        state.attempt = event.attempt;
        break;
      case "auto_retry_end": {
        const key = event.reason;
        this.counters.retryChains[key] = (this.counters.retryChains[key] ?? 0) + 1;
        break;
      }
      case "provider_gate_wait":
        this.counters.gateWaits++;
        this.counters.gateWaitMs += event.waitMs;
        break;
      case "session_restored":
        this.counters.restores[event.reason] = (this.counters.restores[event.reason] ?? 0) + 1;
        break;
      default:
        break;
    }
    this.agentic.onEvent(session, event);
  }

  /** A prompt is about to be sent; returns its number within the session. */
  promptStarted(session: number): number {
    const state = this.#state(session);
    state.attempt = 0;
    state.promptRequests = 0;
    this.agentic.promptStarted(session);
    this.counters.promptsSent++;
    this.counters.inFlightPrompts++;
    return state.prompt;
  }

  /**
   * A prompt settled (`result`) or rejected (`error`). An aborted prompt is a cancellation, not a
   * failure: only the run aborts prompts, when it ends (duration, Ctrl+C). `runEnded` says the run
   * had ended when the prompt settled: a prompt that did not succeed then is cancelled too, because
   * the run's abort cut its retry chain short (a back-off or a provider-gate wait settles with the
   * last failed reply, not as aborted).
   */
  promptEnded(
    session: number,
    startMs: number,
    outcome: { result: PromptResult } | { error: unknown },
    runEnded = false,
  ): PromptRecord {
    const state = this.#state(session);
    if (state.requestStart !== undefined) {
      // The run ended without an assistant reply (it failed outside the agent loop).
      state.requestStart = undefined;
      this.counters.inFlightRequests--;
    }
    this.counters.inFlightPrompts--;
    const record: PromptRecord = {
      type: "prompt",
      session,
      prompt: state.prompt,
      startMs,
      latencyMs: this.#now() - startMs,
      requests: state.promptRequests,
      retries: "result" in outcome ? outcome.result.retries : state.attempt,
      ...this.agentic.promptFigures(session),
      outcome: "succeeded",
    };
    if ("error" in outcome) {
      record.outcome = "failed";
      record.error = errorText(outcome.error);
    } else if (outcome.result.stopReason === "aborted") {
      record.outcome = "cancelled";
    } else if (isFailedStop(outcome.result.stopReason)) {
      record.outcome = "failed";
      record.error = outcome.result.errorMessage ?? outcome.result.stopReason;
    }
    if (runEnded && record.outcome === "failed") record.outcome = "cancelled";
    if (record.outcome === "succeeded") this.counters.promptsSucceeded++;
    else if (record.outcome === "failed") this.counters.promptsFailed++;
    else this.counters.promptsCancelled++;
    this.prompts.push(record);
    state.prompt++;
    return record;
  }

  #endRequest(
    session: number,
    state: SessionState,
    message: AssistantMessage,
    timing: RequestTiming | undefined,
  ): void {
    const end = this.#now();
    const start = state.requestStart ?? end;
    if (state.requestStart !== undefined) this.counters.inFlightRequests--;
    state.requestStart = undefined;
    state.promptRequests++;
    const usage = message.usage;
    const times =
      timing === undefined
        ? {
            startMs: start,
            ttftMs: state.firstToken === undefined ? null : state.firstToken - start,
            ttfbMs: null,
            e2eMs: end - start,
          }
        : stampedTimes(timing, this.#epochAtStart);
    const record: RequestRecord = {
      type: "request",
      session,
      prompt: state.prompt,
      attempt: state.attempt,
      turn: this.agentic.turnOf(session),
      ...times,
      outputTokens: usage?.output ?? 0,
      inputTokens: usage?.input ?? 0,
      costUsd: usage?.cost?.total ?? 0,
      stopReason: message.stopReason,
    };
    this.counters.requests++;
    this.counters.outputTokens += record.outputTokens;
    this.counters.inputTokens += record.inputTokens;
    this.counters.costUsd += record.costUsd;
    if (message.stopReason === "error" || message.stopReason === "aborted") {
      const failureClass = explainMessage(message).failureClass;
      const kind = failureKind(message);
      record.failure = { kind, class: failureClass, message: message.errorMessage ?? message.stopReason };
      this.counters.failedRequests++;
      this.counters.failuresByKind[kind] = (this.counters.failuresByKind[kind] ?? 0) + 1;
      this.counters.failuresByClass[failureClass] = (this.counters.failuresByClass[failureClass] ?? 0) + 1;
    } else if (timing !== undefined) {
      for (const gap of timing.chunkGapsMs) this.chunkGaps.add(gap);
    }
    this.requests.push(record);
  }

  #state(session: number): SessionState {
    let state = this.#sessions.get(session);
    if (state === undefined) {
      state = { prompt: 0, attempt: 0, requestStart: undefined, firstToken: undefined, promptRequests: 0 };
      this.#sessions.set(session, state);
    }
    return state;
  }
}

/**
 * A request's times from the worker's stamps: durations are differences of one clock (exact to the
 * microsecond); `startMs` is converted to run time with the main thread's epoch at the run's start.
 */
function stampedTimes(
  timing: RequestTiming,
  epochAtStart: number,
): Pick<RequestRecord, "startMs" | "ttftMs" | "ttfbMs" | "e2eMs"> {
  const start = timing.requestStartMs;
  return {
    startMs: roundMicros(start - epochAtStart),
    ttftMs: timing.firstTokenMs === undefined ? null : roundMicros(timing.firstTokenMs - start),
    ttfbMs: timing.firstByteMs === undefined ? null : roundMicros(timing.firstByteMs - start),
    e2eMs: roundMicros(timing.endMs - start),
  };
}

/**
 * What went wrong with a failed request, as the report groups failures: `http_<status>` for an
 * error status, `stream_error` for an error event inside a 200 stream, `connection` when no
 * response came (reset, refused), `stream_idle` when the stream went silent past
 * `retry.provider.idleTimeoutMs` (a stall), `stream_cut` when the body broke off otherwise, `worker_<cause>` when the
 * worker died under it, `aborted`, else the provider's error type or `other`.
 */
export function failureKind(message: AssistantMessage): string {
  if (message.stopReason === "aborted") return "aborted";
  const exit = workerExitOf(message);
  if (exit !== undefined) return `worker_${exit.cause}`;
  const failure = requestFailureOf(message);
  if (failure === undefined) return "other";
  if (failure.status !== undefined && failure.status >= 400) return `http_${failure.status}`;
  if (failure.inStream === true) return "stream_error";
  if (failure.network?.code === "ERR_STREAM_IDLE") return "stream_idle";
  if (failure.network !== undefined) return failure.network.phase === "request" ? "connection" : "stream_cut";
  return failure.errorType ?? failure.errorCode ?? "other";
}
