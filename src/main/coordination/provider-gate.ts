/**
 * SPEC B8: the provider gate. A 429 or 529 that carries a retry hint closes the gate of that
 * provider and key until the hint's time; every session of the host that would send a request
 * to it (a retry, a new prompt, or with `maxConcurrentRequests` any model request) waits at the
 * gate instead of discovering the limit with its own failed request. A pure unit: the clock and
 * the sleep are injected; its state is a map from key to reopening time, plain data.
 */

/** The gate's contract, small so that a store shared by several machines could stand behind it. */
interface GateStore {
  /** Closes `key` until `now + forMs`; a later reopening time already set is kept. */
  close(key: string, forMs: number): void;
  /** Milliseconds until `key` reopens; 0 when it is open. */
  remainingMs(key: string): number;
}

/** Options of {@link ProviderGate}. */
export interface ProviderGateOptions {
  /** A monotonic clock in ms. */
  now: () => number;
  /** Sleeps `ms`, rejecting with the signal's reason when `signal` aborts. */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** The host's gates, one per provider key. Created by `HostCoordination`. */
export class ProviderGate implements GateStore {
  readonly #reopensAt = new Map<string, number>();
  readonly #options: ProviderGateOptions;

  constructor(options: ProviderGateOptions) {
    this.#options = options;
  }

  close(key: string, forMs: number): void {
    if (!(forMs > 0)) return;
    const until = this.#options.now() + forMs;
    if (until > (this.#reopensAt.get(key) ?? Number.NEGATIVE_INFINITY)) this.#reopensAt.set(key, until);
  }

  /** Every closed gate and the ms until it reopens. */
  closed(): [key: string, remainingMs: number][] {
    return [...this.#reopensAt.keys()]
      .map((key) => [key, this.remainingMs(key)] as [string, number])
      .filter(([, ms]) => ms > 0);
  }

  remainingMs(key: string): number {
    const until = this.#reopensAt.get(key);
    if (until === undefined) return 0;
    const left = until - this.#options.now();
    if (left > 0) return left;
    this.#reopensAt.delete(key);
    return 0;
  }

  /**
   * Resolves once `key` is open, at once if it is; a gate closed again meanwhile is waited out
   * too. Calls `onWait(ms)` before each wait. Rejects with the signal's reason when `signal`
   * aborts (`abort()`, `abortRetry()`).
   */
  async wait(key: string, signal: AbortSignal, onWait?: (ms: number) => void): Promise<void> {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const left = this.remainingMs(key);
      if (left <= 0) return;
      onWait?.(Math.ceil(left));
      await this.#options.sleep(Math.ceil(left), signal);
    }
  }
}
