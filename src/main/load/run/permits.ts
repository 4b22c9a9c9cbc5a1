/**
 * A counting semaphore for `--concurrency`: at most `limit` prompts in flight across the run's
 * sessions. Waiters are served first come, first served; `cancelAll()` (the run is ending) lets
 * every waiter go with `false` instead of a permit.
 */
export class Permits {
  #free: number;
  #cancelled = false;
  readonly #waiters: ((granted: boolean) => void)[] = [];

  constructor(limit: number) {
    this.#free = limit;
  }

  /** Resolves true with a permit (give it back with {@link release}), or false once cancelled. */
  acquire(): Promise<boolean> {
    if (this.#cancelled) return Promise.resolve(false);
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Returns a permit: the longest waiter gets it. */
  release(): void {
    const next = this.#waiters.shift();
    if (next !== undefined && !this.#cancelled) next(true);
    else this.#free++;
  }

  /** Every waiter, now and later, gets false. */
  cancelAll(): void {
    this.#cancelled = true;
    for (const waiter of this.#waiters.splice(0)) waiter(false);
  }
}
