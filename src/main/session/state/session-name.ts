/**
 * A session's display name, as pi keeps it: a `session_info` entry in the session file (the last
 * one counts, a blank one clears it), read back on resume and shown by `listSessions()` and the
 * session picker. Setting it emits pi's `session_info_changed`.
 */
import { LifelineError } from "../../../shared/errors.js";
import type { SessionEvent } from "../../../shared/events.js";
import type { SessionRecorder } from "../../session-files/session-recorder.js";

/** One session's name. Main thread only. */
export class SessionName {
  #name: string | undefined;
  readonly #recorder: SessionRecorder | undefined;
  /** Where `session_info_changed` goes (the session's listeners; held as the object, P4). */
  readonly #events: { emit(event: SessionEvent): void };

  constructor(
    start: string | undefined,
    recorder: SessionRecorder | undefined,
    events: { emit(event: SessionEvent): void },
  ) {
    this.#name = start;
    this.#recorder = recorder;
    this.#events = events;
  }

  get current(): string | undefined {
    return this.#name;
  }

  /**
   * Names the session `name`, trimmed: stored in the background (when persisted) and announced.
   * @throws LifelineError ERR_INVALID_OPTIONS for a name that is not a string or is blank, with
   *   pi's text ("Session name cannot be empty").
   */
  set(name: unknown): void {
    const trimmed = typeof name === "string" ? name.trim() : "";
    if (trimmed === "") {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        "Session name cannot be empty: pass the name as a non-blank string.",
      );
    }
    this.#name = trimmed;
    this.#recorder?.sessionInfo(trimmed);
    this.#events.emit({ type: "session_info_changed", name: trimmed });
  }
}
