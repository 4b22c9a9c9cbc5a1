/**
 * SPEC B8, `retry.maxConcurrentRequests`, the worker's side: before a session sends a model
 * request it asks the main thread for a permit (one `permit_request` message out, one
 * `grantPermit` call back: one round trip), and it gives the permit back with `permit_release`
 * when the response stream ends, whatever the end (answer, error, abort). A request aborted while
 * it waits gives back its place the same way. Only sessions opened with `requestPermits` ask, so
 * a host without the setting pays nothing.
 */
import type { WorkerMessage } from "../shared/wire/protocol.js";

/** The worker's permit requests in flight; one per worker, owned by `serveWorker`. */
export class RequestPermits {
  readonly #post: (message: WorkerMessage) => void;
  readonly #flushEvents: () => void;
  readonly #waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  readonly #released = new Set<number>();
  #nextId = 0;

  /** @param flushEvents sends the events batched so far (a `tool_calls_ready` must follow its reply's `message_end`). */
  constructor(post: (message: WorkerMessage) => void, flushEvents: () => void = () => {}) {
    this.#post = post;
    this.#flushEvents = flushEvents;
  }

  /**
   * Resolves once main has stored the session's reply whose tool calls are about to run
   * (`storeToolCalls`, see the protocol). Rejects when `signal` aborts first, or main refuses.
   */
  stored(sessionId: string, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(new Error("Request was aborted"));
    const requestId = ++this.#nextId;
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#waiting.delete(requestId);
        reject(new Error("Request was aborted"));
      };
      this.#waiting.set(requestId, {
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        reject: (error) => {
          signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
      });
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#flushEvents();
      this.#post({ type: "tool_calls_ready", sessionId, requestId });
    });
  }

  /**
   * Resolves with the request id once main has granted its permit. Rejects when `signal` aborts
   * first ("Request was aborted", as pi-ai words an abort) or main refuses.
   */
  acquire(sessionId: string, signal: AbortSignal | undefined): Promise<number> {
    if (signal?.aborted) return Promise.reject(new Error("Request was aborted"));
    const requestId = ++this.#nextId;
    return new Promise<number>((resolve, reject) => {
      const onAbort = () => {
        this.#waiting.delete(requestId);
        this.release(requestId);
        reject(new Error("Request was aborted"));
      };
      this.#waiting.set(requestId, {
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(requestId);
        },
        reject: (error) => {
          signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
      });
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#post({ type: "permit_request", sessionId, requestId });
    });
  }

  /** Main's answer. A request cancelled meanwhile is ignored: its release is already on its way. */
  grant(requestId: number, granted: boolean): void {
    const waiter = this.#waiting.get(requestId);
    if (waiter === undefined) return;
    this.#waiting.delete(requestId);
    if (granted) waiter.resolve();
    else
      waiter.reject(
        new Error("The session host refused a request permit (the session is closed or unknown to the host)."),
      );
  }

  /** Gives the permit of `requestId` back, once; later calls do nothing. */
  release(requestId: number): void {
    if (this.#released.has(requestId)) return;
    this.#released.add(requestId);
    // Ids are never reused, so only recent ones need remembering.
    if (this.#released.size > 4096) this.#released.delete(this.#released.values().next().value as number);
    this.#post({ type: "permit_release", requestId });
  }
}
