/**
 * The calls of one worker link: comlink calls whose every promise settles. comlink never rejects a
 * pending call when the worker dies (fact F3 in docs/architecture.md), so each call here settles
 * on the reply, on {@link BoundedCalls.failAll} (the worker's death), or on its timeout, whichever
 * comes first. A worker still booting has not had the chance to answer: timeouts start at its
 * `hello` ({@link BoundedCalls.start}). At each expiry the caller decides whether the call fails
 * or waits one more period (a busy worker that is still sending is not stuck: worker-link.ts); the
 * decision is taken after pending I/O has been delivered (`setImmediate`), so a reply queued on
 * the port while the main thread was held is read first.
 *
 * Owned by {@link WorkerLink}, which adds what a call means for the link (keep-alive, open runs).
 */
import type { Remote } from "comlink";
import { fromWireError, LifelineError } from "../../shared/errors.js";
import type { Result, WorkerApi } from "../../shared/wire/protocol.js";

/** What a {@link WorkerApi} method resolves with. */
export type ApiResult<K extends keyof WorkerApi> = Awaited<ReturnType<WorkerApi[K]>>;
/** A method's value once its {@link Result} is unwrapped (an error result rejects instead). */
export type Unwrapped<R> = R extends { ok: false } ? never : R extends { ok: true; value: infer T } ? T : R;

/** One link's pending calls; see the file comment. */
export class BoundedCalls {
  /** Held strongly: a garbage-collected comlink proxy would close the worker's port (F3). */
  readonly #remote: Remote<WorkerApi>;
  readonly #pending = new Set<(error: LifelineError) => void>();
  readonly #startWaiters: (() => void)[] = [];
  #started = false;
  /** The error given to {@link failAll}: every later call rejects with it at once. */
  #failed: LifelineError | undefined;

  constructor(remote: Remote<WorkerApi>) {
    this.#remote = remote;
  }

  /** True once {@link start} was called: the worker's serve loop runs. */
  get started(): boolean {
    return this.#started;
  }

  /** The worker said `hello`: the timeouts of the calls made meanwhile start now. */
  start(): void {
    this.#started = true;
    for (const arm of this.#startWaiters.splice(0)) arm();
  }

  /**
   * Calls `method` and unwraps its {@link Result}. Rejects with the worker's typed error, with
   * what `onTimeout(periods)` returns once `timeoutMs` has passed `periods` times (counted from the
   * worker's start; `Infinity`: never; `undefined` from it waits one more period), with
   * ERR_PROTOCOL when comlink itself fails, or with the error given to {@link failAll} (at once
   * when the call comes after it).
   */
  invoke<K extends keyof WorkerApi>(
    method: K,
    args: unknown[],
    timeoutMs: number,
    onTimeout: (periods: number) => LifelineError | undefined,
  ): Promise<Unwrapped<ApiResult<K>>> {
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    return new Promise<Unwrapped<ApiResult<K>>>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let periods = 0;
      const fail = (error: LifelineError) => {
        clearTimeout(timer);
        this.#pending.delete(fail);
        reject(error);
      };
      const arm = () => {
        if (!this.#pending.has(fail) || timeoutMs === Number.POSITIVE_INFINITY) return;
        timer = setTimeout(() => {
          // Judged after the poll phase: a reply already on the port settles the call first.
          setImmediate(() => {
            if (!this.#pending.has(fail)) return;
            const error = onTimeout(++periods);
            if (error === undefined) arm();
            else fail(error);
          });
        }, timeoutMs);
        timer.unref();
      };
      this.#pending.add(fail);
      if (this.#started) arm();
      else this.#startWaiters.push(arm);
      const invoke = this.#remote[method] as unknown as (...a: unknown[]) => Promise<ApiResult<K>>;
      invoke(...args).then(
        (result) => {
          if (!this.#pending.has(fail)) return;
          clearTimeout(timer);
          this.#pending.delete(fail);
          if (isResult(result)) {
            if (result.ok) resolve(result.value as Unwrapped<ApiResult<K>>);
            else reject(fromWireError(result.error));
          } else {
            resolve(result as Unwrapped<ApiResult<K>>);
          }
        },
        (error: unknown) => fail(new LifelineError("ERR_PROTOCOL", `Worker call ${method} failed: ${String(error)}`)),
      );
    });
  }

  /** The worker is gone: every pending call rejects with `error`, later calls too, and nothing waits for a start. */
  failAll(error: LifelineError): void {
    this.#failed ??= error;
    this.#startWaiters.length = 0;
    for (const fail of [...this.#pending]) fail(error);
  }
}

function isResult(value: unknown): value is Result<unknown> {
  return (
    value !== null && typeof value === "object" && "ok" in value && typeof (value as { ok: unknown }).ok === "boolean"
  );
}
