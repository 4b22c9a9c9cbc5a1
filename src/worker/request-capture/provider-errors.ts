/**
 * What a provider's error says, read from its text (SPEC B2): the error type and code of an HTTP
 * error body, or of an error event inside an event stream that had already answered 200, and the
 * retry headers of an error response. The formats read are OpenAI's (chat completions and
 * Responses), Anthropic's and Google's; anything else yields the status alone, and the main
 * thread classifies the message text by R2's patterns.
 *
 * Pure functions of strings: no I/O, no clock. request-capture.ts feeds them what it saw on the
 * wire; test/worker/provider-errors.test.ts feeds them literal bodies.
 */
import { RETRY_HEADER_NAMES, type RequestFailure } from "../../shared/failures/request-failure.js";

/** Error bodies are short JSON; a larger one is not worth holding to find `error.type`. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** The provider's error type and code, as a {@link RequestFailure} keeps them. */
type ErrorKinds = Pick<RequestFailure, "errorType" | "errorCode">;

/** Header lookup by name, as `Headers.get` (which ignores the name's case). */
export interface HeaderLookup {
  get(name: string): string | null;
}

/**
 * The failure an HTTP error response records: its status, its retry headers (those of
 * {@link RETRY_HEADER_NAMES} present), and the error type and code its body names.
 *
 * @param body the body text; undefined when it was not read (declared longer than
 *   {@link MAX_ERROR_BODY_BYTES}, or it broke off). A body longer than that limit is ignored.
 */
export function errorResponseFailure(status: number, headers: HeaderLookup, body: string | undefined): RequestFailure {
  const failure: RequestFailure = { status };
  const kept: Record<string, string> = {};
  for (const name of RETRY_HEADER_NAMES) {
    const value = headers.get(name);
    if (value !== null) kept[name] = value;
  }
  if (Object.keys(kept).length > 0) failure.headers = kept;
  if (body !== undefined) Object.assign(failure, errorBodyKinds(body.length > MAX_ERROR_BODY_BYTES ? "" : body));
  return failure;
}

/**
 * The failure a stream that answered `status` records when its last error event can be read in
 * `events` (the end of the stream's text, as SSE): that event's type and code, marked `inStream`.
 * Undefined when no event there is an error event, such as an answer whose text says "error".
 */
export function inStreamFailure(status: number, events: string): RequestFailure | undefined {
  const kinds = lastErrorEventKinds(events);
  return kinds === undefined ? undefined : { status, ...kinds, inStream: true };
}

/**
 * The provider's error type and code from an error body: OpenAI `{error: {type, code}}`,
 * Anthropic `{type: "error", error: {type}}`, Google `{error: {status, code}}` (also as the first
 * element of an array).
 */
function errorBodyKinds(text: string): ErrorKinds {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return {};
  }
  const first: unknown = Array.isArray(body) ? body[0] : body;
  const inner = typeof first === "object" && first !== null && "error" in first ? first.error : undefined;
  if (typeof inner !== "object" || inner === null) return {};
  return kindsOf(inner);
}

/** The kinds of the last error event in `events`; the first event may be cut at its start. */
function lastErrorEventKinds(events: string): ErrorKinds | undefined {
  const parts = events.split(/\r?\n\r?\n|\r\r/);
  for (let index = parts.length - 1; index >= 0; index--) {
    const data = sseData(parts[index] ?? "");
    if (!data.includes("error")) continue;
    const kinds = streamErrorKinds(data);
    if (kinds !== undefined) return kinds;
  }
  return undefined;
}

/** The `data:` lines of one SSE event, joined as the SSE spec says. */
function sseData(event: string): string {
  const lines: string[] = [];
  for (const line of event.split(/\r?\n|\r/)) {
    if (line.startsWith("data:")) lines.push(line.slice(line.startsWith("data: ") ? 6 : 5));
  }
  return lines.join("\n");
}

/**
 * The type and code of an error event: an `{error: {…}}` object (OpenAI chat completions,
 * Anthropic `{type: "error", error: {type}}`, Google), OpenAI Responses' `{type: "error", code}`
 * and `{type: "response.failed", response: {error: {code}}}`. Undefined for anything else, such
 * as a content chunk whose text says "error".
 */
function streamErrorKinds(data: string): ErrorKinds | undefined {
  let event: unknown;
  try {
    event = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof event !== "object" || event === null) return undefined;
  const error = "error" in event ? event.error : undefined;
  const type = "type" in event ? event.type : undefined;
  if (typeof error === "object" && error !== null) return kindsOf(error);
  if (type === "error") {
    const code = "code" in event ? event.code : undefined;
    return typeof code === "string" ? { errorCode: code } : {};
  }
  if (type === "response.failed") {
    const response = "response" in event ? event.response : undefined;
    const failed =
      typeof response === "object" && response !== null && "error" in response ? response.error : undefined;
    return typeof failed === "object" && failed !== null ? kindsOf(failed) : {};
  }
  return undefined;
}

/**
 * `type` (Google: `status`) and `code` of a provider's error object. A numeric code (Google,
 * OpenRouter's in-stream errors) is kept as its digits: it is an HTTP status.
 */
function kindsOf(error: object): ErrorKinds {
  const type = "type" in error ? error.type : undefined;
  const code = "code" in error ? error.code : undefined;
  const status = "status" in error ? error.status : undefined;
  const kinds: ErrorKinds = {};
  const errorType = typeof type === "string" ? type : typeof status === "string" ? status : undefined;
  if (errorType !== undefined) kinds.errorType = errorType;
  if (typeof code === "string") kinds.errorCode = code;
  else if (typeof code === "number" && Number.isInteger(code)) kinds.errorCode = String(code);
  return kinds;
}
