/**
 * A counting semaphore with FIFO waiters and permits known by id and by owner. Two users:
 * SPEC B8, `retry.maxConcurrentRequests` (at most N model requests of one provider in flight across
 * every session and worker of the host; the owner is the worker holding them, so that a worker's
 * death releases what it held), and `lifeline load --concurrency` (at most N prompts in flight
 * across a run's sessions; the run closes it when it ends). A pure unit, no timers.
 */

/** A semaphore with owned, idempotently released permits. */
export class RequestSemaphore {
  readonly #permits: number;
  /** Permit id → owner. */
  readonly #held = new Map<number, object>();
  readonly #waiters: { owner: object; grant: (id: number) => void; drop: (reason: unknown) => void }[] = [];
  #nextId = 0;
  /** Set by {@link close}: the reason every later acquire is refused with. */
  #closed: { reason: unknown } | undefined;

  constructor(permits: number) {
    this.#permits = permits;
  }

  /** Permits granted and not yet released. */
  get inUse(): number {
    return this.#held.size;
  }

  /** Callers waiting for a permit. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /**
   * Resolves with a permit id once one is free; waiters are served first come, first served.
   * Rejects with the signal's reason when `signal` aborts first, and with the reason given to
   * {@link close} once closed (nothing is held then).
   */
  acquire(owner: object, signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#closed !== undefined) return Promise.reject(this.#closed.reason);
    if (this.#held.size < this.#permits && this.#waiters.length === 0) return Promise.resolve(this.#take(owner));
    return new Promise<number>((resolve, reject) => {
      const waiter = {
        owner,
        grant: (id: number) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(id);
        },
        drop: (reason: unknown) => {
          signal?.removeEventListener("abort", onAbort);
          reject(reason);
        },
      };
      const onAbort = () => {
        const index = this.#waiters.indexOf(waiter);
        if (index >= 0) this.#waiters.splice(index, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** Releases a permit; true the first time, false for an id already released or unknown. */
  release(id: number): boolean {
    if (!this.#held.delete(id)) return false;
    this.#serve();
    return true;
  }

  /**
   * Releases every permit `owner` holds and rejects its waiters (a dead worker); returns how many
   * permits were held.
   */
  releaseOwner(owner: object): number {
    let released = 0;
    for (const [id, holder] of this.#held) {
      if (holder !== owner) continue;
      this.#held.delete(id);
      released++;
    }
    for (let i = this.#waiters.length - 1; i >= 0; i--) {
      const waiter = this.#waiters[i];
      if (waiter?.owner !== owner) continue;
      this.#waiters.splice(i, 1);
      waiter.drop(new Error("The owner of this permit request is gone."));
    }
    this.#serve();
    return released;
  }

  /**
   * No permit is granted any more (a load run ending): every waiter, now and later, is rejected
   * with `reason`. Permits already held stay held until released. Once only; later calls do nothing.
   */
  close(reason: unknown): void {
    if (this.#closed !== undefined) return;
    this.#closed = { reason };
    for (const waiter of this.#waiters.splice(0)) waiter.drop(reason);
  }

  #take(owner: object): number {
    const id = ++this.#nextId;
    this.#held.set(id, owner);
    return id;
  }

  #serve(): void {
    while (this.#held.size < this.#permits) {
      const next = this.#waiters.shift();
      if (next === undefined) return;
      next.grant(this.#take(next.owner));
    }
  }
}
