/**
 * SPEC B8 across a fleet: the retry budget of one provider and configuration, kept in Redis and
 * decided there by one script per decision (fleet-scripts.ts), with `RetryBudget`'s exact sliding
 * window measured on the Redis server's clock. Fleet-wide, retries stay within `ratio` of the
 * fleet's first attempts plus one floor (`minPerSecond × window`), not one per host.
 *
 * Keys: `<prefix>budget:<provider>:<ratio>:<minPerSecond>:<windowMs>:first` and `…:retries`,
 * sorted sets of attempts scored by time. Main thread only.
 */
import type { RetryBudgetSettings } from "../../shared/settings/settings.js";
import type { FleetCalls } from "./fleet-scripts.js";
import type { RetryBudgetState } from "./retry-budget.js";

/** How old a state snapshot may be before `state()` asks Redis for a fresh one. */
const STATE_REFRESH_MS = 250;

/** One provider's fleet-wide budget, as one host sees it. */
export class FleetBudget {
  readonly #calls: FleetCalls;
  readonly #keys: readonly string[];
  readonly #args: readonly (string | number)[];
  #snapshot: { state: RetryBudgetState; at: number } | undefined;
  #refreshing = false;

  constructor(calls: FleetCalls, provider: string, config: RetryBudgetSettings) {
    this.#calls = calls;
    const base = ["budget", provider, String(config.ratio), String(config.minPerSecond), String(config.windowMs)];
    this.#keys = [calls.key(...base, "first"), calls.key(...base, "retries")];
    this.#args = [config.ratio, config.minPerSecond, config.windowMs];
  }

  /**
   * Counts a first attempt. Not awaited: sent on the host's one command connection, it counts
   * before any withdrawal the host sends later. A failure has made the host fall back already.
   */
  deposit(): void {
    void this.#run("deposit").catch(() => {});
  }

  /**
   * Takes one retry: true when the fleet's budget allowed it, false when it is spent, undefined
   * when Redis could not decide (the host has fallen back; the caller decides locally). Never rejects.
   */
  async withdraw(): Promise<boolean | undefined> {
    try {
      return await this.#run("withdraw");
    } catch {
      return undefined;
    }
  }

  /**
   * Records first attempts and retries this host counted alone while Redis was away (their ages in
   * ms), so the fleet's window holds them as if they had been sent to it. Not awaited; never rejects.
   */
  replay(deposits: readonly number[], withdrawals: readonly number[]): void {
    if (deposits.length + withdrawals.length === 0) return;
    const ages = [deposits.length, ...deposits.map(Math.round), ...withdrawals.map(Math.round)];
    void this.#run("replay", ages).catch(() => {});
  }

  /**
   * The budget as of this host's last decision or refresh (undefined before the first answer);
   * a snapshot older than 250 ms is refreshed in the background for the next call.
   */
  state(): RetryBudgetState | undefined {
    const snapshot = this.#snapshot;
    if (!this.#refreshing && (snapshot === undefined || performance.now() - snapshot.at > STATE_REFRESH_MS)) {
      this.#refreshing = true;
      void this.#run("state")
        .catch(() => {})
        .finally(() => {
          this.#refreshing = false;
        });
    }
    return snapshot?.state;
  }

  async #run(op: "deposit" | "withdraw" | "state" | "replay", more: readonly number[] = []): Promise<boolean> {
    const args = [...this.#args, op, this.#calls.member(), ...more];
    const reply = (await this.#calls.run("budget", this.#keys, args)) as number[];
    const [allowed, deposits, withdrawals, available] = reply;
    this.#snapshot = {
      state: { deposits: deposits ?? 0, withdrawals: withdrawals ?? 0, available: available ?? 0 },
      at: performance.now(),
    };
    return allowed === 1;
  }
}
