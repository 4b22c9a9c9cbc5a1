/**
 * SPEC B8: a host-wide retry budget for one provider, as plain data and a pure unit (an injected
 * clock, no timers, no I/O).
 *
 * Anchor: Finagle's `RetryBudget`: retries may add at most `ratio` of the first attempts to the
 * traffic, plus a floor of `minPerSecond` retries per second so that a quiet host can still retry,
 * both over a sliding window (Finagle: 20 %, 10/s, 10 s; those are lifeline's defaults). Here the
 * window is exact: a retry at time t is allowed when the retries already taken in (t − window, t],
 * plus this one, are at most `ratio × first attempts in (t − window, t] + minPerSecond × window/1000`.
 */
import type { RetryBudgetSettings } from "../../shared/settings/settings.js";

/** What a budget reports, for events and `get_state` (plain data). */
export interface RetryBudgetState {
  /** First attempts counted in the current window. */
  deposits: number;
  /** Retries taken in the current window. */
  withdrawals: number;
  /** Retries that would be allowed now. */
  available: number;
}

/**
 * The budget's contract: what a session needs of it. Small on purpose, so a store shared by
 * several machines (Redis, say) can stand behind it later.
 */
interface RetryBudgetStore {
  /** Counts a first model attempt (a prompt's run start). */
  deposit(): void;
  /** Takes one retry; false (and nothing taken) when the budget is spent. */
  tryWithdraw(): boolean;
  state(): RetryBudgetState;
}

/** Timestamps in time order with a moving head: push and prune are amortised O(1). */
class TimeQueue {
  #times: number[] = [];
  #head = 0;

  push(time: number): void {
    this.#times.push(time);
  }

  /** Drops every entry at or before `cutoff`. */
  prune(cutoff: number): void {
    while (this.#head < this.#times.length && (this.#times[this.#head] ?? 0) <= cutoff) this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#times.length) {
      this.#times = this.#times.slice(this.#head);
      this.#head = 0;
    }
  }

  get size(): number {
    return this.#times.length - this.#head;
  }

  /** How long ago (ms before `now`) each time at most `maxAgeMs` old was pushed, oldest first. */
  agesWithin(now: number, maxAgeMs: number): number[] {
    const ages: number[] = [];
    for (let i = this.#head; i < this.#times.length; i++) {
      const age = now - (this.#times[i] ?? 0);
      if (age <= maxAgeMs) ages.push(age);
    }
    return ages;
  }
}

/** The in-memory {@link RetryBudgetStore}: one per provider (and configuration) per host. */
export class RetryBudget implements RetryBudgetStore {
  readonly #config: RetryBudgetSettings;
  readonly #now: () => number;
  readonly #deposits = new TimeQueue();
  readonly #withdrawals = new TimeQueue();

  /** @param now a monotonic clock in ms (`performance.now` in production). */
  constructor(config: RetryBudgetSettings, now: () => number) {
    this.#config = config;
    this.#now = now;
  }

  deposit(): void {
    const now = this.#now();
    this.#prune(now);
    this.#deposits.push(now);
  }

  tryWithdraw(): boolean {
    const now = this.#now();
    this.#prune(now);
    if (this.#withdrawals.size + 1 > this.#allowance()) return false;
    this.#withdrawals.push(now);
    return true;
  }

  /**
   * Counts a retry that was allowed elsewhere (by the fleet's budget), so that a fallback to this
   * budget knows of it; never refused.
   */
  withdraw(): void {
    const now = this.#now();
    this.#prune(now);
    this.#withdrawals.push(now);
  }

  /**
   * The first attempts and retries counted in the last `ms` and still in the window, as their
   * ages in ms: what the host decided alone while its fleet's Redis was away, to be replayed into
   * the fleet's budget when it rejoins (fleet-coordination.ts).
   */
  recent(ms: number): { deposits: number[]; withdrawals: number[] } {
    const now = this.#now();
    this.#prune(now);
    return { deposits: this.#deposits.agesWithin(now, ms), withdrawals: this.#withdrawals.agesWithin(now, ms) };
  }

  state(): RetryBudgetState {
    this.#prune(this.#now());
    const withdrawals = this.#withdrawals.size;
    return {
      deposits: this.#deposits.size,
      withdrawals,
      available: Math.max(0, Math.floor(this.#allowance() - withdrawals)),
    };
  }

  /** Retries the current window allows in all. */
  #allowance(): number {
    const { ratio, minPerSecond, windowMs } = this.#config;
    return ratio * this.#deposits.size + (minPerSecond * windowMs) / 1000;
  }

  #prune(now: number): void {
    const cutoff = now - this.#config.windowMs;
    this.#deposits.prune(cutoff);
    this.#withdrawals.prune(cutoff);
  }
}

/** The budget's settings in words, for the final error of a chain it stopped. */
export function describeBudget(config: RetryBudgetSettings): string {
  const percent = Math.round(config.ratio * 1000) / 10;
  return `at most ${percent}% of first attempts plus ${config.minPerSecond}/s over ${config.windowMs / 1000} s`;
}
