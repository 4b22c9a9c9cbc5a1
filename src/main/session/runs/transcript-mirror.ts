/**
 * A session's transcript on the main thread: the runtime transcript the model sees (`messages`,
 * failed attempts removed while retrying, R4) and every message the session produced
 * (`history`, stored when the session is persisted, B7). Kept on main so that a session whose
 * worker dies can be opened again on a fresh one from it (X7).
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { isRemovableFailure } from "../../../shared/failures/classify.js";
import type { SessionRecorder } from "../../session-files/session-recorder.js";
import { isWorkerGone } from "../../workers/worker-exit.js";
import type { WorkerLink } from "../../workers/worker-link.js";

/** How the mirror reaches its session's worker to repeat an edit there. */
export interface MirrorWorker {
  readonly sessionId: string;
  /** The link to the session's worker, once any restore is over. @throws the session's close error. */
  worker(): Promise<WorkerLink>;
  isClosed(): boolean;
}

/** One session's transcript and history. */
export class TranscriptMirror {
  #messages: AgentMessage[];
  readonly #history: AgentMessage[];
  readonly #recorder: SessionRecorder | undefined;
  readonly #worker: MirrorWorker;

  /** Starts from copies of `messages` and `history`. */
  constructor(
    messages: readonly AgentMessage[],
    history: readonly AgentMessage[],
    recorder: SessionRecorder | undefined,
    worker: MirrorWorker,
  ) {
    this.#messages = [...messages];
    this.#history = [...history];
    this.#recorder = recorder;
    this.#worker = worker;
  }

  /** The runtime transcript, the live array (replaced as a whole by {@link install}). */
  get messages(): AgentMessage[] {
    return this.#messages;
  }

  /** The history, the live array (never replaced). */
  get history(): AgentMessage[] {
    return this.#history;
  }

  /** A message the worker produced (or main made for a dead run) reached the transcript and the history. */
  append(message: AgentMessage): void {
    this.#messages.push(message);
    this.#history.push(message);
    this.#recorder?.history(message);
  }

  /** R4: takes a failed reply off the transcript (the history keeps it), here and in the worker. */
  async removeFailed(): Promise<void> {
    if (isRemovableFailure(this.#messages[this.#messages.length - 1])) this.#messages.pop();
    await this.#edit((link) => link.popFailed(this.#worker.sessionId));
  }

  /** Puts a removed failed reply back (a chain ended without a retry, a compaction changed nothing). */
  async restoreFailed(message: AssistantMessage): Promise<void> {
    if (this.#worker.isClosed()) return;
    this.#messages.push(message);
    await this.#edit((link) => link.call("appendMessage", this.#worker.sessionId, message));
  }

  /**
   * Messages already appended here by main (a stored run closed on resume, SPEC X7), sent to the
   * worker's transcript too, in order.
   */
  async appendInWorker(messages: readonly AgentMessage[]): Promise<void> {
    for (const message of messages) {
      await this.#edit((link) => link.call("appendMessage", this.#worker.sessionId, message));
    }
  }

  /** Installs a compacted transcript, here and in the worker. */
  async install(messages: AgentMessage[]): Promise<void> {
    this.#messages = messages;
    await this.#edit((link) => link.call("replaceMessages", this.#worker.sessionId, messages));
  }

  /**
   * A transcript edit already made here, repeated in the worker. If the worker dies meanwhile,
   * the restore rebuilds the new worker's transcript from this mirror, edit included, so the
   * death is not this edit's failure (SPEC X7). Rejects with anything else, or once the session
   * is closed.
   */
  async #edit(call: (link: WorkerLink) => Promise<unknown>): Promise<void> {
    try {
      await call(await this.#worker.worker());
    } catch (error) {
      if (!isWorkerGone(error) || this.#worker.isClosed()) throw error;
    }
  }
}
