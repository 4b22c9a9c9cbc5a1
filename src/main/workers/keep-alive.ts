/**
 * Only in-flight work keeps the process alive: a host whose workers have nothing to do, with or
 * without open sessions, lets the process exit, as an idle `net.Server` that was unref'd would.
 * `host.close()` stays the clean way out; this only stops an idle host from holding the process.
 *
 * A {@link KeepAlive} counts the work in flight on one worker (a pending call, a run between its
 * start and its `run_end`) and flips the worker's handles between referenced and unreferenced. A
 * retry sleep needs no count: it is a referenced main-thread timer of its own.
 */

/**
 * Counts in-flight work and calls `setReferenced(true)` when work starts after an idle spell,
 * `setReferenced(false)` when none is left. Handles start referenced (a new port is) and the
 * first piece of work always comes at once (the `openSession` or `listBuiltInModels` call).
 *
 * Going idle is applied on the next turn of the event loop, not at once: a caller that starts its
 * next call in a promise continuation then never flips the handles off and on again.
 */
export class KeepAlive {
  readonly #setReferenced: (referenced: boolean) => void;
  #inFlight = 0;
  #referenced = true;
  #idleCheck: NodeJS.Immediate | undefined;
  #stopped = false;

  constructor(setReferenced: (referenced: boolean) => void) {
    this.#setReferenced = setReferenced;
  }

  /** Work in flight now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** One piece of work starts; the handles are referenced until it ends. */
  begin(): void {
    this.#inFlight++;
    if (this.#stopped || this.#referenced) return;
    this.#referenced = true;
    this.#setReferenced(true);
  }

  /** One piece of work ends (call once per {@link begin}). */
  end(): void {
    if (this.#inFlight === 0) return;
    this.#inFlight--;
    if (this.#inFlight > 0 || this.#stopped || this.#idleCheck !== undefined) return;
    this.#idleCheck = setImmediate(() => {
      this.#idleCheck = undefined;
      if (this.#inFlight > 0 || this.#stopped || !this.#referenced) return;
      this.#referenced = false;
      this.#setReferenced(false);
    });
  }

  /** The worker is gone: nothing more to flip. */
  stop(): void {
    this.#stopped = true;
    if (this.#idleCheck !== undefined) clearImmediate(this.#idleCheck);
    this.#idleCheck = undefined;
  }
}
