/**
 * A session's thinking level on the main thread, with pi's rules: the levels the model supports
 * (pi-ai's rule, shared/thinking.ts: `off` alone without reasoning, `xhigh` only where the model names it), the cycle
 * through them, the level carried to the next model, and what a change does: pi's
 * `thinking_level_change` entry in the session file, the session's `defaultThinkingLevel` (pi
 * saves it to the settings file; lifeline keeps it for the session, B5) and the
 * `thinking_level_changed` event. The level is the one the worker applied: the session adopts
 * the worker's answer (session-link.ts), so what it reports is what its requests carry.
 */
import type { Settings } from "../../../shared/settings/settings.js";
import { supportedThinkingLevels, type ThinkingLevel } from "../../../shared/thinking.js";
import type { SessionRecorder } from "../../session-files/session-recorder.js";
import type { SessionSetup } from "../session-setup.js";
import type { SessionListeners } from "./session-listeners.js";
import type { SessionModel } from "./session-model.js";

/** One session's thinking level. */
export class SessionThinking {
  #level: ThinkingLevel;
  readonly #model: SessionModel;
  readonly #settings: Settings;
  readonly #events: SessionListeners;
  readonly #recorder: SessionRecorder | undefined;

  /** @param level what the worker applied when it opened the session. */
  constructor(level: ThinkingLevel, parts: { model: SessionModel; events: SessionListeners; setup: SessionSetup }) {
    this.#level = level;
    this.#model = parts.model;
    this.#settings = parts.setup.start.settings;
    this.#events = parts.events;
    this.#recorder = parts.setup.host.recorder;
  }

  /** The level of the session's next model request. */
  get level(): ThinkingLevel {
    return this.#level;
  }

  /** pi's `cycleThinkingLevel` target: the next supported level after the current one; undefined without reasoning. */
  next(): ThinkingLevel | undefined {
    if (this.#model.current.reasoning !== true) return undefined;
    const levels = supportedThinkingLevels(this.#model.current);
    return levels[(levels.indexOf(this.#level) + 1) % levels.length];
  }

  /**
   * The level the session carries to another model (pi's rule): its own on a model with
   * reasoning; coming from one without (where it is `off`), the session's `defaultThinkingLevel`.
   */
  forModelSwitch(): ThinkingLevel {
    return this.#model.current.reasoning === true ? this.#level : this.#settings.defaultThinkingLevel;
  }

  /**
   * The worker now applies `level` (to the session's current model). When it differs from the
   * session's: recorded (pi's entry), kept as the session's default unless it is the `off` of a
   * model without reasoning (as pi keeps it), and `thinking_level_changed` is emitted.
   */
  adopt(level: ThinkingLevel): void {
    if (level === this.#level) return;
    this.#level = level;
    this.#recorder?.thinkingLevelChange(level);
    if (this.#model.current.reasoning === true || level !== "off") this.#settings.defaultThinkingLevel = level;
    this.#events.emit({ type: "thinking_level_changed", level });
  }
}
