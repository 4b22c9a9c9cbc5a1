/**
 * B7's write-ahead for a prompt: its user message is stored before its run is posted, so a
 * restart never loses a prompt the model may have seen.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { LifelineError } from "../../shared/errors.js";
import type { SessionRecorder } from "./session-recorder.js";

/** What becomes of a prompt once its user message is stored (or could not be). */
export interface WriteAheadEnd {
  /** Whether the prompt is still the session's live one (checked once the write is over). */
  live(): boolean;
  /** Stored: the prompt's run may be posted. */
  stored(): void;
  /** abort() came meanwhile: the run never starts. */
  aborted(): void;
  /** The write failed (ERR_SESSION_FILE unless the recorder's error has a code): the prompt rejects. */
  failed(error: LifelineError): void;
}

/** One session's write-ahead; at most one prompt is being written at a time. */
export class PromptWriteAhead {
  readonly #recorder: SessionRecorder;
  #ahead: { aborted: boolean } | undefined;

  constructor(recorder: SessionRecorder) {
    this.#recorder = recorder;
  }

  /** A prompt's user message is being stored: its run is not posted yet. */
  get writing(): boolean {
    return this.#ahead !== undefined;
  }

  /** abort() came: the prompt being written ends as aborted once its write is over. */
  abort(): void {
    if (this.#ahead !== undefined) this.#ahead.aborted = true;
  }

  /**
   * Stores `message` (marked with `promptId` if given, see `SessionRecorder.prompt`), then tells
   * `end` how it went (only while the prompt is live).
   */
  write(message: AgentMessage, end: WriteAheadEnd, promptId?: string): void {
    const ahead = { aborted: false };
    this.#ahead = ahead;
    this.#recorder.prompt(message, promptId).then(
      () => {
        if (this.#ahead === ahead) this.#ahead = undefined;
        if (!end.live()) return;
        if (ahead.aborted) end.aborted();
        else end.stored();
      },
      (error: unknown) => {
        if (this.#ahead === ahead) this.#ahead = undefined;
        if (!end.live()) return;
        end.failed(error instanceof LifelineError ? error : new LifelineError("ERR_SESSION_FILE", String(error)));
      },
    );
  }
}
