/**
 * What a failed model request exposed (SPEC B2, X6), as plain data.
 *
 * pi-ai reduces every provider failure to `errorMessage` text: the HTTP status, the provider's
 * error type and the retry headers are gone by the time the assistant message exists. The worker
 * therefore watches the request itself (request-capture.ts) and attaches what it saw to the failed
 * assistant message as one entry of pi-ai's `diagnostics` list. That entry travels with the message
 * (events, run tails, history) like any other field, so the main thread's classifier reads it
 * without a second channel, and it survives persistence and restore.
 */

/** `type` of the diagnostics entry that carries a {@link RequestFailure}. */
export const REQUEST_FAILURE_DIAGNOSTIC = "lifeline_request_failure";

/** Headers a failure keeps: the retry hints and the server's own retry advice. */
export const RETRY_HEADER_NAMES = [
  "retry-after-ms",
  "retry-after",
  "x-ratelimit-reset-ms",
  "x-ratelimit-reset",
  "x-should-retry",
] as const;

/** A failed model request as the worker saw it. Every field is optional: providers differ. */
export interface RequestFailure {
  /** HTTP status of the response, when one arrived (a 200 whose stream later broke included). */
  status?: number;
  /** The provider's error type: OpenAI/Anthropic `error.type`, Google `error.status`. */
  errorType?: string;
  /** The provider's error code: OpenAI `error.code` (e.g. "context_length_exceeded"). */
  errorCode?: string;
  /**
   * True when the error arrived as an event inside a stream that had already answered `status`
   * (OpenAI's `{"error": …}` chunk, Anthropic's `event: error`): the status says nothing then,
   * and `errorType`/`errorCode` are the event's.
   */
  inStream?: true;
  /** Retry headers of the failed response, names lower-cased (see {@link RETRY_HEADER_NAMES}). */
  headers?: Record<string, string>;
  /**
   * A transport failure: `request` when no response arrived (refused, reset, DNS, timeout),
   * `body` when the response started and its body broke off.
   */
  network?: { phase: "request" | "body"; code?: string; message: string; origin?: string };
}

/** The structural slice of pi-ai's `AssistantMessage.diagnostics` this module reads and writes. */
export interface WithDiagnostics {
  diagnostics?: Array<{ type: string; timestamp: number; details?: Record<string, unknown> }> | undefined;
}

/** The request failure attached to `message`, if the worker recorded one. */
export function requestFailureOf(message: WithDiagnostics): RequestFailure | undefined {
  const entry = message.diagnostics?.find((diagnostic) => diagnostic.type === REQUEST_FAILURE_DIAGNOSTIC);
  return entry?.details as RequestFailure | undefined;
}

/** Attaches `failure` to `message` (replacing an earlier one), in place. Worker side. */
export function attachRequestFailure(message: WithDiagnostics, failure: RequestFailure, now: number): void {
  const others = (message.diagnostics ?? []).filter((diagnostic) => diagnostic.type !== REQUEST_FAILURE_DIAGNOSTIC);
  message.diagnostics = [
    ...others,
    { type: REQUEST_FAILURE_DIAGNOSTIC, timestamp: now, details: failure as Record<string, unknown> },
  ];
}

/**
 * `type` of the diagnostics entry that marks a reply the main thread wrote for a run its worker
 * did not survive (SPEC X7). Its `details` are `{ cause }`; such a reply is a transient failure.
 */
export const WORKER_EXIT_DIAGNOSTIC = "lifeline_worker_exit";

/** The worker's fate recorded on a reply interrupted by its worker's death, if it was one. */
export function workerExitOf(message: WithDiagnostics): { cause: string } | undefined {
  const entry = message.diagnostics?.find((diagnostic) => diagnostic.type === WORKER_EXIT_DIAGNOSTIC);
  return entry?.details as { cause: string } | undefined;
}

/**
 * `type` of the diagnostics entry that marks a failed reply as a context overflow (SPEC R1), set
 * in the worker with pi-ai's `isContextOverflow` (its provider-specific overflow texts and the
 * model's context window). The main thread's classifier reads the mark, so it never loads pi-ai.
 * No `details`.
 */
const CONTEXT_OVERFLOW_DIAGNOSTIC = "lifeline_context_overflow";

/** Whether the worker marked `message` as a context overflow. */
export function isMarkedOverflow(message: WithDiagnostics): boolean {
  return message.diagnostics?.some((diagnostic) => diagnostic.type === CONTEXT_OVERFLOW_DIAGNOSTIC) === true;
}

/** Marks `message` as a context overflow, in place, once. Worker side. */
export function markOverflow(message: WithDiagnostics, now: number): void {
  if (isMarkedOverflow(message)) return;
  message.diagnostics = [...(message.diagnostics ?? []), { type: CONTEXT_OVERFLOW_DIAGNOSTIC, timestamp: now }];
}
