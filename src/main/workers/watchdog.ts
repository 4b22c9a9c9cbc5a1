/**
 * The hang watchdog (SPEC X8): notices a worker whose event loop has stopped turning, even when
 * nothing calls it.
 *
 * Every worker sends a heartbeat when it has sent nothing else for a while, so any message from it
 * proves its loop is alive; a worker stuck in synchronous code sends nothing. The watchdog ticks
 * on the main thread and reports a worker silent for longer than `hangTimeoutMs` (plus the
 * allowance it currently has, e.g. while a worker module's `setup()` runs).
 *
 * Two guards keep a busy host from killing healthy workers:
 * - A tick that itself ran late by more than half the timeout means the main thread was blocked;
 *   the heartbeats it did not read yet are still queued, so that tick judges nothing.
 * - A worker that looks silent is judged only after pending I/O has been delivered (`afterIo`,
 *   `setImmediate` in production: it runs after the poll phase that delivers port messages).
 *
 * A pure unit: its clock, timer and the "after I/O" step are injected.
 */

/** What the watchdog reads of a worker link. */
export interface Watched {
  /** `now()` of the last message from the worker, or of the link's creation. */
  readonly lastSeenAt: number;
  /** Extra silence allowed right now, in ms (0 normally). */
  readonly allowanceMs: number;
  /** True once the link is dead; the watchdog ignores it. */
  readonly isDead: boolean;
}

/** Options of {@link Watchdog}. */
export interface WatchdogOptions<T extends Watched> {
  /** Silence after which a worker is taken to be hung. */
  hangTimeoutMs: number;
  /** The links to watch, read at every tick. */
  links: () => Iterable<T>;
  /** Called once per tick for each link judged hung, with how long it has been silent. */
  onHung: (link: T, silentMs: number) => void;
  /** Monotonic milliseconds. @default performance.now */
  now?: () => number;
  /** Runs `fn` once pending I/O has been delivered. @default setImmediate */
  afterIo?: (fn: () => void) => void;
  /** Starts the repeating tick; returns its canceller. @default an unref'd setInterval */
  every?: (ms: number, fn: () => void) => () => void;
}

/** Ticks at a quarter of the timeout, at most once a second and at least every 10 ms. */
export function tickIntervalMs(hangTimeoutMs: number): number {
  return Math.min(1000, Math.max(10, Math.floor(hangTimeoutMs / 4)));
}

/** Watches worker links for silence; see the file comment. */
export class Watchdog<T extends Watched> {
  readonly #options: WatchdogOptions<T>;
  readonly #now: () => number;
  readonly #intervalMs: number;
  #cancel: (() => void) | undefined;
  #lastTick = 0;

  constructor(options: WatchdogOptions<T>) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
    this.#intervalMs = tickIntervalMs(options.hangTimeoutMs);
  }

  /** Starts ticking; idempotent. The production timer is unref'd: it never holds the process. */
  start(): void {
    if (this.#cancel !== undefined) return;
    this.#lastTick = this.#now();
    const every = this.#options.every ?? unrefInterval;
    this.#cancel = every(this.#intervalMs, () => this.tick());
  }

  /** Stops ticking; idempotent. */
  stop(): void {
    this.#cancel?.();
    this.#cancel = undefined;
  }

  /** One check of every link. Called by the timer; tests call it directly. */
  tick(): void {
    const now = this.#now();
    const late = now - this.#lastTick - this.#intervalMs;
    this.#lastTick = now;
    if (late > this.#options.hangTimeoutMs / 2) return;
    const suspects: T[] = [];
    for (const link of this.#options.links()) {
      if (!link.isDead && this.#silence(link, now) > 0) suspects.push(link);
    }
    if (suspects.length === 0) return;
    const afterIo = this.#options.afterIo ?? setImmediate;
    afterIo(() => {
      const later = this.#now();
      for (const link of suspects) {
        if (!link.isDead && this.#silence(link, later) > 0) this.#options.onHung(link, later - link.lastSeenAt);
      }
    });
  }

  /** How far past its limit a link's silence is (positive: hung). */
  #silence(link: T, now: number): number {
    return now - link.lastSeenAt - this.#options.hangTimeoutMs - link.allowanceMs;
  }
}

function unrefInterval(ms: number, fn: () => void): () => void {
  const timer = setInterval(fn, ms);
  timer.unref();
  return () => clearInterval(timer);
}
