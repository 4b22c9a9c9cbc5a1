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
  #failure: RequestFailure | undefined;

  /** Runs `fn` (which starts the provider's request) with fetch calls recorded here. */
  run<T>(fn: () => T): T {
    this.#failure = undefined;
    return captures.run(this, fn);
  }

  /** What the latest request exposed, if it failed in a way fetch could see. */
  failure(): RequestFailure | undefined {
    return this.#failure;
  }

  /** @internal A new HTTP request of the same model call (an SDK retry) replaces the record. */
  begin(): void {
    this.#failure = undefined;
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
   * A stream that breaks after the headers (a cut connection) surfaces in pi-ai as a bare
   * "terminated"; the cause code is only visible here. The copy forwards chunks one for one and
   * passes cancellation back, so an abort still closes the connection (X3).
   */
  #watchBody(response: Response, body: ReadableStream<Uint8Array>): Response {
    const reader = body.getReader();
    const status = response.status;
    const watched = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (error) {
          if (!isAbort(error)) this.networkFailure("body", error, status);
          controller.error(error);
        }
      },
      cancel: (reason) => reader.cancel(reason),
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
  const { type, code, status } = inner as { type?: unknown; code?: unknown; status?: unknown };
  const kinds: Pick<RequestFailure, "errorType" | "errorCode"> = {};
  const errorType = typeof type === "string" ? type : typeof status === "string" ? status : undefined;
  if (errorType !== undefined) kinds.errorType = errorType;
  if (typeof code === "string") kinds.errorCode = code;
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
