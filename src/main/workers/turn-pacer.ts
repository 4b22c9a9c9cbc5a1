/**
 * The host's pacer of bursts of per-session work on the main thread: the posting of many
 * sessions' runs at once (a host that starts thousands of prompts in one loop, thousands of retry
 * sleeps ending together) is spread over macrotasks, so that the host's own event loop (its HTTP
 * server, its UI) keeps turning.
 *
 * Each piece of work is a turn, run by {@link TurnPacer.run}. A turn runs at once, inside the
 * caller's task, while the current slice has room; otherwise it waits in a FIFO queue that is
 * drained one slice per event-loop iteration (`setImmediate`), with timers and I/O in between.
 * A slice has room while it has run fewer turns than its quota and its synchronous part has
 * lasted less than the budget. The quota adapts to what turns cost, microtasks included: a turn
 * usually ends in promises (a comlink call, a resolved sleep), whose work runs after the turn
 * returns, so each draining slice is followed, in the same check phase, by a second immediate
 * that runs only once every microtask the slice caused is done and measures the whole slice.
 *
 * Order: turns run in the order they were given. No turn waits while the queue is empty and its
 * slice has room, so a lone prompt is posted exactly as without the pacer. Main thread only.
 *
 * A turn is an object with a `paced()` method ({@link PacedTurn}, {@link TurnPacer.enqueue}) or a
 * closure ({@link TurnPacer.run}, wrapped in one). The object form is for the bursts themselves:
 * 10,000 `prompt()` calls in one loop each queue a turn inside the caller's task, and everything
 * allocated there survives until its turn, so young-generation GC copies it, inside that task
 * (docs/performance.md, "(m)": P1 at 10,000 sessions). One small object per turn, and no closure,
 * context or handle, is what keeps that loop cheap.
 */

import { MAX_TIMER_MS } from "../../shared/timer-ms.js";

/** How long one slice of turns may keep the main thread, in milliseconds (P1 of the performance issue: no stall over 20 ms). */
const SLICE_BUDGET_MS = 4;

/** Turns a slice runs before its first measurement. */
const FIRST_QUOTA = 32;
const MAX_QUOTA = 4096;

/** A turn that waits in the queue; {@link cancel} drops it. */
export interface QueuedTurn {
  /** Drops the turn if it has not run yet; returns whether it was dropped. */
  cancel(): boolean;
}

/**
 * A turn given as an object: `paced()` runs on the turn (it must not throw). A turn whose
 * `cancelled` reads true when it comes up is skipped without counting against its slice.
 */
export interface PacedTurn {
  paced(): void;
  readonly cancelled?: boolean;
}

interface Slice {
  start: number;
  ran: number;
}

/** A closure's turn ({@link TurnPacer.run}): its own handle, cancelled by dropping its work. */
class ClosureTurn implements PacedTurn, QueuedTurn {
  #work: (() => void) | undefined;

  constructor(work: () => void) {
    this.#work = work;
  }

  get cancelled(): boolean {
    return this.#work === undefined;
  }

  paced(): void {
    const work = this.#work;
    this.#work = undefined;
    work?.();
  }

  cancel(): boolean {
    if (this.#work === undefined) return false;
    this.#work = undefined;
    return true;
  }
}

/** A sleep of {@link TurnPacer.sleep}: its timer, then its turn; the abort listener of its signal. */
class PacedSleep implements PacedTurn {
  cancelled = false;
  readonly #pacer: TurnPacer;
  #remaining: number;
  readonly #signal: AbortSignal;
  readonly #resolve: () => void;
  readonly #reject: (reason: unknown) => void;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    pacer: TurnPacer,
    ms: number,
    signal: AbortSignal,
    resolve: () => void,
    reject: (reason: unknown) => void,
  ) {
    this.#pacer = pacer;
    this.#remaining = Number.isFinite(ms) ? Math.max(0, ms) : Number.MAX_SAFE_INTEGER;
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** Starts the next part of the sleep (always one timer, so even 0 ms ends on a later macrotask). */
  schedule(): void {
    const part = Math.min(this.#remaining, MAX_TIMER_MS);
    this.#remaining -= part;
    this.#timer = setTimeout(wake, part, this);
  }

  /** The timer fired: another part, or the sleep's turn. */
  woke(): void {
    this.#timer = undefined;
    if (this.#remaining > 0) this.schedule();
    else this.#pacer.enqueue(this);
  }

  paced(): void {
    this.cancelled = true;
    this.#signal.removeEventListener("abort", this);
    this.#resolve();
  }

  /** The signal aborted (an EventListener object, so no closure): the sleep ends, rejected. */
  handleEvent(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    clearTimeout(this.#timer);
    this.#reject(this.#signal.reason);
  }
}

/** The timers' callback of every {@link PacedSleep}, shared (the sleep is the timer's argument). */
function wake(sleeping: PacedSleep): void {
  sleeping.woke();
}

/** What a consumed place of the queue holds, so that the turn it held can be collected. */
const CONSUMED: PacedTurn = { paced() {}, cancelled: true };

/** One host's pacer; see the file comment. */
export class TurnPacer {
  readonly #budgetMs: number;
  #queue: PacedTurn[] = [];
  #head = 0;
  /** The slice in progress; undefined while none is (the next turn then opens one). */
  #slice: Slice | undefined;
  /** Turns per slice, adapted to the measured cost of the last drained slices. */
  #quota = FIRST_QUOTA;

  constructor(budgetMs = SLICE_BUDGET_MS) {
    this.#budgetMs = budgetMs;
  }

  /** Turns waiting for a slice. */
  get waiting(): number {
    return this.#queue.length - this.#head;
  }

  /**
   * Runs `work` now if the queue is empty and the current slice has room; otherwise queues it and
   * returns its handle. `work` must not throw (a throw is reported as an uncaught exception of
   * the slice, and the queue goes on).
   */
  run(work: () => void): QueuedTurn | undefined {
    if (this.#roomNow()) {
      work();
      return undefined;
    }
    const turn = new ClosureTurn(work);
    this.#queue.push(turn);
    return turn;
  }

  /**
   * Runs `turn.paced()` now if the queue is empty and the current slice has room (returns true);
   * otherwise queues the turn itself (returns false). To drop a queued turn, make its `cancelled`
   * read true.
   */
  enqueue(turn: PacedTurn): boolean {
    if (this.#roomNow()) {
      turn.paced();
      return true;
    }
    this.#queue.push(turn);
    return false;
  }

  /** True, and the turn counted, when one may run at once: nothing queued, and the slice has room. */
  #roomNow(): boolean {
    if (this.#head !== this.#queue.length) return false;
    const slice = this.#slice ?? this.#openSlice();
    if (!this.#hasRoom(slice)) return false;
    slice.ran++;
    return true;
  }

  /**
   * Resolves once `ms` have passed, on a turn of its own (the caller's continuation is its work,
   * measured with its slice); rejects with the signal's reason if `signal` aborts first. A retry's
   * backoff: thousands of sleeps that end in the same millisecond (a burst of 503s, decided in one
   * batch) fire in one timers phase, where each only queues its turn. One promise, one timer, one
   * abort listener and one object per sleep, and no closure: a burst of retries allocates little
   * while they all wait (P1, docs/performance.md "(m)"). A delay above Node's timer range
   * ({@link MAX_TIMER_MS}) is slept in parts, as `abortableSleep` does.
   */
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const sleeping = new PacedSleep(this, ms, signal, resolve, reject);
      signal.addEventListener("abort", sleeping, { once: true });
      sleeping.schedule();
    });
  }

  #hasRoom(slice: Slice): boolean {
    return slice.ran < this.#quota && performance.now() - slice.start < this.#budgetMs;
  }

  /** A slice opened by a turn run at once: it lasts until the next check phase, then the queue drains. */
  #openSlice(): Slice {
    const slice: Slice = { start: performance.now(), ran: 0 };
    this.#slice = slice;
    setImmediate(() => {
      if (this.#slice === slice) this.#slice = undefined;
      this.#scheduleDrain();
    });
    return slice;
  }

  /** Drains one slice on the next iteration, then measures it once its microtasks are done. */
  #scheduleDrain(): void {
    this.#skipCancelled();
    if (this.#head === this.#queue.length) return;
    let slice: Slice | undefined;
    // Two immediates queued together run back to back in one check phase; the second one only
    // after the first and every microtask it caused, so it sees the slice's whole cost.
    setImmediate(() => {
      slice = { start: performance.now(), ran: 0 };
      this.#slice = slice;
      this.#drain(slice);
    });
    setImmediate(() => {
      if (slice === undefined) return;
      if (this.#slice === slice) this.#slice = undefined;
      this.#adapt(slice, performance.now() - slice.start);
      this.#scheduleDrain();
    });
  }

  #drain(slice: Slice): void {
    while (this.#head < this.#queue.length && this.#hasRoom(slice)) {
      const turn = this.#queue[this.#head] as PacedTurn;
      this.#queue[this.#head] = CONSUMED;
      this.#head++;
      if (turn.cancelled === true) continue;
      slice.ran++;
      try {
        turn.paced();
      } catch (error) {
        // The contract says a turn does not throw; if one does, the others still get their turn.
        setImmediate(() => {
          throw error;
        });
      }
    }
    this.#compact();
  }

  /** Sets the quota from the last slice's cost per turn, so that a slice fits the budget. */
  #adapt(slice: Slice, elapsedMs: number): void {
    if (slice.ran === 0) return;
    const perTurn = elapsedMs / slice.ran;
    const fits = perTurn > 0 ? Math.floor(this.#budgetMs / perTurn) : MAX_QUOTA;
    // Grows at most twofold per slice (one cheap slice is not proof), shrinks at once.
    this.#quota = Math.max(1, Math.min(MAX_QUOTA, fits, this.#quota * 2));
  }

  #skipCancelled(): void {
    while (this.#head < this.#queue.length && this.#queue[this.#head]?.cancelled === true) this.#head++;
    this.#compact();
  }

  /** Drops the queue's consumed head once it is large, so the array does not grow without end. */
  #compact(): void {
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }
}
