/**
 * One session's telemetry (B9): an ordinary listener of its events on the main thread, which
 * records the metrics of {@link Instruments} and hands the spans to {@link PromptSpans}. Everything
 * is derived from events the session already receives, so nothing extra crosses the port; the
 * prompt's start and the caller's trace context come from the session's prompt runner through
 * {@link PromptTracing} (events start later, in another async context).
 *
 * Timing: a streamed reply's `message_end` carries its request's stamps, taken in the worker where
 * they happened (shared/request-timing.ts): the attempt runs from its HTTP request's start to its
 * end, its first chunk and the gaps between chunks are exact whatever the worker's batching. A reply
 * without stamps (made on the main thread for a run whose worker died) starts at its own timestamp
 * and ends, and has its first chunk, when those events reached the main thread.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import type { Attributes, Context } from "@opentelemetry/api";
import type { SessionEvent } from "../../shared/events.js";
import { messageText } from "../../shared/message-text.js";
import type { RequestTiming } from "../../shared/request-timing.js";
import type { PromptTracing } from "../session/session-setup.js";
import type { Instruments } from "./instruments.js";
import { type ModelAttempt, modelAttempt } from "./model-attempt.js";
import type { ModelSeries } from "./model-series.js";
import type { Otel } from "./otel-api.js";
import type { AttemptContext, PromptSpans } from "./prompt-spans.js";

/** A session's telemetry parts, given by the host's telemetry. */
export interface SessionTelemetryParts {
  otel: Otel;
  /** Absent when only traces are recorded. */
  instruments: Instruments | undefined;
  /** Absent when only metrics are recorded. */
  spans: PromptSpans | undefined;
  recordContent: boolean;
  /** The host's context for the next prompt of this session, if one was set (fleet mode's `traceparent`). */
  takeParent: () => Context | undefined;
  /** A prompt began (+1) or ended (-1): the host's prompts in flight, observed at collection (no record per prompt). */
  promptsLive: (delta: 1 | -1) => void;
}

/** See the file comment. Main thread only. */
export class SessionTelemetry implements PromptTracing {
  readonly #parts: SessionTelemetryParts;
  readonly #instruments: Instruments | undefined;
  readonly #spans: PromptSpans | undefined;
  /** Epoch ms the live prompt began; undefined between prompts. */
  #promptStart: number | undefined;
  /** The assistant reply being streamed: when it started, and its first chunk's arrival. */
  #streamStart: number | undefined;
  #firstChunk: number | undefined;
  /** The live chain: the retry number of the next attempt, its backoff, and the hint it followed. */
  #retry = 0;
  #delayMs: number | undefined;
  #lastHintMs: number | undefined;
  /** The attribute sets of the last attempt's model (model-series.ts). */
  #series: ModelSeries | undefined;
  /** The provider of the last attempt: a chain's end and a budget refusal are counted against it. */
  #provider = "";
  /** The key each provider's last attempt went out with, to count rotations (never recorded). */
  readonly #keys = new Map<string, string>();

  constructor(parts: SessionTelemetryParts) {
    this.#parts = parts;
    this.#instruments = parts.instruments;
    this.#spans = parts.spans;
  }

  /** PromptTracing: the caller's context, read synchronously in `prompt()`. */
  capture(): unknown {
    return this.#parts.otel.context.active();
  }

  /** PromptTracing: the prompt whose `prompt()` ran in `captured` begins now. */
  begin(captured: unknown): void {
    this.#settlePrompt(undefined);
    const now = Date.now();
    this.#promptStart = now;
    this.#parts.promptsLive(1);
    const explicit = this.#parts.takeParent();
    this.#spans?.begin(explicit ?? (captured as Context | undefined), now);
  }

  /** R4: the key `provider`'s next attempt goes out with; a change from the last one is a rotation. */
  keyServed(provider: string, key: string | undefined): void {
    if (key === undefined) return;
    const last = this.#keys.get(provider);
    this.#keys.set(provider, key);
    if (last !== undefined && last !== key) {
      this.#instruments?.credentialRotations.add(1, { "gen_ai.provider.name": provider });
    }
  }

  /** The session's listener. */
  handle(event: SessionEvent): void {
    switch (event.type) {
      case "agent_start":
        // A prompt not begun through prompt() (resumeRun): its span starts with its first run.
        if (this.#promptStart === undefined) this.begin(undefined);
        return;
      case "message_start":
        if (event.message.role === "assistant") {
          this.#streamStart = event.message.timestamp;
          this.#firstChunk = undefined;
        } else if (event.message.role === "user" && this.#parts.recordContent) {
          this.#spans?.promptAttributes({ "gen_ai.input.messages": JSON.stringify([textOf(event.message)]) });
        }
        return;
      case "message_update":
        if (this.#firstChunk === undefined && this.#streamStart !== undefined) this.#firstChunk = Date.now();
        return;
      case "message_end":
        if (event.message.role === "assistant") this.#attemptEnded(event.message, event.timing);
        return;
      case "agent_end":
        this.#spans?.agentEnd(event.willRetry);
        return;
      case "auto_retry_start":
        this.#retry = event.attempt;
        this.#delayMs = event.delayMs;
        this.#instruments?.retryDelay.record(event.delayMs / 1000, { "gen_ai.provider.name": this.#provider });
        return;
      case "auto_retry_end":
        this.#chainEnded(event.reason, event.attempt, event.success);
        return;
      case "provider_gate_wait": {
        const attributes = { "gen_ai.provider.name": event.provider, "lifeline.gate.before": event.before };
        this.#instruments?.gateWaits.add(1, attributes);
        this.#instruments?.gateWaitDuration.record(event.waitMs / 1000, attributes);
        this.#spans?.promptEvent("lifeline.provider_gate.wait", {
          ...attributes,
          "lifeline.gate.wait": event.waitMs / 1000,
        });
        return;
      }
      case "tool_execution_start":
        this.#spans?.toolStart(event.toolCallId, event.toolName);
        return;
      case "tool_execution_end":
        this.#instruments?.toolExecutions.add(1, {
          "gen_ai.tool.name": event.toolName,
          "lifeline.tool.error": event.isError,
        });
        this.#spans?.toolEnd(event.toolCallId, event.isError);
        return;
      case "compaction_end": {
        const outcome =
          event.result !== null ? "compacted" : event.aborted ? "aborted" : event.errorMessage ? "failed" : "none";
        this.#instruments?.compactions.add(1, {
          "lifeline.compaction.reason": event.reason,
          "lifeline.compaction.outcome": outcome,
        });
        return;
      }
      case "session_restored":
        this.#instruments?.sessionRestores.add(1, { "lifeline.worker.exit_cause": event.reason });
        this.#spans?.promptEvent("lifeline.session.restored", {
          "lifeline.worker.exit_cause": event.reason,
          "lifeline.session.restarts": event.restarts,
        });
        return;
      case "worker_exited":
        this.#spans?.promptEvent("lifeline.session.crashed", { "error.type": event.error.code });
        this.close("crashed", true);
        return;
      case "agent_settled":
        this.#spans?.settled(event);
        this.#settlePrompt(event.stopReason);
        return;
      default:
        return;
    }
  }

  /** The session closed: an open prompt's span ends (as cut off) and it leaves the prompts in flight. */
  close(reason = "disposed", error = false): void {
    this.#spans?.close(reason, error);
    this.#settlePrompt(undefined);
  }

  #attemptEnded(message: AssistantMessage, timing: RequestTiming | undefined): void {
    const attempt = modelAttempt(message, Date.now());
    if (timing !== undefined) {
      attempt.startMs = timing.requestStartMs;
      attempt.endMs = timing.endMs;
      this.#firstChunk = timing.firstTokenMs;
    }
    this.#provider = attempt.provider;
    const context: AttemptContext = { retry: this.#retry };
    if (this.#retry > 0 && this.#delayMs !== undefined) {
      context.delayMs = this.#delayMs;
      if (this.#lastHintMs !== undefined) context.hintHonoured = this.#delayMs >= this.#lastHintMs * 0.99;
    }
    if (this.#firstChunk !== undefined) context.firstChunkMs = this.#firstChunk;
    if (this.#parts.recordContent) context.output = JSON.stringify([textOf(message)]);
    this.#lastHintMs = attempt.retryHintMs;
    this.#delayMs = undefined;
    this.#record(attempt, context, timing?.chunkGapsMs);
    if (attempt.errorType?.startsWith("worker_") === true) {
      this.#spans?.promptEvent("lifeline.worker.exited", { "lifeline.worker.exit_cause": attempt.errorType.slice(7) });
    }
    this.#spans?.attempt(attempt, context);
    this.#streamStart = undefined;
    this.#firstChunk = undefined;
  }

  /** `chunkGapsMs`: the gaps between the reply's chunks, from its stamps (one record per chunk after the first). */
  #record(attempt: ModelAttempt, context: AttemptContext, chunkGapsMs: readonly number[] | undefined): void {
    const instruments = this.#instruments;
    if (instruments === undefined) return;
    let series = this.#series;
    if (
      series === undefined ||
      series.base["gen_ai.provider.name"] !== attempt.provider ||
      series.base["gen_ai.request.model"] !== attempt.model
    ) {
      series = instruments.models.get(attempt.provider, attempt.model);
      this.#series = series;
    }
    instruments.operationDuration.record((attempt.endMs - attempt.startMs) / 1000, series.operation(attempt.errorType));
    series.countAttempt(attempt, context.retry);
    if (attempt.inputTokens > 0) instruments.tokenUsage.record(attempt.inputTokens, series.inputTokens);
    if (attempt.outputTokens > 0) instruments.tokenUsage.record(attempt.outputTokens, series.outputTokens);
    if (context.firstChunkMs !== undefined) {
      instruments.timeToFirstChunk.record((context.firstChunkMs - attempt.startMs) / 1000, series.base);
    }
    // The API has no bulk record: one call per gap, made here once per reply rather than per batch
    // as deltas arrive, with the one attributes object of the reply.
    if (chunkGapsMs !== undefined) {
      const perChunk = instruments.timePerOutputChunk;
      for (const gap of chunkGapsMs) perChunk.record(gap / 1000, series.base);
    }
  }

  #chainEnded(reason: string, retries: number, success: boolean): void {
    const attributes = { "gen_ai.provider.name": this.#provider, "lifeline.retry.end_reason": reason };
    this.#instruments?.chains.add(1, attributes);
    this.#instruments?.chainAttempts.record(retries, attributes);
    if (reason === "budget_exhausted")
      this.#instruments?.budgetRefusals.add(1, { "gen_ai.provider.name": this.#provider });
    this.#spans?.chainEnded(reason, retries, success);
    this.#retry = 0;
    this.#delayMs = undefined;
  }

  /** The live prompt is over (settled with `stopReason`, or cut off when undefined). */
  #settlePrompt(stopReason: string | undefined): void {
    const start = this.#promptStart;
    if (start === undefined) return;
    this.#promptStart = undefined;
    this.#retry = 0;
    this.#parts.promptsLive(-1);
    this.#instruments?.promptDuration.record((Date.now() - start) / 1000, stopReasonSet(stopReason ?? "interrupted"));
  }
}

/** `lifeline.prompt.stop_reason` sets, one per reason (few), reused by every record. */
const STOP_REASON_SETS = new Map<string, Attributes>();
function stopReasonSet(stopReason: string): Attributes {
  let set = STOP_REASON_SETS.get(stopReason);
  if (set === undefined) {
    set = { "lifeline.prompt.stop_reason": stopReason };
    STOP_REASON_SETS.set(stopReason, set);
  }
  return set;
}

/** A message's text as the GenAI conventions' message form (recorded only on opt-in). */
function textOf(message: { role: string; content: unknown }): {
  role: string;
  parts: { type: "text"; content: string }[];
} {
  return { role: message.role, parts: [{ type: "text", content: messageText(message.content) }] };
}
