/**
 * A pass-through copy of an event stream's response, so that request-capture.ts sees how the
 * stream ended: the error event at its end (kept in a {@link StreamTail}), the error that broke
 * it off, or silence longer than the stream-idle timeout (`retry.provider.idleTimeoutMs`).
 *
 * The copy forwards chunks one for one and passes cancellation back, so an abort still closes
 * the connection (X3). A cancel by the consumer is not a network failure, and a read that settles
 * after it must not touch the controller (closing a cancelled stream throws).
 *
 * The request's abort signal errors the copy at once, with the signal's reason (what the fetch
 * itself rejects the body's read with). Why: otherwise the consumer's pending read settles only
 * after the fetch has torn its connection down, and request-capture.ts defers that teardown
 * until the aborted run's `run_end` is posted (`RequestCapture.deferTeardown`): with the copy
 * failed first, the SDK's read rejects in the abort's own microtasks and the run ends without
 * waiting for it (section (l) of docs/performance.md). The fetch still closes the connection.
 */
import { StreamTail } from "./stream-tail.js";

/** An event stream under watch. */
export interface WatchedStream {
  /** The copy to hand to the consumer in place of the original response. */
  response: Response;
  /** Ends the watch now, as if the stream had ended; the end is reported once, whichever comes first. */
  end(): void;
}

/**
 * Watches `body`, the event stream of `response`. `onEnd` is called once, when the stream is
 * done, breaks off, is cancelled by its consumer, is cut for silence or {@link WatchedStream.end}
 * is called: with the tail's text when it holds the bytes `error` (see {@link StreamTail.take}),
 * and the error that ended the stream, if one did.
 *
 * @param idleTimeoutMs a stream that delivers no bytes for this long is failed with an
 *   `ERR_STREAM_IDLE` error (a broken connection, transient under B2) and its socket closed; 0: never.
 * @param signal the request's abort signal: its abort errors the copy at once with its reason
 *   (see the file comment); the fetch, aborted too, closes the connection.
 */
export function watchEventStream(
  response: Response,
  body: ReadableStream<Uint8Array>,
  idleTimeoutMs: number,
  onEnd: (tail: string | undefined, error: unknown) => void,
  signal?: AbortSignal,
): WatchedStream {
  const reader = body.getReader();
  const tail = new StreamTail();
  let ended = false;
  const end = (error?: unknown): void => {
    if (ended) return;
    ended = true;
    signal?.removeEventListener("abort", onAbort);
    onEnd(tail.take(), error);
  };
  // Set by the consumer's cancel: from then on the controller is closed and must not be used.
  let cancelled = false;
  const idle = new IdleWatch(idleTimeoutMs, () => {
    // The provider went silent: fail the stream as a broken connection (transient, B2) and close
    // the socket. The pending read then settles against a cancelled reader and is ignored.
    if (cancelled || ended) return;
    cancelled = true;
    const error = idleError(idleTimeoutMs);
    end(error);
    watchedController?.error(error);
    void reader.cancel(error).catch(() => {});
  });
  // The request was aborted: fail the copy now with the signal's reason, as the fetch would once
  // its teardown is done. The body is left to the fetch, which closes the connection on the same
  // abort (cancelling it here would run that teardown now, ahead of the consumer's rejection). The
  // pending read then settles against a cancelled copy and is ignored.
  function onAbort(): void {
    if (cancelled || ended) return;
    cancelled = true;
    idle.stop();
    const reason: unknown = signal?.reason;
    end(reason);
    watchedController?.error(reason);
  }
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
  if (signal?.aborted === true) onAbort();
  else signal?.addEventListener("abort", onAbort);
  const copy = new Response(watched, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  // The SDKs read `url` for their error messages and logs; a constructed Response has none.
  Object.defineProperty(copy, "url", { value: response.url });
  return { response: copy, end: () => end() };
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
