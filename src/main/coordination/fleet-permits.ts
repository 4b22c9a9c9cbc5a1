/**
 * SPEC B8, `retry.maxConcurrentRequests` across a fleet: at most `limit` model requests of one
 * provider in flight in the whole fleet. The permits are leases in Redis (a sorted set:
 * `<prefix>permits:<provider>:<limit>`, member → lease expiry on the server's clock), taken by one
 * script that also checks the request's provider gate, and renewed by the host every `leaseMs/3`
 * while it lives. A host that dies stops renewing: its permits lapse at most `leaseMs` after its
 * last renewal, and the next attempt of any host drops them.
 *
 * This host's waiters queue here in order; only the first of them asks Redis at a time. It asks
 * again when a permit of the set is released anywhere in the fleet (pub/sub), or after a bounded
 * poll (a lapsed lease announces nothing). So a dead host's permits reach a waiter within
 * `leaseMs + pollMs`. Across hosts the order is not first come, first served. Main thread only.
 */
import type { FleetCalls } from "./fleet-scripts.js";

/** A permit held in the fleet; `release()` gives it back, once (later calls do nothing). */
export interface FleetLease {
  release(): void;
}

/** What an acquisition found: a permit, or the request's gate closed for `ms` more (nothing taken). */
export type PermitOutcome = { kind: "granted"; lease: FleetLease } | { kind: "gate"; ms: number };

interface Waiter {
  gateField: string;
  signal: AbortSignal;
  resolve(outcome: PermitOutcome): void;
  reject(error: unknown): void;
  onAbort(): void;
}

/** One provider's (and limit's) fleet-wide permits, as one host takes them. */
export class FleetPermits {
  readonly key: string;
  readonly #calls: FleetCalls;
  readonly #gatesKey: string;
  readonly #channel: string;
  readonly #limit: number;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #waiters: Waiter[] = [];
  /** This host's members in the set, renewed until released. */
  readonly #held = new Set<string>();
  #trying = false;
  /** A release was announced while an attempt was in flight: its "full" answer may be stale. */
  #woken = false;
  #poll: NodeJS.Timeout | undefined;
  #inUse: number | undefined;

  /**
   * @param names the set's key, the gates hash (its fields are gate keys) and the channel a
   *   release is announced on.
   */
  constructor(
    calls: FleetCalls,
    names: { key: string; gates: string; channel: string },
    limit: number,
    leaseMs: number,
  ) {
    this.#calls = calls;
    this.key = names.key;
    this.#gatesKey = names.gates;
    this.#channel = names.channel;
    this.#limit = limit;
    this.#leaseMs = leaseMs;
    this.#pollMs = Math.min(250, Math.floor(leaseMs / 4));
  }

  /** Fleet-wide permits held, as of this host's last answer from Redis (undefined before one). */
  get inUse(): number | undefined {
    return this.#inUse;
  }

  /** This host's requests waiting for one of these permits. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** This host's leases in the set. */
  get held(): number {
    return this.#held.size;
  }

  /**
   * Waits for a permit, or for the finding that the gate `gateField` ('' for none) is closed.
   * Rejects with the signal's reason when it aborts first (nothing is held then), and with the
   * error when Redis fails (the host has fallen back; the caller decides locally).
   */
  acquire(gateField: string, signal: AbortSignal): Promise<PermitOutcome> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<PermitOutcome>((resolve, reject) => {
      const waiter: Waiter = {
        gateField,
        signal,
        resolve: (outcome) => {
          signal.removeEventListener("abort", waiter.onAbort);
          resolve(outcome);
        },
        reject: (error) => {
          signal.removeEventListener("abort", waiter.onAbort);
          reject(error);
        },
        onAbort: () => {
          if (this.#remove(waiter)) reject(signal.reason);
        },
      };
      signal.addEventListener("abort", waiter.onAbort, { once: true });
      this.#waiters.push(waiter);
      this.#pump();
    });
  }

  /** A permit of this set was released somewhere in the fleet: the first waiter asks again. */
  wake(): void {
    if (this.#trying) this.#woken = true;
    else this.#pump();
  }

  /** Renews this host's leases (one round trip); a failure has made the host fall back. */
  async renew(): Promise<void> {
    if (this.#held.size === 0) return;
    await this.#calls.run("permitRenew", [this.key], [this.#leaseMs, this.#limit, ...this.#held]).catch(() => {});
  }

  /** Redis is lost: every waiter is rejected with `error`, to decide locally. Held leases lapse or are released later. */
  failWaiters(error: unknown): void {
    this.#stopPoll();
    for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
  }

  #pump(): void {
    if (this.#trying) return;
    const head = this.#waiters[0];
    if (head === undefined) {
      this.#stopPoll();
      return;
    }
    this.#trying = true;
    this.#woken = false;
    const member = this.#calls.member();
    this.#calls
      .run("permitAcquire", [this.key, this.#gatesKey], [this.#limit, this.#leaseMs, member, head.gateField])
      .then(
        (reply) => {
          this.#trying = false;
          const [code = 0, count = 0] = reply as number[];
          if (code === 1) {
            this.#inUse = count;
            this.#held.add(member);
            const lease = this.#lease(member);
            // Cancelled while Redis answered: the permit goes back at once, nothing is kept.
            if (this.#remove(head)) head.resolve({ kind: "granted", lease });
            else lease.release();
            this.#pump();
          } else if (code === -1) {
            if (this.#remove(head)) head.resolve({ kind: "gate", ms: count });
            this.#pump();
          } else {
            this.#inUse = count;
            if (this.#woken) this.#pump();
            else this.#schedulePoll();
          }
        },
        (error: unknown) => {
          this.#trying = false;
          this.failWaiters(error);
        },
      );
  }

  #lease(member: string): FleetLease {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#held.delete(member);
        void this.#calls.run("permitRelease", [this.key], [member, this.#channel]).then(
          (count) => {
            this.#inUse = count as number;
          },
          () => {},
        );
      },
    };
  }

  #remove(waiter: Waiter): boolean {
    const index = this.#waiters.indexOf(waiter);
    if (index < 0) return false;
    this.#waiters.splice(index, 1);
    return true;
  }

  #schedulePoll(): void {
    if (this.#poll !== undefined) return;
    this.#poll = setTimeout(() => {
      this.#poll = undefined;
      this.#pump();
    }, this.#pollMs);
    this.#poll.unref();
  }

  #stopPoll(): void {
    if (this.#poll === undefined) return;
    clearTimeout(this.#poll);
    this.#poll = undefined;
  }
}
