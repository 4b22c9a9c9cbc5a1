/**
 * SPEC B8: one session's view of the host's coordination, bound to the session's current
 * provider, endpoint, key and settings, each read at the moment of use (a `setModel` or a toggle
 * applies to the next decision). Every method is a no-op when its setting is off, so a session
 * with the defaults behaves as in pi.
 */
import type { ProviderGateWaitEvent } from "../../shared/events.js";
import type { RetrySettings } from "../../shared/settings.js";
import type { RetryCoordination } from "../retry/retry-controller.js";
import { gateKey, type HostCoordination } from "./host-coordination.js";
import { describeBudget, type RetryBudgetState } from "./retry-budget.js";

/** What the session tells its coordination about itself. */
export interface SessionCoordinationView {
  provider(): string;
  baseUrl(): string | undefined;
  apiKey(): string | undefined;
  settings(): RetrySettings;
  emit(event: ProviderGateWaitEvent): void;
}

/** B8 state for `get_state`: present only for what the session's settings turn on. */
export interface CoordinationState {
  /** The provider's budget now (`retry.budget` set). */
  retryBudget?: RetryBudgetState;
  /** The provider gate (`retry.coordinate` on): closed, and for how long still. */
  providerGate?: { closed: boolean; reopensInMs: number };
  /** Model requests of the provider holding a permit, host-wide (`retry.maxConcurrentRequests` set). */
  requestPermits?: { limit: number; inUse: number; waiting: number };
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
    if (config !== false) this.#host.budget(this.#view.provider(), config).deposit();
  }

  withdrawRetry(): string | undefined {
    const config = this.#view.settings().budget;
    if (config === false) return undefined;
    const provider = this.#view.provider();
    if (this.#host.budget(provider, config).tryWithdraw()) return undefined;
    return `Retry budget exhausted for provider "${provider}" (retry.budget: ${describeBudget(config)})`;
  }

  closeGate(ms: number): void {
    if (this.#view.settings().coordinate) this.#host.gate.close(this.#gateKey(), ms);
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

  /** The gate key of the session's current endpoint and key, when it coordinates (for permits). */
  get permitGateKey(): string | undefined {
    return this.#view.settings().coordinate ? this.#gateKey() : undefined;
  }

  state(): CoordinationState {
    const settings = this.#view.settings();
    const provider = this.#view.provider();
    const state: CoordinationState = {};
    if (settings.budget !== false) state.retryBudget = this.#host.budget(provider, settings.budget).state();
    if (settings.coordinate) {
      const left = Math.ceil(this.#host.gate.remainingMs(this.#gateKey()));
      state.providerGate = { closed: left > 0, reopensInMs: left };
    }
    if (settings.maxConcurrentRequests !== undefined) {
      const semaphore = this.#host.semaphore(provider, settings.maxConcurrentRequests);
      state.requestPermits = {
        limit: settings.maxConcurrentRequests,
        inUse: semaphore.inUse,
        waiting: semaphore.waiting,
      };
    }
    return state;
  }

  #gateKey(): string {
    return gateKey(this.#view.provider(), this.#view.baseUrl(), this.#view.apiKey());
  }
}
