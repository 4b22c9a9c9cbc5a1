/**
 * How a session's writer batches its appends, whatever it writes to (a file, the fleet's Redis):
 * `append` only queues and returns; one store at a time runs, taking every item queued meanwhile
 * as one batch, and the promise of each append resolves once its batch is stored. Items nobody
 * waits for (`lazy`: a reply, a model change) may wait up to {@link LAZY_WRITE_MS} to go out with
 * what follows (typically the next prompt's write-ahead, which is never delayed and takes them
 * along): with many sessions, fewer writes cost the host's event loop less.
 *
 * A store that fails fails the appends for good: that batch's promises, the queued ones and every
 * later `append` reject with the writer's error (the stored tail is then unknown, and appending
 * after a gap would link entries to parents that are not there).
 */
import type { LifelineError } from "../../shared/errors.js";

/** How long a lazy append may wait for company. */
const LAZY_WRITE_MS = 50;

interface Waiter {
  resolve: () => void;
  reject: (error: Error) => void;
}

/** What a writer gives its {@link BatchedAppends}. */
export interface BatchedAppendsOptions<T> {
  /** Stores one batch, in order; rejects when it could not. */
  store(batch: T[]): Promise<void>;
  /** The error every append rejects with once `store` rejected with `error`. */
  failure(error: unknown): LifelineError;
  /** The error of an append after `close()`. */
  closed(): LifelineError;
}

/** One writer's queue of appends; main thread only. */
export class BatchedAppends<T> {
  readonly #options: BatchedAppendsOptions<T>;
  #items: T[] = [];
  #waiters: Waiter[] = [];
  #running: Promise<void> | undefined;
  /** A drain put off so lazy items go out with later ones. */
  #lazyTimer: NodeJS.Timeout | undefined;
  #failed: LifelineError | undefined;
  #closed = false;

  constructor(options: BatchedAppendsOptions<T>) {
    this.#options = options;
  }

  /** Queues `items`; resolves once they are stored, rejects with the writer's error (see the file comment). */
  append(items: readonly T[], lazy: boolean): Promise<void> {
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    if (this.#closed) return Promise.reject(this.#options.closed());
    this.#items.push(...items);
    const done = new Promise<void>((resolve, reject) => this.#waiters.push({ resolve, reject }));
    // A drain under way takes every item queued before it finishes, lazy or not.
    if (this.#running !== undefined) return done;
    if (lazy) {
      // Ref'd: a pending write is work in flight; the process must not exit before it.
      this.#lazyTimer ??= setTimeout(() => this.#startDrain(), LAZY_WRITE_MS);
    } else {
      this.#startDrain();
    }
    return done;
  }

  /** Resolves when everything queued so far is stored (or has failed). Never rejects. */
  async flush(): Promise<void> {
    if (this.#lazyTimer !== undefined) this.#startDrain();
    while (this.#running !== undefined) await this.#running;
  }

  /** The error the appends failed with, once they have. */
  get failed(): LifelineError | undefined {
    return this.#failed;
  }

  /** Later appends reject; what is queued is still stored (flush to wait for it). */
  close(): void {
    this.#closed = true;
  }

  /** Fails the appends for good with `error` (the first error wins): queued and later ones reject. */
  fail(error: LifelineError): void {
    this.#failed ??= error;
    for (const waiter of this.#waiters.splice(0)) waiter.reject(this.#failed);
    this.#items = [];
  }

  #startDrain(): void {
    clearTimeout(this.#lazyTimer);
    this.#lazyTimer = undefined;
    this.#running ??= this.#drain();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#items.length > 0 && this.#failed === undefined) {
        const items = this.#items;
        const waiters = this.#waiters;
        this.#items = [];
        this.#waiters = [];
        try {
          await this.#options.store(items);
          for (const waiter of waiters) waiter.resolve();
        } catch (error) {
          const failure = this.#failed ?? this.#options.failure(error);
          for (const waiter of waiters) waiter.reject(failure);
          this.fail(failure);
        }
      }
    } finally {
      this.#running = undefined;
    }
  }
}
