/**
 * SPEC B8: one session's view of the host's coordination, bound to the session's current
 * provider, endpoint, key and settings, each read at the moment of use (a `setModel` or a toggle
 * applies to the next decision). Every method is a no-op when its setting is off, so a session
 * with the defaults behaves as in pi. In a fleet, each decision goes to the fleet while the host is
 * in it (`source` says so in `state()`), and the host's own units count along, so that a fallback
 * starts from this host's recent traffic.
 */
import type { ProviderGateWaitEvent } from "../../shared/events.js";
import type { RetrySettings } from "../../shared/settings/settings.js";
import type { RetryCoordination } from "../retry/retry-controller.js";
import type { CoordinationSource } from "./fleet-coordination.js";
import { gateKey, type HostCoordination } from "./host-coordination.js";
import type { PermitTarget } from "./permit-bridge.js";
import { describeBudget, type RetryBudgetState } from "./retry-budget.js";

/** What the session tells its coordination about itself. */
export interface SessionCoordinationView {
  provider(): string;
  baseUrl(): string | undefined;
  apiKey(): string | undefined;
  settings(): RetrySettings;
  emit(event: ProviderGateWaitEvent): void;
}

/**
 * Where a decision is made, in a fleet: `fleet` (in Redis, fleet-wide) or `local` (the host's own,
 * while it has fallen back). Absent outside a fleet, where every decision is the host's.
 */
interface Sourced {
  source?: CoordinationSource;
}

/** B8 state for `get_state`: present only for what the session's settings turn on. */
export interface CoordinationState {
  /**
   * The provider's budget now (`retry.budget` set); in a fleet, fleet-wide as of this host's last
   * answer from Redis (refreshed when older than 250 ms).
   */
  retryBudget?: RetryBudgetState & Sourced;
  /** The provider gate (`retry.coordinate` on): closed, and for how long still. */
  providerGate?: { closed: boolean; reopensInMs: number } & Sourced;
  /**
   * Model requests of the provider holding a permit, host-wide (`retry.maxConcurrentRequests` set);
   * in a fleet, `inUse` is fleet-wide as of this host's last answer from Redis, `waiting` this host's.
   */
  requestPermits?: { limit: number; inUse: number; waiting: number } & Sourced;
}

/** The coordination a session's retry controller and prompts use. */
export class SessionCoordination implements RetryCoordination {
  readonly #host: HostCoordination;
  readonly #view: SessionCoordinationView;

  constructor(host: HostCoordination, view: SessionCoordinationView) {
    this.#host = host;
    this.#view = view;
  }

  /** A prompt's first model attempt is about to be sent: counts toward the budget's ratio. */
  depositFirstAttempt(): void {
    const config = this.#view.settings().budget;
    if (config === false) return;
    const provider = this.#view.provider();
    this.#host.budget(provider, config).deposit();
    const fleet = this.#host.fleet;
    if (fleet?.source === "fleet") fleet.budget(provider, config).deposit();
  }

  /** Synchronous outside a fleet; in one, the fleet's answer (the host's own budget if Redis fails). */
  withdrawRetry(): string | undefined | Promise<string | undefined> {
    const config = this.#view.settings().budget;
    if (config === false) return undefined;
    const provider = this.#view.provider();
    const local = this.#host.budget(provider, config);
    const refusal = (scope = "") =>
      `Retry budget exhausted for provider "${provider}"${scope} (retry.budget: ${describeBudget(config)})`;
    const fleet = this.#host.fleet;
    if (fleet?.source !== "fleet") return local.tryWithdraw() ? undefined : refusal();
    return fleet
      .budget(provider, config)
      .withdraw()
      .then((allowed) => {
        if (allowed === undefined) return local.tryWithdraw() ? undefined : refusal();
        if (!allowed) return refusal(` across fleet "${fleet.name}"`);
        local.withdraw();
        return undefined;
      });
  }

  closeGate(ms: number): void {
    if (!this.#view.settings().coordinate) return;
    const key = this.#gateKey();
    this.#host.gate.close(key, ms);
    const fleet = this.#host.fleet;
    if (fleet?.source === "fleet") fleet.closeGate(key, ms);
  }

  waitAtGate(signal: AbortSignal, before: "retry" | "prompt" = "retry"): Promise<void> {
    if (!this.#view.settings().coordinate) return Promise.resolve();
    const provider = this.#view.provider();
    return this.#host.gate.wait(this.#gateKey(), signal, (waitMs) =>
      this.#view.emit({ type: "provider_gate_wait", provider, before, waitMs }),
    );
  }

  /** True when a new prompt would wait at the gate now. */
  get gateClosed(): boolean {
    return this.#view.settings().coordinate && this.#host.gate.remainingMs(this.#gateKey()) > 0;
  }

  /** Whether the session's settings turn on any of the three (a fleet's fallback then concerns it). */
  get inUse(): boolean {
    const settings = this.#view.settings();
    return settings.budget !== false || settings.coordinate || settings.maxConcurrentRequests !== undefined;
  }

  /**
   * For the host's permit requests: the provider, its permit count and the gate key (when the
   * session coordinates) of the session's model requests; undefined when `retry.maxConcurrentRequests`
   * is not set.
   */
  permitTarget(): PermitTarget | undefined {
    const settings = this.#view.settings();
    const limit = settings.maxConcurrentRequests;
    if (limit === undefined) return undefined;
    return { provider: this.#view.provider(), limit, gateKey: settings.coordinate ? this.#gateKey() : undefined };
  }

  state(): CoordinationState {
    const settings = this.#view.settings();
    const provider = this.#view.provider();
    const fleet = this.#host.fleet;
    const source = fleet?.source;
    const sourced = source === undefined ? {} : { source };
    // Until Redis first answered for a budget or permit set, the host's own count, said to be local.
    const local = source === undefined ? {} : { source: "local" as const };
    const state: CoordinationState = {};
    if (settings.budget !== false) {
      const fleetState = source === "fleet" ? fleet?.budget(provider, settings.budget).state() : undefined;
      state.retryBudget =
        fleetState === undefined
          ? { ...this.#host.budget(provider, settings.budget).state(), ...local }
          : { ...fleetState, source: "fleet" };
    }
    if (settings.coordinate) {
      const left = Math.ceil(this.#host.gate.remainingMs(this.#gateKey()));
      state.providerGate = { closed: left > 0, reopensInMs: left, ...sourced };
    }
    const limit = settings.maxConcurrentRequests;
    if (limit !== undefined) {
      const semaphore = this.#host.semaphore(provider, limit);
      const permits = source === "fleet" ? fleet?.permits(provider, limit) : undefined;
      const fleetInUse = permits?.inUse;
      state.requestPermits =
        permits === undefined || fleetInUse === undefined
          ? { limit, inUse: semaphore.inUse, waiting: semaphore.waiting, ...local }
          : { limit, inUse: fleetInUse, waiting: semaphore.waiting + permits.waiting, source: "fleet" };
    }
    return state;
  }

  #gateKey(): string {
    return gateKey(this.#view.provider(), this.#view.baseUrl(), this.#view.apiKey());
  }
}
