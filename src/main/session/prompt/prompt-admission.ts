/**
 * The steps of a prompt between `prompt()` and its first run, in order: its turn on the host's
 * pacer (only when a burst of prompts leaves the current slice of the main thread no room;
 * workers/turn-pacer.ts), its user message built (deferred bash messages go in first), B7's
 * write-ahead of that message (when the session is persisted), B8's provider gate while a rate
 * limit closes it, and then the run, posted by `SessionRuns.start`. Each step calls the next; how
 * the prompt ends when a step cannot go on is told to `SessionRuns` too (`endUnsent`, `refuse`),
 * which reports it to the prompt runner as it reports the end of any run.
 *
 * `abort()` ends any wait and the prompt then settles as aborted with no request sent. At most one
 * prompt is admitted at a time (the session's live one); the live prompt does not settle while it
 * waits. A prompt that stopped being live meanwhile (settled, rejected, the session closed: its
 * `over` mark) goes no further. Main thread only.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { LifelineError } from "../../../shared/errors.js";
import type { SessionCoordination } from "../../coordination/session-coordination.js";
import type { SessionRecorder } from "../../session-files/session-recorder.js";
import type { PacedTurn, TurnPacer } from "../../workers/turn-pacer.js";
import type { SessionRuns } from "../runs/session-runs.js";
import type { PendingPrompt } from "./pending-prompt.js";
import type { PromptRecords } from "./prompt-records.js";

/** What the admission uses, each a part below it or beside it. */
export interface AdmissionParts {
  /** B7: stores each prompt's user message before its run; undefined when the session is not persisted. */
  readonly recorder: SessionRecorder | undefined;
  /** B8: the session's view of the host's budget and gate; undefined: no gate, no budget. */
  readonly coordination: SessionCoordination | undefined;
  /** The host's pacer of bursts; undefined: every prompt goes on at once. */
  readonly pacer: TurnPacer | undefined;
  /** Puts deferred bash messages into the transcript (session-bash.ts), just before a prompt's user message. */
  readonly beforePrompt: () => void;
  /** Where each admitted prompt's id is marked stored (prompt-records.ts). */
  readonly records: PromptRecords;
  /** The session's runs: the admitted prompt's first run is posted there. */
  readonly runs: SessionRuns;
}

/**
 * A prompt waiting for its turn on the pacer, as the pacer's queue holds it. `prompt()` queues one
 * inside the caller's task (a loop of thousands of calls), where whatever it allocates survives
 * until its turn: one object, rather than a closure with its context and a handle (P1 at 10,000
 * sessions, docs/performance.md "(m)"). Measured: about 830 bytes per `prompt()` of a burst of
 * 5,000 with this object, about 950 with `pacer.run(closure)` (`node --expose-gc
 * --max-semi-space-size=256 bench/stall-scale.mjs alloc 5000`, three runs each).
 */
class PromptTurn implements PacedTurn {
  cancelled = false;
  readonly #admission: PromptAdmission;
  readonly pending: PendingPrompt;
  readonly text: string;

  constructor(admission: PromptAdmission, pending: PendingPrompt, text: string) {
    this.#admission = admission;
    this.pending = pending;
    this.text = text;
  }

  paced(): void {
    this.#admission.onTurn(this);
  }
}

const ABORTED_BEFORE_REQUEST = "Aborted before the model request was sent.";
const ABORTED_AT_GATE = "Aborted while waiting at the provider gate, before the model request was sent.";

/** One session's steps before a prompt's first model request. */
export class PromptAdmission {
  readonly #parts: AdmissionParts;
  /** The live prompt's wait for its turn on the pacer. */
  #turn: PromptTurn | undefined;
  /** The live prompt's write-ahead in progress; `aborted` once abort() came meanwhile. */
  #writing: { aborted: boolean } | undefined;
  /** The live prompt's wait at the provider's closed gate. */
  #gateWait: AbortController | undefined;

  constructor(parts: AdmissionParts) {
    this.#parts = parts;
  }

  /** A prompt waits for its turn, is being written ahead or waits at the gate: it has sent nothing yet. */
  get waiting(): boolean {
    return this.#turn !== undefined || this.#writing !== undefined || this.#gateWait !== undefined;
  }

  /**
   * Step 1, the turn: the prompt goes on now when the pacer's slice has room, else on its turn
   * (its message is built only then, so a burst of `prompt()` calls costs its loop little).
   */
  admit(pending: PendingPrompt, text: string): void {
    const pacer = this.#parts.pacer;
    if (pacer === undefined) {
      this.#store(pending, this.#message(text));
      return;
    }
    const turn = new PromptTurn(this, pending, text);
    if (!pacer.enqueue(turn)) this.#turn = turn;
  }

  /** The pacer gave `turn` its turn (PromptTurn.paced; not called once it is cancelled). */
  onTurn(turn: PromptTurn): void {
    if (this.#turn === turn) this.#turn = undefined;
    if (turn.pending.over !== true) this.#store(turn.pending, this.#message(turn.text));
  }

  /** Step 2: the user message, after any deferred bash messages, built here so it can be stored first. */
  #message(text: string): AgentMessage {
    this.#parts.beforePrompt();
    return { role: "user", content: [{ type: "text", text }], timestamp: Date.now() };
  }

  /** Step 3, B7's write-ahead: the run is posted only once the user message is stored. */
  #store(pending: PendingPrompt, message: AgentMessage): void {
    const recorder = this.#parts.recorder;
    if (recorder === undefined) {
      this.#pass(pending, message);
      return;
    }
    const writing = { aborted: false };
    this.#writing = writing;
    recorder.prompt(message, pending.id).then(
      () => {
        if (this.#writing === writing) this.#writing = undefined;
        if (pending.over === true) return;
        if (writing.aborted) this.#endUnsent(pending, ABORTED_BEFORE_REQUEST);
        else this.#pass(pending, message);
      },
      (error: unknown) => {
        if (this.#writing === writing) this.#writing = undefined;
        if (pending.over === true) return;
        this.#parts.runs.refuse(
          error instanceof LifelineError ? error : new LifelineError("ERR_SESSION_FILE", String(error)),
        );
      },
    );
  }

  /**
   * Step 4, B8: the prompt's first model attempt is counted toward the provider's retry budget,
   * and held first at the provider's gate while a rate limit closes it.
   */
  #pass(pending: PendingPrompt, message: AgentMessage): void {
    const coordination = this.#parts.coordination;
    if (coordination === undefined || !coordination.gateClosed) {
      coordination?.depositFirstAttempt();
      this.#post(pending, message);
      return;
    }
    const wait = new AbortController();
    this.#gateWait = wait;
    coordination.waitAtGate(wait.signal, "prompt").then(
      () => {
        if (this.#gateWait === wait) this.#gateWait = undefined;
        if (pending.over === true) return;
        coordination.depositFirstAttempt();
        this.#post(pending, message);
      },
      () => {
        if (this.#gateWait === wait) this.#gateWait = undefined;
        if (pending.over !== true) this.#endUnsent(pending, ABORTED_AT_GATE);
      },
    );
  }

  /** Step 5: every wait is over; the prompt's id is marked stored and its first run is posted. */
  #post(pending: PendingPrompt, message: AgentMessage): void {
    this.#parts.records.stored(pending.id);
    void this.#parts.runs.start({ kind: "prompt", message });
  }

  /** abort() ended a wait: the prompt settles as aborted, with no request sent. */
  #endUnsent(pending: PendingPrompt, failure: string): void {
    pending.abortedEarly = true;
    pending.failure = failure;
    this.#parts.runs.endUnsent();
  }

  /** The session's abort(): a wait for a turn or at the gate ends now; the write in progress ends as aborted once over. */
  abort(): void {
    const turn = this.#turn;
    if (turn !== undefined && !turn.cancelled) {
      turn.cancelled = true;
      // Ends as a gate wait does: on a microtask, after the rest of abort(); waiting until then.
      queueMicrotask(() => {
        if (this.#turn === turn) this.#turn = undefined;
        if (turn.pending.over !== true) this.#endUnsent(turn.pending, ABORTED_BEFORE_REQUEST);
      });
    }
    if (this.#writing !== undefined) this.#writing.aborted = true;
    this.#gateWait?.abort();
  }

  /** The session closed: a turn or gate wait ends now (a write in progress finds the prompt over). */
  close(): void {
    if (this.#turn !== undefined) this.#turn.cancelled = true;
    this.#turn = undefined;
    this.#gateWait?.abort();
  }
}
