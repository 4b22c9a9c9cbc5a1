/**
 * What a prompt waits for before its run is posted: its turn on the host's pacer (only when a
 * burst of prompts leaves the current slice of the main thread no room; workers/turn-pacer.ts),
 * then B7's write-ahead of its user message (when the session is persisted), then B8's provider
 * gate while a rate limit closes it. `abort()` ends any of these waits and the prompt then
 * settles as aborted with no request sent. At most one prompt waits at a time (the session's live
 * one); the live prompt does not settle while it waits.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { LifelineError } from "../../shared/errors.js";
import { PromptGate } from "../coordination/prompt-gate.js";
import type { SessionCoordination } from "../coordination/session-coordination.js";
import { PromptWriteAhead } from "../session-files/prompt-write-ahead.js";
import type { SessionRecorder } from "../session-files/session-recorder.js";
import type { PacedTurn, TurnPacer } from "../workers/turn-pacer.js";

/** What becomes of a prompt once its waits are over; each is called only while `live()`. */
export interface Admitted {
  /** Whether the prompt is still the session's live one (checked once each wait is over). */
  live(): boolean;
  /** Every wait is over: the prompt's run, of its user `message`, may be posted. */
  start(message: AgentMessage): void;
  /** abort() ended a wait; `failure` says which (the prompt's `errorMessage`). */
  aborted(failure: string): void;
  /** The write-ahead failed: the prompt rejects with `error`. */
  failed(error: LifelineError): void;
}

/**
 * A prompt to admit: what becomes of it, and what the admission reads of it on its turn. One
 * object per prompt (a class of the session's runner), rather than closures: see {@link PromptTurn}.
 */
export interface AdmissionPrompt extends Admitted {
  /** Builds the prompt's user message, on its turn (deferred bash messages go in first). */
  message(): AgentMessage;
  /** The caller's id of the prompt, stored with its user message. */
  readonly promptId: string | undefined;
}

/**
 * A prompt's wait for its turn on the pacer, as the pacer's queue holds it. `prompt()` queues one
 * inside the caller's task (a loop of thousands of calls), where whatever it allocates survives
 * until its turn: one object, rather than a closure with its context and a handle (P1 at 10,000
 * sessions, docs/performance.md "(m)").
 */
class PromptTurn implements PacedTurn {
  cancelled = false;
  readonly #admission: PromptAdmission;
  readonly prompt: AdmissionPrompt;

  constructor(admission: PromptAdmission, prompt: AdmissionPrompt) {
    this.#admission = admission;
    this.prompt = prompt;
  }

  paced(): void {
    this.#admission.onTurn(this);
  }
}

/** One session's waits before a prompt's first model request. */
export class PromptAdmission {
  /** B7: stores each prompt's user message before its run is posted; undefined when not persisted. */
  readonly #writeAhead: PromptWriteAhead | undefined;
  /** B8: the live prompt waits at its provider's closed gate before its first request. */
  readonly #gate: PromptGate;
  /** The host's pacer of bursts; undefined: every prompt goes on at once. */
  readonly #pacer: TurnPacer | undefined;
  /** The live prompt's wait for its turn on the pacer. */
  #turn: PromptTurn | undefined;

  constructor(recorder: SessionRecorder | undefined, coordination: SessionCoordination | undefined, pacer?: TurnPacer) {
    this.#writeAhead = recorder === undefined ? undefined : new PromptWriteAhead(recorder);
    this.#gate = new PromptGate(coordination);
    this.#pacer = pacer;
  }

  /** A prompt waits for its turn, is being written ahead or waits at the gate: it has sent nothing yet. */
  get waiting(): boolean {
    return this.#turn !== undefined || this.#writeAhead?.writing === true || this.#gate.waiting;
  }

  /**
   * Admits a prompt: on its turn, its user message is built by `prompt.message()` (so a burst of
   * `prompt()` calls costs its loop little), stored first (marked with `prompt.promptId` if given),
   * then taken through the gate. A prompt no longer live on its turn builds nothing.
   */
  admit(prompt: AdmissionPrompt): void {
    if (this.#pacer === undefined) {
      this.#store(prompt.message(), prompt, prompt.promptId);
      return;
    }
    const turn = new PromptTurn(this, prompt);
    if (!this.#pacer.enqueue(turn)) this.#turn = turn;
  }

  /** The pacer gave `turn` its turn (PromptTurn.paced; not called once it is cancelled). */
  onTurn(turn: PromptTurn): void {
    if (this.#turn === turn) this.#turn = undefined;
    const prompt = turn.prompt;
    if (prompt.live()) this.#store(prompt.message(), prompt, prompt.promptId);
  }

  #store(message: AgentMessage, admitted: Admitted, promptId: string | undefined): void {
    const writeAhead = this.#writeAhead;
    if (writeAhead === undefined) {
      this.#pass(message, admitted);
      return;
    }
    // B7 write-ahead: the run is posted only once the user message is stored.
    writeAhead.write(
      message,
      {
        live: () => admitted.live(),
        stored: () => this.#pass(message, admitted),
        aborted: () => admitted.aborted("Aborted before the model request was sent."),
        failed: (error) => admitted.failed(error),
      },
      promptId,
    );
  }

  /**
   * B8: the prompt's first model attempt is counted toward the provider's retry budget, and held
   * first at the provider's gate while a rate limit closes it.
   */
  #pass(message: AgentMessage, admitted: Admitted): void {
    this.#gate.admit({
      live: () => admitted.live(),
      start: () => admitted.start(message),
      aborted: () => admitted.aborted("Aborted while waiting at the provider gate, before the model request was sent."),
    });
  }

  /** The session's abort(): a wait for a turn or at the gate ends now; the write in progress ends as aborted once over. */
  abort(): void {
    const turn = this.#turn;
    if (turn !== undefined && !turn.cancelled) {
      turn.cancelled = true;
      // Ends as a gate wait does: on a microtask, after the rest of abort(); waiting until then.
      queueMicrotask(() => {
        if (this.#turn === turn) this.#turn = undefined;
        if (turn.prompt.live()) turn.prompt.aborted("Aborted before the model request was sent.");
      });
    }
    this.#writeAhead?.abort();
    this.#gate.abort();
  }

  /** The session closed: a turn or gate wait ends now (a write in progress finds the prompt no longer live). */
  close(): void {
    if (this.#turn !== undefined) this.#turn.cancelled = true;
    this.#turn = undefined;
    this.#gate.abort();
  }
}
