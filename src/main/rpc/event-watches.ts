/**
 * A client's internal event subscriptions (`RpcClient`'s, and each `RpcHostClient` session's): each watch collects events until its step returns a
 * value, its own deadline passes, or the child goes and every watch is failed at once.
 */
import { LifelineError } from "../../shared/errors.js";
import type { RpcEvent } from "./rpc-protocol.js";

/** Returned by a watch's step to keep watching. */
export const CONTINUE: unique symbol = Symbol("continue");

/** An internal event subscription with its own deadline, released by the child's exit. */
interface Watcher<E> {
  event(event: E): void;
  fail(error: unknown): void;
}

/** One watch, as returned by {@link EventWatches.watch}. */
export interface Watch<T> {
  readonly promise: Promise<T>;
  readonly done: boolean;
  resolve(value: T): void;
  reject(error: unknown): void;
  /** Stops watching without settling `promise`. */
  cancel(): void;
}

/** The live watches of one client (or one session of a host client); `E` is the event type. */
export class EventWatches<E = RpcEvent> {
  readonly #watchers = new Set<Watcher<E>>();

  /**
   * Watches events until `step` returns a value, `timeoutMs` passes (`ERR_RPC_TIMEOUT`), or the
   * child goes (`ERR_RPC_EXITED`). The promise is marked handled so a watch abandoned by a caller
   * that already threw does not surface as an unhandled rejection.
   */
  watch<T>(timeoutMs: number, what: string, step: (event: E) => T | typeof CONTINUE): Watch<T> {
    let resolvePromise: (value: T) => void = () => {};
    let rejectPromise: (error: unknown) => void = () => {};
    const promise = new Promise<T>((resolve, reject) => {
      resolvePromise = resolve;
      rejectPromise = reject;
    });
    promise.catch(() => {});
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (then: () => void): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      this.#watchers.delete(watcher);
      then();
    };
    const watcher: Watcher<E> = {
      event: (event) => {
        const result = step(event);
        if (result !== CONTINUE) finish(() => resolvePromise(result));
      },
      fail: (error) => finish(() => rejectPromise(error)),
    };
    this.#watchers.add(watcher);
    if (timeoutMs !== Number.POSITIVE_INFINITY) {
      timer = setTimeout(
        () =>
          watcher.fail(
            new LifelineError(
              "ERR_RPC_TIMEOUT",
              `No ${what} arrived within ${timeoutMs} ms. The run may still be going: pass a longer timeout, or abort().`,
            ),
          ),
        timeoutMs,
      );
    }
    return {
      promise,
      get done() {
        return done;
      },
      resolve: (value) => finish(() => resolvePromise(value)),
      reject: watcher.fail,
      cancel: () => finish(() => {}),
    };
  }

  /** Hands `event` to every live watch, in subscription order. */
  dispatch(event: E): void {
    for (const watcher of [...this.#watchers]) watcher.event(event);
  }

  /** Rejects every live watch with `error`. */
  failAll(error: LifelineError): void {
    for (const watcher of [...this.#watchers]) watcher.fail(error);
  }
}
