/**
 * One model request (an attempt) as telemetry records it, read from the assistant message that
 * ended it: who served it, how it ended, and the error class and retry class of a failure. Pure:
 * the classification is the retry controller's own (B2), so a metric never disagrees with a
 * decision.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { explainMessage, isRateLimit, retryHintsOf } from "../../shared/failures/classify.js";
import { requestFailureOf, workerExitOf } from "../../shared/failures/request-failure.js";

/**
 * How an attempt's reply is treated, as a metric attribute (`lifeline.retry_class`): `none` for a
 * success; `rate_limit` and `transient` are the two kinds of retryable failure (R2, R4).
 */
type RetryClass = "none" | "aborted" | "overflow" | "usage_limit" | "rate_limit" | "transient" | "fatal";

/** What telemetry keeps of one attempt. */
export interface ModelAttempt {
  provider: string;
  model: string;
  /** Epoch ms when the request started in the worker (the reply's own timestamp). */
  startMs: number;
  /** Epoch ms when its end reached the main thread. */
  endMs: number;
  stopReason: AssistantMessage["stopReason"];
  /** `success`, `failure` or `aborted` (`lifeline.attempt.outcome`). */
  outcome: "success" | "failure" | "aborted";
  retryClass: RetryClass;
  /**
   * GenAI's `error.type` of a failure: the HTTP status when there was one, else the provider's error
   * type, the transport's error code, `worker_<cause>` for a worker that died under it, or the
   * retry class. Low-cardinality by construction; never a message text.
   */
  errorType?: string;
  /** The server's retry hint, in ms, when the failure carried one. */
  retryHintMs?: number;
  /** Tokens as the provider reported them; input includes cached input. */
  inputTokens: number;
  outputTokens: number;
}

/** Reads the attempt that `message` ended, received at `now` (epoch ms). */
export function modelAttempt(message: AssistantMessage, now: number): ModelAttempt {
  const retryClass = retryClassOf(message);
  const attempt: ModelAttempt = {
    provider: message.provider,
    model: message.model,
    startMs: Math.min(message.timestamp, now),
    endMs: now,
    stopReason: message.stopReason,
    outcome: retryClass === "none" ? "success" : retryClass === "aborted" ? "aborted" : "failure",
    retryClass,
    inputTokens: message.usage.input + message.usage.cacheRead + message.usage.cacheWrite,
    outputTokens: message.usage.output,
  };
  if (attempt.outcome === "failure") {
    attempt.errorType = errorTypeOf(message, retryClass);
    const hint = retryHintsOf(message, now).retryAfterMs;
    if (hint !== undefined) attempt.retryHintMs = hint;
  }
  return attempt;
}

function retryClassOf(message: AssistantMessage): RetryClass {
  const failureClass = explainMessage(message).failureClass;
  switch (failureClass) {
    case "success":
      return "none";
    case "retryable":
      return isRateLimit(message) ? "rate_limit" : "transient";
    default:
      return failureClass;
  }
}

function errorTypeOf(message: AssistantMessage, retryClass: RetryClass): string {
  const exit = workerExitOf(message);
  if (exit !== undefined) return `worker_${exit.cause}`;
  const failure = requestFailureOf(message);
  if (failure?.status !== undefined && failure.inStream !== true) return String(failure.status);
  if (failure?.errorType !== undefined) return failure.errorType;
  if (failure?.network?.code !== undefined) return failure.network.code;
  return retryClass;
}
