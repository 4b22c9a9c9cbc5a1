/**
 * SPEC B8: what the sessions of one host share against retry storms: a retry budget per provider,
 * the provider gates, and the request permits of `maxConcurrentRequests`. Owned by `SessionHost`
 * on the main thread; sessions reach it through {@link SessionCoordination}, workers through
 * their link's permit messages. In a fleet (`joinFleet`) the same decisions are made fleet-wide
 * in Redis while it answers (fleet-coordination.ts); the in-memory units here keep counting this
 * host's own share, and decide alone while the host has fallen back.
 */
import { createHash } from "node:crypto";
import type { CoordinationFallbackEvent } from "../../shared/events.js";
import type { RetryBudgetSettings } from "../../shared/settings/settings.js";
import type { FleetConnection } from "../redis/fleet-connection.js";
import { FleetCoordination } from "./fleet-coordination.js";
import type { FleetLease } from "./fleet-permits.js";
import { ProviderGate } from "./provider-gate.js";
import { RequestSemaphore } from "./request-semaphore.js";
import { RetryBudget } from "./retry-budget.js";

/** The clock and sleep of the host's coordination; injected by tests. */
export interface CoordinationClock {
  /** A monotonic clock in ms. */
  now: () => number;
  /** Sleeps `ms`, rejecting with the signal's reason when it aborts. */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** A permit request of a worker, from its arrival on main to its release. */
interface PermitEntry {
  abort: AbortController;
  /** The host's own permit: always taken, so the host's share stays within the limit in a fallback too. */
  permit?: { semaphore: RequestSemaphore; id: number };
  /** The fleet's permit, in a fleet. */
  lease?: FleetLease;
}

/** What {@link HostCoordination.snapshot} reports. */
export interface CoordinationSnapshot {
  budgets: { provider: string; available: number }[];
  permits: { provider: string; inUse: number; waiting: number }[];
}

/** The host-wide budgets, gates and permits. */
export class HostCoordination {
  readonly gate: ProviderGate;
  readonly #clock: CoordinationClock;
  readonly #budgets = new Map<string, { provider: string; config: RetryBudgetSettings; budget: RetryBudget }>();
  readonly #semaphores = new Map<string, RequestSemaphore>();
  /** The provider and limit each semaphore stands for: its fleet-wide permits are keyed alike. */
  readonly #semaphoreTargets = new WeakMap<RequestSemaphore, { provider: string; limit: number }>();
  #fleet: FleetCoordination | undefined;
  /** Worker (its link) → request id → the request's permit. */
  readonly #permits = new Map<object, Map<number, PermitEntry>>();

  constructor(clock: CoordinationClock) {
    this.#clock = clock;
    this.gate = new ProviderGate(clock);
  }

  /**
   * The budget of `provider`. Sessions of one provider with the same budget settings share one;
   * a session whose settings differ gets its own (settings are normally the host's).
   */
  budget(provider: string, config: RetryBudgetSettings): RetryBudget {
    const key = `${provider}\u0000${config.ratio}\u0000${config.minPerSecond}\u0000${config.windowMs}`;
    let entry = this.#budgets.get(key);
    if (entry === undefined) {
      entry = { provider, config: { ...config }, budget: new RetryBudget(config, this.#clock.now) };
      this.#budgets.set(key, entry);
    }
    return entry.budget;
  }

  /** The permits of `provider` (with the same count; as {@link budget}, differing settings do not share). */
  semaphore(provider: string, permits: number): RequestSemaphore {
    const key = `${provider}\u0000${permits}`;
    let semaphore = this.#semaphores.get(key);
    if (semaphore === undefined) {
      semaphore = new RequestSemaphore(permits);
      this.#semaphores.set(key, semaphore);
      this.#semaphoreTargets.set(semaphore, { provider, limit: permits });
    }
    return semaphore;
  }

  /** The host's part in its fleet's coordination, once it joined one; undefined outside a fleet. */
  get fleet(): FleetCoordination | undefined {
    return this.#fleet;
  }

  /**
   * Fleet mode: from now on decisions are fleet-wide while `connection`'s Redis answers. Called
   * once, when the host's fleet connection is made; resolves once joined (or fallen back, see
   * `FleetCoordination.join`), never rejects. `announce` tells the host's sessions when decisions
   * fall back to the host and return to the fleet.
   */
  joinFleet(connection: FleetConnection, announce: (event: CoordinationFallbackEvent) => void): Promise<void> {
    const decidedAlone = (ms: number) =>
      [...this.#budgets.values()].map(({ provider, config, budget }) => ({ provider, config, ...budget.recent(ms) }));
    this.#fleet = new FleetCoordination({ connection, gate: this.gate, announce, decidedAlone });
    return this.#fleet.join();
  }

  /** The host is closing: its fleet membership stops (timers, listeners; leases given back as released). */
  leaveFleet(): void {
    this.#fleet?.leave();
  }

  /**
   * A worker asks for a permit for one model request: waits at the gate (`gateKey`, when the
   * session coordinates), then for a permit of the host and, in a fleet, one of the fleet's.
   * Resolves true once it is held for `owner`, false when the request was released (cancelled) or
   * its worker died first. Never rejects.
   */
  async requestPermit(
    owner: object,
    requestId: number,
    semaphore: RequestSemaphore,
    gateKey: string | undefined,
  ): Promise<boolean> {
    let entries = this.#permits.get(owner);
    if (entries === undefined) {
      entries = new Map();
      this.#permits.set(owner, entries);
    }
    const entry: PermitEntry = { abort: new AbortController() };
    entries.set(requestId, entry);
    try {
      if (gateKey !== undefined) await this.gate.wait(gateKey, entry.abort.signal);
      const id = await semaphore.acquire(owner, entry.abort.signal);
      if (this.#permits.get(owner)?.get(requestId) !== entry) {
        semaphore.release(id);
        return false;
      }
      entry.permit = { semaphore, id };
      const fleet = this.#fleet;
      const target = this.#semaphoreTargets.get(semaphore);
      if (fleet === undefined || target === undefined || fleet.source !== "fleet") return true;
      const lease = await fleet.acquirePermit(target.provider, target.limit, gateKey, entry.abort.signal);
      if (this.#permits.get(owner)?.get(requestId) !== entry) {
        lease?.release();
        return false;
      }
      if (lease !== undefined) entry.lease = lease;
      return true;
    } catch {
      return false;
    }
  }

  /** The request ended, or was cancelled while it waited: its permit (if any) is released, once. */
  releasePermit(owner: object, requestId: number): void {
    const entries = this.#permits.get(owner);
    const entry = entries?.get(requestId);
    if (entries === undefined || entry === undefined) return;
    entries.delete(requestId);
    if (entries.size === 0) this.#permits.delete(owner);
    entry.abort.abort();
    if (entry.permit !== undefined) entry.permit.semaphore.release(entry.permit.id);
    entry.lease?.release();
  }

  /** A worker died or was terminated: everything it held or waited for is released. */
  releaseOwner(owner: object): void {
    const entries = this.#permits.get(owner);
    if (entries === undefined) return;
    for (const requestId of [...entries.keys()]) this.releasePermit(owner, requestId);
  }

  /**
   * B9: the host's own budgets and permits as plain data, for its telemetry's gauges (read at each
   * collection). One row per budget and per semaphore; providers repeat when settings differ.
   */
  snapshot(): CoordinationSnapshot {
    const budgets = [...this.#budgets.values()].map(({ provider, budget }) => ({
      provider,
      available: budget.state().available,
    }));
    const permits = [...this.#semaphores.entries()].map(([key, semaphore]) => ({
      provider: key.slice(0, key.indexOf("\u0000")),
      inUse: semaphore.inUse,
      waiting: semaphore.waiting,
    }));
    return { budgets, permits };
  }

  /** Permits held by all workers: for tests and diagnostics. */
  get permitsHeld(): number {
    let held = 0;
    for (const entries of this.#permits.values()) for (const entry of entries.values()) if (entry.permit) held++;
    return held;
  }
}

/**
 * The gate key of a provider endpoint and key: a limit is per account, so two keys of one
 * provider have two gates. The key itself is never kept, only a short hash of it.
 */
export function gateKey(provider: string, baseUrl: string | undefined, apiKey: string | undefined): string {
  const key = apiKey === undefined ? "" : createHash("sha256").update(apiKey).digest("hex").slice(0, 16);
  return `${provider}\u0000${baseUrl ?? ""}\u0000${key}`;
}
