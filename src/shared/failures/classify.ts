/**
 * Failure classification (SPEC R1, R2, B2) and retry-hint parsing (R4 usage-limit step, B6).
 * Pure functions: no clock of their own, no I/O.
 */
import {
  isMarkedOverflow,
  type RequestFailure,
  requestFailureOf,
  type WithDiagnostics,
  workerExitOf,
} from "./request-failure.js";

/** The fields of an assistant message that classification reads. */
export interface ClassifiableMessage extends WithDiagnostics {
  stopReason: string;
  errorMessage?: string | undefined;
}

/**
 * How a finished run's last assistant message is treated.
 * - `success`: neither error nor aborted; ends a live chain with success (R5).
 * - `aborted`: stopReason "aborted"; never retried and never a retry success (B3).
 * - `overflow`: context overflow; never retried, compacted instead (R1).
 * - `usage_limit`: retryable, and the auth storage is told first (R4).
 * - `retryable`: a transient failure (R2, B2).
 * - `fatal`: an error that is not retryable.
 */
export type FailureClass = "success" | "aborted" | "overflow" | "usage_limit" | "retryable" | "fatal";

/** A class and the evidence it was decided on, for logs and docs/errors.md. */
export interface Classification {
  failureClass: FailureClass;
  /** What decided it, e.g. `status 503`, `x-should-retry: false`, `text matches /overloaded/i`. */
  basis: string;
}

// R2. Status-like numbers match only as whole tokens (B2): "1500 tokens" and "5030" are not 500/503.
const RETRYABLE_PATTERNS: readonly RegExp[] = [
  /overloaded/i,
  /rate[ _-]?limit/i,
  /usage[ _-]?limit/i,
  /too many requests/i,
  /(?<![\w.])(?:429|500|502|503|504)(?!\w|\.\d)/,
  /service[ _-]?unavailable/i,
  /server[ _-]?error/i,
  /internal[ _-]?error/i,
  /connection[ _-]?error/i,
  /fetch failed/i,
  /retry delay/i,
];

const USAGE_LIMIT_PATTERN = /usage[ _-]?limit/i;

/**
 * B2: statuses that mean "try again later". R2's 429/500/502/503/504, plus 408 (request timeout)
 * and 529 (Anthropic's "overloaded"), which the official SDKs also retry.
 */
const RETRYABLE_STATUSES = new Set([408, 429, 500, 502, 503, 504, 529]);

/** Provider error types and codes that mean an exhausted quota rather than a burst limit. */
const USAGE_LIMIT_KINDS = new Set(["usage_limit_reached", "insufficient_quota", "usage_limit_exceeded"]);
const OVERFLOW_KINDS = new Set(["context_length_exceeded", "request_too_large", "string_above_max_length"]);

/**
 * Transient error types that providers send inside a stream that had already answered 200
 * (Anthropic's `event: error`, OpenAI's in-stream `error` object): the status cannot classify those.
 */
const TRANSIENT_KINDS = new Set([
  "overloaded_error",
  "api_error",
  "rate_limit_error",
  "server_error",
  "rate_limit_exceeded",
  "UNAVAILABLE",
  "RESOURCE_EXHAUSTED",
  "INTERNAL",
]);

/** True for a stop reason that ends a reply without an answer: "error" or "aborted". */
export function isFailedStop(stopReason: string): boolean {
  return stopReason === "error" || stopReason === "aborted";
}

/**
 * R4: whether `message` is what a retry removes from the end of the runtime transcript, an
 * assistant reply that ended in an error. The worker's transcript and the main thread's mirror
 * both apply this rule, so they stay the same.
 */
export function isRemovableFailure(message: { role: string; stopReason?: string } | undefined): boolean {
  return message?.role === "assistant" && message.stopReason === "error";
}

/**
 * Classifies a run's last assistant message.
 * @param isOverflow a further context-overflow test, besides the mark the worker sets with pi-ai's
 *   `isContextOverflow` (request-failure.ts): for a message that never passed through a worker.
 *   Injected so this module stays free of provider code and the shared zone imports nothing heavy.
 */
export function classifyMessage(
  message: ClassifiableMessage,
  isOverflow?: (message: ClassifiableMessage) => boolean,
): FailureClass {
  return explainMessage(message, isOverflow).failureClass;
}

/**
 * {@link classifyMessage} with its evidence. Order: aborted and success first; then context
 * overflow (R1: never retried, whatever the status says); then usage limits (R4); then, B2, the
 * structured data the worker recorded (server advice, HTTP status, provider error type, transport
 * failure); and last the R2 patterns on the text, for providers that expose nothing else.
 */
export function explainMessage(
  message: ClassifiableMessage,
  isOverflow?: (message: ClassifiableMessage) => boolean,
): Classification {
  if (message.stopReason === "aborted") return { failureClass: "aborted", basis: "stopReason aborted" };
  if (!isFailedStop(message.stopReason)) return { failureClass: "success", basis: `stopReason ${message.stopReason}` };
  // X7: the run's worker died under it; the run is retried like any transient failure.
  const exit = workerExitOf(message);
  if (exit !== undefined) return { failureClass: "retryable", basis: `worker ${exit.cause}` };
  const text = message.errorMessage;
  if (text === undefined || text === "") return { failureClass: "fatal", basis: "no errorMessage" };
  const failure = requestFailureOf(message);
  const kinds = [failure?.errorType, failure?.errorCode].filter((kind): kind is string => kind !== undefined);
  const overflowKind = kinds.find((kind) => OVERFLOW_KINDS.has(kind));
  if (overflowKind !== undefined) return { failureClass: "overflow", basis: `error ${overflowKind}` };
  if (failure?.status === 413) return { failureClass: "overflow", basis: "status 413" };
  if (isMarkedOverflow(message)) return { failureClass: "overflow", basis: "context-overflow text" };
  if (isOverflow?.(message) === true) return { failureClass: "overflow", basis: "context-overflow text" };
  const usageKind = kinds.find((kind) => USAGE_LIMIT_KINDS.has(kind));
  if (usageKind !== undefined) return { failureClass: "usage_limit", basis: `error ${usageKind}` };
  if (USAGE_LIMIT_PATTERN.test(text))
    return { failureClass: "usage_limit", basis: `text matches ${USAGE_LIMIT_PATTERN}` };
  if (failure !== undefined) {
    const structured = explainRequestFailure(failure, kinds);
    if (structured !== undefined) return structured;
  }
  const pattern = RETRYABLE_PATTERNS.find((candidate) => candidate.test(text));
  return pattern === undefined
    ? { failureClass: "fatal", basis: "text matches no R2 pattern" }
    : { failureClass: "retryable", basis: `text matches ${pattern}` };
}

/**
 * R4: whether a retryable failure is a burst rate limit (a 429, a rate-limit error type, or the
 * words in the text), which an auth storage with another key can route around. Usage limits are
 * classed `usage_limit` and are not asked about here.
 */
export function isRateLimit(message: ClassifiableMessage): boolean {
  const failure = requestFailureOf(message);
  if (failure?.status === 429) return true;
  if (
    [failure?.errorType, failure?.errorCode].some(
      (kind) => kind === "rate_limit_error" || kind === "rate_limit_exceeded",
    )
  )
    return true;
  return /rate[ _-]?limit|too many requests/i.test(message.errorMessage ?? "");
}

/** B2 on the structured record alone; undefined when it says nothing either way. */
function explainRequestFailure(failure: RequestFailure, kinds: readonly string[]): Classification | undefined {
  const advice = failure.headers?.["x-should-retry"];
  if (advice === "true") return { failureClass: "retryable", basis: "x-should-retry: true" };
  if (advice === "false") return { failureClass: "fatal", basis: "x-should-retry: false" };
  const status = failure.status;
  if (status !== undefined && status >= 400) {
    return RETRYABLE_STATUSES.has(status)
      ? { failureClass: "retryable", basis: `status ${status}` }
      : { failureClass: "fatal", basis: `status ${status}` };
  }
  if (failure.inStream === true) {
    const inStream = explainInStream(kinds);
    if (inStream !== undefined) return inStream;
  } else {
    const transient = kinds.find((kind) => TRANSIENT_KINDS.has(kind));
    if (transient !== undefined) return { failureClass: "retryable", basis: `error ${transient}` };
  }
  if (failure.network !== undefined) {
    const code = failure.network.code === undefined ? "" : ` ${failure.network.code}`;
    const where = failure.network.phase === "body" ? "stream broke off" : "no response";
    return { failureClass: "retryable", basis: `network${code} (${where})` };
  }
  return undefined;
}

/**
 * B2 for an error event inside a 200 stream: its type or code plays the part of the status. A
 * transient type, or a numeric code that is a retryable status (OpenRouter's in-stream
 * `{"code": 502}`), is retryable; any other type or code (`invalid_request_error`, a content-policy
 * code) is the provider refusing this request, so it is fatal, whatever the text says.
 */
function explainInStream(kinds: readonly string[]): Classification | undefined {
  const transient = kinds.find((kind) => TRANSIENT_KINDS.has(kind));
  if (transient !== undefined) return { failureClass: "retryable", basis: `error ${transient} in stream` };
  const status = kinds.find((kind) => /^[1-5]\d\d$/.test(kind));
  if (status !== undefined && RETRYABLE_STATUSES.has(Number(status))) {
    return { failureClass: "retryable", basis: `error ${status} in stream` };
  }
  const refusal = kinds[kinds.length - 1];
  return refusal === undefined ? undefined : { failureClass: "fatal", basis: `error ${refusal} in stream` };
}

/** Retry hints found in headers or error text, normalised to a delay from `now`. */
export interface RetryHints {
  retryAfterMs?: number;
}

const HINT_KEYS = ["retry-after-ms", "retry-after", "x-ratelimit-reset-ms", "x-ratelimit-reset"] as const;
type HintKey = (typeof HINT_KEYS)[number];

/**
 * Reads the server's retry hint, in priority order `retry-after-ms`, `retry-after` (seconds or
 * HTTP date), `x-ratelimit-reset-ms`, `x-ratelimit-reset` (seconds, epoch seconds or a duration
 * such as `6m0s`). Header names are case-insensitive.
 * @param now epoch milliseconds, used for HTTP dates and epoch resets.
 */
export function parseRetryHeaders(headers: Readonly<Record<string, string>>, now: number): RetryHints {
  const lower = new Map<string, string>();
  for (const [key, value] of Object.entries(headers)) lower.set(key.toLowerCase(), value);
  for (const key of HINT_KEYS) {
    const raw = lower.get(key);
    if (raw === undefined) continue;
    const ms = hintToMs(key, raw.trim(), now);
    if (ms !== undefined) return { retryAfterMs: ms };
  }
  return {};
}

/**
 * B6: the server's retry hint for a failed message: from the headers the worker recorded when
 * there are any (B2), else from `name: value` hints in the error text.
 */
export function retryHintsOf(message: ClassifiableMessage, now: number): RetryHints {
  const headers = requestFailureOf(message)?.headers;
  if (headers !== undefined) {
    const hints = parseRetryHeaders(headers, now);
    if (hints.retryAfterMs !== undefined) return hints;
  }
  return parseRetryHintsFromText(message.errorMessage ?? "", now);
}

/**
 * Finds `name: value` or `name=value` retry hints inside an error message, for providers that
 * only report text. Same priority and formats as {@link parseRetryHeaders}.
 */
export function parseRetryHintsFromText(text: string, now: number): RetryHints {
  const found: Record<string, string> = {};
  // A value is a number or Go-style duration, or an HTTP date (which contains a comma).
  const pattern =
    /\b(retry-after-ms|retry-after|x-ratelimit-reset-ms|x-ratelimit-reset)"?\s*[:=]\s*"?((?:\d+(?:\.\d+)?(?:ms|h|m|s)?)+|[A-Z][a-z]{2}, \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT)/gi;
  for (const match of text.matchAll(pattern)) {
    const key = match[1]?.toLowerCase();
    const value = match[2];
    if (key !== undefined && value !== undefined && found[key] === undefined) found[key] = value;
  }
  return parseRetryHeaders(found, now);
}

function hintToMs(key: HintKey, raw: string, now: number): number | undefined {
  switch (key) {
    case "retry-after-ms":
    case "x-ratelimit-reset-ms":
      return nonNegative(Number(raw));
    case "retry-after": {
      if (/^\d+(\.\d+)?$/.test(raw)) return nonNegative(Number(raw) * 1000);
      const date = Date.parse(raw);
      return Number.isNaN(date) ? undefined : Math.max(0, date - now);
    }
    case "x-ratelimit-reset": {
      if (/^\d+(\.\d+)?$/.test(raw)) {
        const seconds = Number(raw);
        // Large values are epoch seconds (GitHub style); small ones are seconds from now.
        return seconds > 1e9 ? Math.max(0, seconds * 1000 - now) : nonNegative(seconds * 1000);
      }
      return parseDuration(raw);
    }
    default: {
      const unreachable: never = key;
      return unreachable;
    }
  }
}

/** Parses Go-style durations as OpenAI sends them: `1s`, `6m0s`, `250ms`, `1h2m`. */
function parseDuration(raw: string): number | undefined {
  const pattern = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let total = 0;
  let consumed = 0;
  for (const match of raw.matchAll(pattern)) {
    const amount = Number(match[1]);
    const unit = match[2];
    total += amount * (unit === "h" ? 3_600_000 : unit === "m" ? 60_000 : unit === "s" ? 1000 : 1);
    consumed += match[0].length;
  }
  return consumed > 0 && consumed === raw.length ? Math.round(total) : undefined;
}

function nonNegative(value: number): number | undefined {
  return Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
}
