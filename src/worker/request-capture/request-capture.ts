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
 * The storage is enabled only while some model call may still reach fetch. On Node 20 an enabled
 * AsyncLocalStorage runs async hooks on every promise of the thread (init, before, after), and a
 * streaming worker makes several promises per SSE chunk; kept on, the hooks were about a tenth of
 * the worker's CPU in bench (o). A call's window closes when its request has gone out (the only
 * moment the store is read), or when the call ends without one; with the SDK's own retries on
 * (`retry.provider.maxRetries` > 0) it stays open until the call ends, since a retry fetches again.
 * When no window is open the storage is disabled, and the next call's `run` enables it again.
 *
 * Providers that do not use fetch (Bedrock's AWS SDK) record nothing; their failures are
 * classified from the text (R2).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { RequestFailure } from "../../shared/failures/request-failure.js";
import { watchEventStream } from "./event-stream-watch.js";
import { isAbort, networkFailure, originOf } from "./network-failure.js";
import { errorResponseFailure, inStreamFailure, MAX_ERROR_BODY_BYTES } from "./provider-errors.js";
import { RequestTimer } from "./request-timer.js";

const captures = new AsyncLocalStorage<RequestCapture>();
let installed = false;
/** Model calls whose window is open (see the file comment); the storage is disabled at 0. */
let openWindows = 0;

/** Opens a call's window; the returned function closes it, once, whoever calls it first. */
function openWindow(): () => void {
  openWindows++;
  let open = true;
  return () => {
    if (!open) return;
    open = false;
    openWindows--;
    if (openWindows === 0) captures.disable();
  };
}

/**
 * Wraps `globalThis.fetch` once per worker. Idempotent. The wrapper adds no work to a call made
 * outside a capture, and for a captured call one read and replay of an error body, or one pass-through
 * stream for an event stream (to see it break), and one AbortController (see
 * {@link RequestCapture.deferTeardown}).
 */
export function installRequestCapture(): void {
  if (installed) return;
  installed = true;
  const original = globalThis.fetch;
  globalThis.fetch = async function capturingFetch(input, init) {
    // A store without an open window is stale: a tool's fetch in a callback that inherited it.
    const capture = captures.getStore();
    if (capture === undefined || !capture.awaitingFetch) return original(input, init);
    capture.sending();
    capture.begin();
    capture.timer.fetching();
    const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
    let response: Response;
    try {
      const deferred = signal === undefined ? undefined : capture.deferTeardown(signal);
      response = await original(input, deferred === undefined ? init : { ...init, signal: deferred });
    } catch (error) {
      capture.networkFailure("request", error, undefined, originOf(input));
      throw error;
    }
    capture.timer.responded();
    return capture.observe(response, signal);
  };
}

/**
 * One session's record of its latest model request. The session starts each request inside
 * {@link run}; when the reply ends in an error, {@link failure} says what the request exposed.
 * A session has at most one request in flight, so "latest" is unambiguous.
 */
export class RequestCapture {
  /** When the latest model request's moments happened (request-timer.ts); the session stamps its deltas on it. */
  readonly timer = new RequestTimer();
  readonly #idleTimeoutMs: number;
  /** The SDK may fetch again within one call: the window stays open until the call ends. */
  readonly #sdkRetries: boolean;
  /** Closes the current call's window; undefined when none is open. */
  #closeWindow: (() => void) | undefined;
  #failure: RequestFailure | undefined;
  /** Counts HTTP requests, so a stream of an earlier one that ends late records nothing. */
  #request = 0;
  /** Ends the watch of the latest request's event stream, if one is still open. */
  #endStream: (() => void) | undefined;
  /** Aborts the fetch of an aborted request whose teardown is deferred ({@link deferTeardown}). */
  #teardown: (() => void) | undefined;

  /**
   * @param idleTimeoutMs `retry.provider.idleTimeoutMs`: an event stream that delivers no bytes for
   *   this long is cut here and fails as a transient network failure (`ERR_STREAM_IDLE`); 0: never.
   * @param sdkRetries `retry.provider.maxRetries` > 0: one model call may make several requests.
   */
  constructor(idleTimeoutMs = 0, sdkRetries = false) {
    this.#idleTimeoutMs = idleTimeoutMs;
    this.#sdkRetries = sdkRetries;
  }

  /**
   * Runs `fn`, which starts the provider's request and returns the call's event stream, with its
   * fetch calls recorded here. The call's window (file comment) closes when the request goes out,
   * or when the stream's result settles, whichever is first.
   */
  run<T extends { result(): Promise<unknown> }>(fn: () => T): T {
    this.begin();
    this.timer.call();
    this.#closeWindow?.();
    const closeWindow = openWindow();
    const close = () => {
      closeWindow();
      if (this.#closeWindow === close) this.#closeWindow = undefined;
    };
    this.#closeWindow = close;
    let stream: T;
    try {
      stream = captures.run(this, fn);
    } catch (error) {
      close();
      throw error;
    }
    stream.result().then(close, close);
    return stream;
  }

  /** @internal Whether the current call may still fetch: a capture is recorded only then. */
  get awaitingFetch(): boolean {
    return this.#closeWindow !== undefined;
  }

  /** @internal The call's request is going out: its window closes, unless the SDK may retry. */
  sending(): void {
    if (!this.#sdkRetries) this.#closeWindow?.();
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

  /**
   * @internal The signal the fetch itself gets in place of the request's `signal`: aborted with
   * the same reason, after the request's own abort, when the session has posted its run's end
   * ({@link tearDownAborted}) or on the next macrotask, whichever is first. Why: the fetch's abort
   * tears the connection down synchronously inside the abort's dispatch (its request, the socket,
   * stack traces for its errors: most of the worker's CPU between an `abort()` and the run's end,
   * section (l) of docs/performance.md), and the run's end waits for the microtasks after that
   * dispatch. Deferred, the abort's microtasks first fail the watched body (event-stream-watch.ts),
   * so the SDK's read rejects, the run ends and its `run_end` is posted; then the connection is
   * closed (X3). Undefined (the request's own signal will do) when it is already aborted.
   */
  deferTeardown(signal: AbortSignal): AbortSignal | undefined {
    if (signal.aborted) return undefined;
    const fetchAbort = new AbortController();
    const teardown = (): void => {
      if (this.#teardown === teardown) this.#teardown = undefined;
      if (!fetchAbort.signal.aborted) fetchAbort.abort(signal.reason);
    };
    signal.addEventListener(
      "abort",
      () => {
        this.#teardown = teardown;
        setImmediate(teardown);
      },
      { once: true },
    );
    return fetchAbort.signal;
  }

  /**
   * Tears the latest aborted request's connection down now, if its teardown is still deferred
   * ({@link deferTeardown}): the session calls it once its aborted run's end is posted.
   */
  tearDownAborted(): void {
    this.#teardown?.();
  }

  /** @internal Records a transport failure (see network-failure.ts). */
  networkFailure(phase: "request" | "body", error: unknown, status?: number, origin?: string): void {
    this.#failure = networkFailure(phase, error, status, origin);
  }

  /**
   * @internal Records an error response before the SDK reads it; watches an event stream's body.
   * @param signal the request's abort signal: an abort fails the watched body at once (event-stream-watch.ts).
   */
  async observe(response: Response, signal?: AbortSignal): Promise<Response> {
    if (response.status >= 400) {
      const read = await readErrorBody(response);
      this.#failure = errorResponseFailure(response.status, response.headers, read.text);
      return read.response;
    }
    const type = response.headers.get("content-type") ?? "";
    if (response.body === null || !type.includes("text/event-stream")) return response;
    return this.#watchBody(response, response.body, signal);
  }

  /**
   * A stream can fail after its 200 in two ways, and pi-ai reduces both to text:
   * - the connection breaks off (a bare "terminated"); the socket error code is only visible here;
   * - the provider sends an error event (OpenAI `data: {"error": …}`, Anthropic `event: error`),
   *   and the SDK throws, then cancels the body. The event's type and code decide its class (B2),
   *   so the copy keeps the stream's last bytes and reads them once, when the stream ends or
   *   {@link failure} is asked, whichever comes first: no per-chunk parsing, and nothing held once
   *   it has ended.
   */
  #watchBody(response: Response, body: ReadableStream<Uint8Array>, signal: AbortSignal | undefined): Response {
    const status = response.status;
    const request = this.#request;
    const watched = watchEventStream(
      response,
      body,
      this.#idleTimeoutMs,
      (tail, error) => {
        if (request !== this.#request) return;
        this.#endStream = undefined;
        const inStream = tail === undefined ? undefined : inStreamFailure(status, tail);
        if (inStream !== undefined) this.#failure = inStream;
        else if (error !== undefined && !isAbort(error)) this.networkFailure("body", error, status);
      },
      signal,
    );
    this.#endStream = watched.end;
    return watched.response;
  }
}

/**
 * The text of an error response's body, and a response for the SDK that replays it, so the SDK
 * still reads a body and builds the error text it always has. Undefined text when the body is
 * declared longer than {@link MAX_ERROR_BODY_BYTES} (it is not read, and the SDK gets the response
 * as it came) or breaks off (the replay breaks off with the same error): the status and headers
 * are still worth having.
 *
 * Read once and replayed rather than cloned: `clone()` tees the body into two byte streams, and on
 * Node 20 each new web stream costs a transferable object; with a retried 503 on every prompt the
 * tee was the worker's largest single item of stream construction in bench (o).
 */
async function readErrorBody(response: Response): Promise<{ text: string | undefined; response: Response }> {
  const length = Number(response.headers.get("content-length") ?? "0");
  if (length > MAX_ERROR_BODY_BYTES || response.body === null) return { text: undefined, response };
  try {
    const text = await response.text();
    return { text, response: replay(response, text) };
  } catch (error) {
    const broken = new ReadableStream<Uint8Array>({ start: (controller) => controller.error(error) });
    return { text: undefined, response: replay(response, broken) };
  }
}

/** A response like `response` (status, headers, url) whose body is `body`. */
function replay(response: Response, body: string | ReadableStream<Uint8Array>): Response {
  const copy = new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  // The SDKs read `url` for their error messages and logs; a constructed Response has none.
  Object.defineProperty(copy, "url", { value: response.url });
  return copy;
}
