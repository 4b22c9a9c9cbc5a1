/**
 * A session's steering, from the caller's side: `queueMessage()` delivers a user message into the
 * live prompt's agent loop (pi's steering and follow-up queues), `setQueueMode()` sets how each
 * queue delivers, `pendingMessageCount` counts what was sent and not yet seen in the transcript.
 * It owns the rules of when a message may be sent (a live prompt is needed; a compaction makes the
 * session busy) and the count (`QueuedMessages`); the worker calls, whose effects a restore keeps,
 * are the session link's (session-link.ts).
 */
import { LifelineError, SessionBusyError } from "../../../shared/errors.js";
import type { QueueMode } from "../../../shared/wire/protocol.js";
import { assertQueueKind, invalidMessageText, queueModeSchema, validate } from "../../config/option-schemas.js";
import type { PromptRunner } from "../prompt/prompt-runner.js";
import type { QueuedMessages, QueueKind } from "./queued-messages.js";

/** One session's steering. Built by `AgentSession`; main thread only. */
export class SessionSteering {
  readonly #runner: PromptRunner;
  readonly #queued: QueuedMessages;

  /** @param queued the count the runner and its link keep too (the same object). */
  constructor(runner: PromptRunner, queued: QueuedMessages) {
    this.#runner = runner;
    this.#queued = queued;
  }

  /** Steering and follow-up messages not yet delivered to the model. */
  get pending(): number {
    return this.#queued.count;
  }

  /** The queues' modes as the worker has them. */
  get modes(): Readonly<Record<QueueKind, QueueMode>> {
    return this.#runner.link.queueModes;
  }

  /**
   * `queueMessage()`: sends `text` to the worker's `kind` queue once the session is known to have a
   * live prompt. @throws the session's close error; ERR_INVALID_OPTIONS for a bad `kind` or text,
   * or when no prompt is live; SessionBusyError while only a compaction runs; the worker's refusal.
   */
  async send(kind: QueueKind, text: string): Promise<void> {
    const runner = this.#runner;
    if (runner.closed !== undefined) throw runner.closed;
    assertQueueKind(kind);
    const badText = invalidMessageText(kind, text);
    if (badText !== undefined) throw badText;
    if (!runner.hasLivePrompt && runner.isCompacting) {
      throw new SessionBusyError(`Session ${runner.sessionId} is compacting; wait for compaction_end, then prompt.`);
    }
    if (!runner.hasLivePrompt) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `Nothing to ${kind}: session ${runner.sessionId} is idle; use prompt().`,
      );
    }
    await runner.link.queueMessage(kind, text);
  }

  /** `setQueueMode()`. @throws the session's close error; ERR_INVALID_OPTIONS for another kind or mode. */
  async setMode(kind: QueueKind, mode: QueueMode): Promise<void> {
    if (this.#runner.closed !== undefined) throw this.#runner.closed;
    validate(queueModeSchema, { kind, mode }, "setQueueMode() arguments", "arguments");
    await this.#runner.link.setQueueMode(kind, mode);
  }
}
