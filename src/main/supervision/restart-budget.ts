/**
 * SPEC X7's restart intensity, as in OTP supervisors: a session may be restarted at most
 * `maxRestarts` times within any `windowMs`; one more restart in the window gives it up.
 * A pure unit with an injected clock.
 */
import type { SupervisionSettings } from "../../shared/settings/settings.js";

/** One session's record of the restarts it was blamed for. */
export class RestartBudget {
  readonly #settings: () => SupervisionSettings;
  readonly #now: () => number;
  /** When each charged restart happened, oldest first, within the window. */
  #charged: number[] = [];

  /** @param settings read at each charge, so a session's settings apply as they are then. */
  constructor(settings: () => SupervisionSettings, now: () => number = Date.now) {
    this.#settings = settings;
    this.#now = now;
  }

  /** Records a restart; returns false when it is one too many for the window (give up). */
  charge(): boolean {
    const { maxRestarts, windowMs } = this.#settings();
    const now = this.#now();
    this.#charged = this.#charged.filter((at) => now - at < windowMs);
    this.#charged.push(now);
    return this.#charged.length <= maxRestarts;
  }
}
