/**
 * Records what a session's model requests exposed (SPEC B2, X6): the status, the provider's error
 * type and code, the retry headers, or the transport failure.
 *
 * pi-ai catches every provider error and keeps only its message, so the structured facts have to
 * be taken on the way past. The official SDKs (openai, @anthropic-ai/sdk, @google/genai) all call
 * the global `fetch`, and pi-ai builds a fresh client for each request, so the worker wraps
 * `globalThis.fetch` once and routes each call to the session that made it with an
 * AsyncLocalStorage: the provider's request starts inside {@link RequestCapture.run}, and every
 * await below it inherits the store. Calls made outside a capture (a tool's own fetch, say) pass
 * straight through, unobserved.
 *
 * Providers that do not use fetch (Bedrock's AWS SDK) record nothing; their failures are
 * classified from the text (R2).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { RETRY_HEADER_NAMES, type RequestFailure } from "../shared/request-failure.js";

const captures = new AsyncLocalStorage<RequestCapture>();
let installed = false;

/** Error bodies are short JSON; a larger one is not worth holding to find `error.type`. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * Wraps `globalThis.fetch` once per worker. Idempotent. The wrapper adds no work to a call made
 * outside a capture, and for a captured call one clone of an error body, or one pass-through
 * stream for an event stream (to see it break).
 */
export function installRequestCapture(): void {
  if (installed) return;
  installed = true;
  const original = globalThis.fetch;
  globalThis.fetch = async function capturingFetch(input, init) {
    const capture = captures.getStore();
    if (capture === undefined) return original(input, init);
    capture.begin();
    let response: Response;
    try {
      response = await original(input, init);
    } catch (error) {
      capture.networkFailure("request", error, undefined, originOf(input));
      throw error;
    }
    return capture.observe(response);
  };
}

/**
 * One session's record of its latest model request. The session starts each request inside
 * {@link run}; when the reply ends in an error, {@link failure} says what the request exposed.
 * A session has at most one request in flight, so "latest" is unambiguous.
 */
export class RequestCapture {
  readonly #idleTimeoutMs: number;
  #failure: RequestFailure | undefined;
  /** Counts HTTP requests, so a stream of an earlier one that ends late records nothing. */
  #request = 0;
  /** Ends the watch of the latest request's event stream, if one is still open. */
  #endStream: (() => void) | undefined;

  /**
   * @param idleTimeoutMs `retry.provider.idleTimeoutMs`: an event stream that delivers no bytes for
   *   this long is cut here and fails as a transient network failure (`ERR_STREAM_IDLE`); 0: never.
   */
  constructor(idleTimeoutMs = 0) {
    this.#idleTimeoutMs = idleTimeoutMs;
  }

  /** Runs `fn` (which starts the provider's request) with fetch calls recorded here. */
  run<T>(fn: () => T): T {
    this.begin();
    return captures.run(this, fn);
  }

  /**
   * What the latest request exposed, if it failed in a way fetch could see. Called once the reply
   * has failed: an event stream still open then is over for its consumer (the SDKs throw on an
   * error event before their cancel reaches the body), so it is read for its error event now.
   */
  failure(): RequestFailure | undefined {
    this.#endStream?.();
    return this.#failure;
  }

  /** @internal A new HTTP request of the same model call (an SDK retry) replaces the record. */
  begin(): void {
    this.#request++;
    this.#failure = undefined;
    this.#endStream = undefined;
  }

  /** @internal */
  networkFailure(phase: "request" | "body", error: unknown, status?: number, origin?: string): void {
    const network: NonNullable<RequestFailure["network"]> = { phase, ...describeNetworkError(error) };
    if (origin !== undefined) network.origin = origin;
    const failure: RequestFailure = { network };
    if (status !== undefined) failure.status = status;
    this.#failure = failure;
  }

  /** @internal Records an error response before the SDK reads it; watches an event stream's body. */
  async observe(response: Response): Promise<Response> {
    if (response.status >= 400) {
      this.#failure = await describeErrorResponse(response);
      return response;
    }
    const type = response.headers.get("content-type") ?? "";
    if (response.body === null || !type.includes("text/event-stream")) return response;
    return this.#watchBody(response, response.body);
  }

  /**
   * A stream can fail after its 200 in two ways, and pi-ai reduces both to text:
   * - the connection breaks off (a bare "terminated"); the socket error code is only visible here;
   * - the provider sends an error event (OpenAI `data: {"error": …}`, Anthropic `event: error`),
   *   and the SDK throws, then cancels the body. The event's type and code decide its class (B2),
   *   so the copy keeps the last {@link STREAM_TAIL_BYTES} and reads them once, when the stream
   *   ends or {@link failure} is asked, whichever comes first: no per-chunk parsing, and nothing
   *   held once it has ended.
   *
   * The copy forwards chunks one for one and passes cancellation back, so an abort still closes
   * the connection (X3). A cancel by the consumer is not a network failure, and a read that
   * settles after it must not touch the controller (closing a cancelled stream throws).
   */
  #watchBody(response: Response, body: ReadableStream<Uint8Array>): Response {
    const reader = body.getReader();
    const status = response.status;
    const request = this.#request;
    const tail = new StreamTail();
    let ended = false;
    const end = (error?: unknown): void => {
      if (ended) return;
      ended = true;
      const inStream = tail.findError();
      if (request !== this.#request) return;
      this.#endStream = undefined;
      if (inStream !== undefined) this.#failure = { status, ...inStream, inStream: true };
      else if (error !== undefined && !isAbort(error)) this.networkFailure("body", error, status);
    };
    this.#endStream = end;
    // Set by the consumer's cancel: from then on the controller is closed and must not be used.
    let cancelled = false;
    const idle = new IdleWatch(this.#idleTimeoutMs, () => {
      // The provider went silent: fail the stream as a broken connection (transient, B2) and close
      // the socket. The pending read then settles against a cancelled reader and is ignored.
      if (cancelled || ended) return;
      cancelled = true;
      const error = idleError(this.#idleTimeoutMs);
      end(error);
      watchedController?.error(error);
      void reader.cancel(error).catch(() => {});
    });
    let watchedController: ReadableStreamDefaultController<Uint8Array> | undefined;
    const watched = new ReadableStream<Uint8Array>({
      start: (controller) => {
        watchedController = controller;
      },
      pull: async (controller) => {
        let result: Awaited<ReturnType<typeof reader.read>>;
        try {
          result = await reader.read();
        } catch (error) {
          if (cancelled) return;
          idle.stop();
          end(error);
          controller.error(error);
          return;
        }
        if (cancelled) return;
        if (result.done) {
          idle.stop();
          end();
          controller.close();
          return;
        }
        idle.touch();
        if (!ended) tail.push(result.value);
        controller.enqueue(result.value);
      },
      cancel: (reason) => {
        cancelled = true;
        idle.stop();
        end();
        return reader.cancel(reason);
      },
    });
    const copy = new Response(watched, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    // The SDKs read `url` for their error messages and logs; a constructed Response has none.
    Object.defineProperty(copy, "url", { value: response.url });
    return copy;
  }
}

/**
 * The stream-idle timeout of one response body. Costs one assignment per chunk: a single timer
 * fires after the timeout and, if a chunk came meanwhile, is armed again for the time left.
 */
class IdleWatch {
  readonly #timeoutMs: number;
  readonly #onIdle: () => void;
  #last = performance.now();
  #timer: NodeJS.Timeout | undefined;

  constructor(timeoutMs: number, onIdle: () => void) {
    this.#timeoutMs = timeoutMs;
    this.#onIdle = onIdle;
    if (timeoutMs > 0) this.#arm(timeoutMs);
  }

  touch(): void {
    this.#last = performance.now();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => {
      const left = this.#last + this.#timeoutMs - performance.now();
      if (left > 0) this.#arm(left);
      else this.#onIdle();
    }, ms);
    // A stalled stream must not be what keeps the worker alive; the run in flight does that.
    this.#timer.unref();
  }
}

/** The failure of a stream cut for silence; `code` is what the failure record keeps. */
function idleError(timeoutMs: number): Error {
  return Object.assign(
    new Error(
      `Stream idle timeout: the provider sent nothing for ${timeoutMs} ms (retry.provider.idleTimeoutMs); the connection was closed`,
    ),
    { code: "ERR_STREAM_IDLE" },
  );
}

/**
 * In-stream error events are short (a type, a code, a sentence); the last 8 KiB of a stream hold
 * one whole. Bounded so a long answer costs no more memory than a short one.
 */
const STREAM_TAIL_BYTES = 8 * 1024;
const ERROR_BYTES = Buffer.from("error");
const utf8 = new TextDecoder();

/**
 * The last bytes of an event stream. Holds references to the chunks already forwarded (a copy
 * only of an oversized chunk's end), and drops whole chunks from the front past the bound.
 */
class StreamTail {
  #chunks: Uint8Array[] = [];
  #bytes = 0;

  push(chunk: Uint8Array): void {
    const kept = chunk.byteLength > STREAM_TAIL_BYTES ? chunk.slice(-STREAM_TAIL_BYTES) : chunk;
    this.#chunks.push(kept);
    this.#bytes += kept.byteLength;
    let first = this.#chunks[0];
    while (first !== undefined && this.#chunks.length > 1 && this.#bytes - first.byteLength >= STREAM_TAIL_BYTES) {
      this.#chunks.shift();
      this.#bytes -= first.byteLength;
      first = this.#chunks[0];
    }
  }

  /**
   * The type and code of the last error event in the tail, if any; empties the tail. A tail
   * without the bytes `error` (every successful answer, nearly) is dropped without decoding.
   */
  findError(): Pick<RequestFailure, "errorType" | "errorCode"> | undefined {
    const bytes = Buffer.concat(this.#chunks, this.#bytes);
    this.#chunks = [];
    this.#bytes = 0;
    if (bytes.indexOf(ERROR_BYTES) === -1) return undefined;
    const events = utf8.decode(bytes).split(/\r?\n\r?\n|\r\r/);
    for (let index = events.length - 1; index >= 0; index--) {
      const data = sseData(events[index] ?? "");
      if (!data.includes("error")) continue;
      const kinds = streamErrorKinds(data);
      if (kinds !== undefined) return kinds;
    }
    return undefined;
  }
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
function streamErrorKinds(data: string): Pick<RequestFailure, "errorType" | "errorCode"> | undefined {
  let event: unknown;
  try {
    event = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof event !== "object" || event === null) return undefined;
  const { error, type, code, response } = event as {
    error?: unknown;
    type?: unknown;
    code?: unknown;
    response?: unknown;
  };
  if (typeof error === "object" && error !== null) return kindsOf(error);
  if (type === "error") return typeof code === "string" ? { errorCode: code } : {};
  if (type === "response.failed") {
    const failed = (response as { error?: unknown } | undefined)?.error;
    return typeof failed === "object" && failed !== null ? kindsOf(failed) : {};
  }
  return undefined;
}

async function describeErrorResponse(response: Response): Promise<RequestFailure> {
  const failure: RequestFailure = { status: response.status };
  const headers: Record<string, string> = {};
  for (const name of RETRY_HEADER_NAMES) {
    const value = response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  if (Object.keys(headers).length > 0) failure.headers = headers;
  const length = Number(response.headers.get("content-length") ?? "0");
  if (length > MAX_ERROR_BODY_BYTES) return failure;
  try {
    // A clone, so the SDK still reads the body itself and builds the error text it always has.
    const text = await response.clone().text();
    Object.assign(failure, errorKinds(text.length > MAX_ERROR_BODY_BYTES ? "" : text));
  } catch {
    // The body broke off: the status and headers are still worth having.
  }
  return failure;
}

/**
 * The provider's error type and code from an error body: OpenAI `{error: {type, code}}`,
 * Anthropic `{type: "error", error: {type}}`, Google `{error: {status, code}}`.
 */
function errorKinds(text: string): Pick<RequestFailure, "errorType" | "errorCode"> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return {};
  }
  const error = (Array.isArray(body) ? body[0] : body) as { error?: unknown } | undefined;
  const inner = error?.error;
  if (typeof inner !== "object" || inner === null) return {};
  return kindsOf(inner);
}

/**
 * `type` (Google: `status`) and `code` of a provider's error object. A numeric code (Google,
 * OpenRouter's in-stream errors) is kept as its digits: it is an HTTP status.
 */
function kindsOf(error: object): Pick<RequestFailure, "errorType" | "errorCode"> {
  const { type, code, status } = error as { type?: unknown; code?: unknown; status?: unknown };
  const kinds: Pick<RequestFailure, "errorType" | "errorCode"> = {};
  const errorType = typeof type === "string" ? type : typeof status === "string" ? status : undefined;
  if (errorType !== undefined) kinds.errorType = errorType;
  if (typeof code === "string") kinds.errorCode = code;
  else if (typeof code === "number" && Number.isInteger(code)) kinds.errorCode = String(code);
  return kinds;
}

function describeNetworkError(error: unknown): { code?: string; message: string } {
  // undici wraps the socket error: TypeError("fetch failed" | "terminated", { cause: { code } }).
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const own = error as { code?: unknown; name?: unknown; message?: unknown } | undefined;
  const code =
    typeof cause?.code === "string"
      ? cause.code
      : typeof own?.code === "string"
        ? own.code
        : own?.name === "TimeoutError" || own?.name === "AbortError"
          ? own.name
          : undefined;
  const text = typeof cause?.message === "string" ? cause.message : String(own?.message ?? error);
  return code === undefined ? { message: text } : { code, message: text };
}

/** Scheme, host and port only: a path or query may carry a key (Google's `?key=`). */
function originOf(input: string | URL | Request): string | undefined {
  try {
    return new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url).origin;
  } catch {
    return undefined;
  }
}

function isAbort(error: unknown): boolean {
  return (error as { name?: unknown } | undefined)?.name === "AbortError";
}
