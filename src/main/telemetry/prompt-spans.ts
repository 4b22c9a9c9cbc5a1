/**
 * One session's spans (B9), made on the main thread from the events it already receives, so the
 * spans of a prompt form one trace although its model requests and tools ran in a worker, and
 * nothing extra crosses the port:
 *
 * - `invoke_agent`: one per prompt, from its start to `agent_settled`, a child of the context
 *   `prompt()` was called in (or of the job's `traceparent` in fleet mode);
 * - `chat {model}`: one per model request (attempt), CLIENT, a child of the prompt, or of its
 *   retry chain when it belongs to one; started at the request's start in the worker;
 * - `lifeline.retry_chain`: one per retry chain, from the start of the attempt whose failure opened
 *   it to its `auto_retry_end`; its attempts are its children, numbered from 0 (the failed first
 *   attempt) as HTTP numbers resends;
 * - `execute_tool {name}`: one per tool execution, a child of the prompt.
 *
 * A failed attempt's span is made once its fate is known (its run's `agent_end` says whether a
 * chain follows), so that it can be the chain's first child; spans take explicit start and end
 * times, so making them late changes nothing of their timing.
 */
import type { Attributes, Context, Span, Tracer } from "@opentelemetry/api";
import type { AgentSettledEvent } from "../../shared/events.js";
import type { ModelAttempt } from "./model-attempt.js";
import type { Otel } from "./otel-api.js";

/** What an attempt span carries besides its {@link ModelAttempt}. */
export interface AttemptContext {
  /** 0 for a first attempt, n for the n-th retry of a chain (R7). */
  retry: number;
  /** The backoff slept before this attempt, in ms (a retry only). */
  delayMs?: number;
  /** Whether that backoff honoured the failed attempt's retry hint (a retry after a hint only). */
  hintHonoured?: boolean;
  /** Epoch ms of its first streamed chunk, when it streamed. */
  firstChunkMs?: number;
  /** The reply's text, when content is recorded. */
  output?: string;
}

type Held = { attempt: ModelAttempt; context: AttemptContext };

/** One session's open spans; see the file comment. */
export class PromptSpans {
  readonly #otel: Otel;
  readonly #tracer: Tracer;
  readonly #sessionId: string;
  #prompt: { span: Span; context: Context } | undefined;
  #chain: { span: Span; context: Context; provider: string } | undefined;
  /** A failed attempt outside any chain, waiting for its run's decision. */
  #held: Held | undefined;
  readonly #tools = new Map<string, Span>();
  /** The start attributes of the last attempt span (see #attemptSpan). */
  #startAttributes: Attributes = {};

  constructor(otel: Otel, tracer: Tracer, sessionId: string) {
    this.#otel = otel;
    this.#tracer = tracer;
    this.#sessionId = sessionId;
  }

  /** A prompt begins at `startMs`: its `invoke_agent` span, a child of `parent` when given. */
  begin(parent: Context | undefined, startMs: number): void {
    this.#endPrompt("superseded", undefined);
    const { trace, SpanKind, ROOT_CONTEXT } = this.#otel;
    const base = parent ?? ROOT_CONTEXT;
    const span = this.#tracer.startSpan(
      "invoke_agent",
      {
        kind: SpanKind.INTERNAL,
        startTime: startMs,
        attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": this.#sessionId },
      },
      base,
    );
    this.#prompt = { span, context: trace.setSpan(base, span) };
  }

  /** Whether a prompt span is open. */
  get inPrompt(): boolean {
    return this.#prompt !== undefined;
  }

  /** Sets attributes on the prompt span (its model, its input when content is recorded). */
  promptAttributes(attributes: Attributes): void {
    this.#prompt?.span.setAttributes(attributes);
  }

  /** A span event on the prompt span: a worker's death, a restore, a gate wait. */
  promptEvent(name: string, attributes: Attributes): void {
    this.#prompt?.span.addEvent(name, attributes);
  }

  /** A model request ended. */
  attempt(attempt: ModelAttempt, context: AttemptContext): void {
    if (this.#chain !== undefined) this.#attemptSpan(attempt, context, this.#chain.context);
    else if (attempt.outcome === "failure") {
      this.#flushHeld();
      this.#held = { attempt, context };
    } else this.#attemptSpan(attempt, context, this.#prompt?.context);
  }

  /** A run's `agent_end`: with `willRetry` a chain follows (opened here, its first attempt the held one). */
  agentEnd(willRetry: boolean): void {
    if (!willRetry || this.#chain !== undefined) {
      this.#flushHeld();
      return;
    }
    const held = this.#held;
    this.#held = undefined;
    const { trace, SpanKind, ROOT_CONTEXT } = this.#otel;
    const base = this.#prompt?.context ?? ROOT_CONTEXT;
    const provider = held?.attempt.provider ?? "";
    const span = this.#tracer.startSpan(
      "lifeline.retry_chain",
      {
        kind: SpanKind.INTERNAL,
        startTime: held?.attempt.startMs ?? Date.now(),
        attributes: { "gen_ai.provider.name": provider },
      },
      base,
    );
    this.#chain = { span, context: trace.setSpan(base, span), provider };
    if (held !== undefined) this.#attemptSpan(held.attempt, held.context, this.#chain.context);
  }

  /** `auto_retry_end`: the chain's span ends with how it ended. */
  chainEnded(reason: string, retries: number, success: boolean): void {
    this.#flushHeld();
    const chain = this.#chain;
    this.#chain = undefined;
    if (chain === undefined) return;
    chain.span.setAttributes({ "lifeline.retry.end_reason": reason, "lifeline.retry.attempts": retries });
    if (!success) chain.span.setStatus({ code: this.#otel.SpanStatusCode.ERROR, message: reason });
    chain.span.end();
  }

  /** A tool starts in the worker. */
  toolStart(toolCallId: string, toolName: string): void {
    const span = this.#tracer.startSpan(
      `execute_tool ${toolName}`,
      {
        kind: this.#otel.SpanKind.INTERNAL,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": toolName,
          "gen_ai.tool.call.id": toolCallId,
        },
      },
      this.#prompt?.context ?? this.#otel.ROOT_CONTEXT,
    );
    this.#tools.set(toolCallId, span);
  }

  /** A tool ended; `isError` when it reported an error. */
  toolEnd(toolCallId: string, isError: boolean): void {
    const span = this.#tools.get(toolCallId);
    if (span === undefined) return;
    this.#tools.delete(toolCallId);
    if (isError) {
      span.setAttribute("error.type", "tool_error");
      span.setStatus({ code: this.#otel.SpanStatusCode.ERROR });
    }
    span.end();
  }

  /** `agent_settled`: the prompt's span ends with its outcome. */
  settled(event: AgentSettledEvent): void {
    this.#prompt?.span.setAttribute("lifeline.prompt.retries", event.retries);
    this.#endPrompt(event.stopReason, event.stopReason === "error" ? (event.errorMessage ?? "error") : undefined);
  }

  /** The session closed (disposed, or given up): whatever is open ends, marked as cut off. */
  close(reason: string, error: boolean): void {
    this.#endPrompt(reason, error ? reason : undefined);
  }

  #endPrompt(stopReason: string, error: string | undefined): void {
    this.#flushHeld();
    if (this.#chain !== undefined) this.chainEnded("cancelled", 0, false);
    for (const span of this.#tools.values()) span.end();
    this.#tools.clear();
    const prompt = this.#prompt;
    this.#prompt = undefined;
    if (prompt === undefined) return;
    prompt.span.setAttribute("lifeline.prompt.stop_reason", stopReason);
    if (error !== undefined) prompt.span.setStatus({ code: this.#otel.SpanStatusCode.ERROR, message: error });
    prompt.span.end();
  }

  #flushHeld(): void {
    const held = this.#held;
    this.#held = undefined;
    if (held !== undefined) this.#attemptSpan(held.attempt, held.context, this.#prompt?.context);
  }

  /**
   * The `chat {model}` span of one request, made and ended at once with the request's own times.
   * Only the attributes a sampler may decide on are given at its start (the GenAI conventions'
   * operation, provider and model, one set per model); the rest are set only on a span that records,
   * so a sampler that drops the span costs no attribute work.
   */
  #attemptSpan(attempt: ModelAttempt, context: AttemptContext, parent: Context | undefined): void {
    let start = this.#startAttributes;
    if (start["gen_ai.provider.name"] !== attempt.provider || start["gen_ai.request.model"] !== attempt.model) {
      start = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": attempt.provider,
        "gen_ai.request.model": attempt.model,
      };
      this.#startAttributes = start;
    }
    const span = this.#tracer.startSpan(
      `chat ${attempt.model}`,
      { kind: this.#otel.SpanKind.CLIENT, startTime: attempt.startMs, attributes: start },
      parent ?? this.#otel.ROOT_CONTEXT,
    );
    if (span.isRecording()) {
      span.setAttribute("gen_ai.response.finish_reasons", [attempt.stopReason]);
      span.setAttribute("lifeline.retry.attempt", context.retry);
      span.setAttribute("lifeline.attempt.outcome", attempt.outcome);
      span.setAttribute("lifeline.retry_class", attempt.retryClass);
      if (attempt.inputTokens > 0 || attempt.outputTokens > 0) {
        span.setAttribute("gen_ai.usage.input_tokens", attempt.inputTokens);
        span.setAttribute("gen_ai.usage.output_tokens", attempt.outputTokens);
      }
      if (attempt.errorType !== undefined) span.setAttribute("error.type", attempt.errorType);
      if (attempt.retryHintMs !== undefined) span.setAttribute("lifeline.retry.hint", attempt.retryHintMs / 1000);
      if (context.delayMs !== undefined) span.setAttribute("lifeline.retry.delay", context.delayMs / 1000);
      if (context.hintHonoured !== undefined) span.setAttribute("lifeline.retry.hint_honoured", context.hintHonoured);
      if (context.firstChunkMs !== undefined) {
        span.setAttribute(
          "gen_ai.client.operation.time_to_first_chunk",
          (context.firstChunkMs - attempt.startMs) / 1000,
        );
      }
      if (context.output !== undefined) span.setAttribute("gen_ai.output.messages", context.output);
      if (attempt.outcome === "failure") {
        span.setStatus({ code: this.#otel.SpanStatusCode.ERROR, message: attempt.errorType ?? "error" });
      }
    }
    span.end(attempt.endMs);
  }
}
