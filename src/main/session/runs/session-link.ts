/**
 * A session's link to its worker: the one it has now, the session's client attached to it, and
 * calls to the worker that wait out a restore in progress and fail once the session is closed.
 * It owns the session's `SessionRestore` (X7): when the worker dies, the restore ends what ran
 * (through the prompt runner), opens the session again on a fresh worker from the main-side
 * transcript (`reopen`) and makes that worker's link the session's (`adopt`). The session's own
 * calls outside its runs are made here too: a model switch, a thinking level and steering, whose
 * effects a restore keeps (it reopens with the model and level and sends the steering again), and
 * `abort()`'s.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import type { LifelineError, WorkerExitedError } from "../../../shared/errors.js";
import type { ThinkingLevel } from "../../../shared/thinking.js";
import type { BatchItem, ModelChange, QueueMode } from "../../../shared/wire/protocol.js";
import { type RestoreLink, type RestoreTarget, SessionRestore } from "../../supervision/session-restore.js";
import type { LinkClient } from "../../workers/link-sessions.js";
import { isWorkerGone } from "../../workers/worker-exit.js";
import type { WorkerLink } from "../../workers/worker-link.js";
import type { QueuedMessages, QueueKind } from "../commands/queued-messages.js";
import type { SessionSetup } from "../session-setup.js";
import type { SessionListeners } from "../state/session-listeners.js";
import type { SessionModel } from "../state/session-model.js";
import type { SessionThinking } from "../state/session-thinking.js";
import type { AfterRun } from "./run-events.js";
import type { MirrorWorker } from "./transcript-mirror.js";

/** pi's default modes of both queues, shared by every session that keeps them. */
const DEFAULT_QUEUE_MODES: Readonly<Record<QueueKind, QueueMode>> = Object.freeze({
  steer: "one-at-a-time",
  followUp: "one-at-a-time",
});

/** What the link needs of its session's prompt lifecycle (the session's `PromptRunner` implements it). */
export interface LinkedSession extends RestoreTarget<AfterRun> {
  /** The error the session was closed with; undefined while it is open. */
  readonly closed: LifelineError | undefined;
  /** The transcript a restore opens the session again from. */
  readonly transcript: { readonly messages: readonly AgentMessage[] };
  /** An item the worker sent for the session, in order (X4). */
  handleItem(item: BatchItem): void;
  /** True while the session has a run in the worker (it is then suspected of a crash). */
  hasRunInFlight(): boolean;
}

/** One session's link to its worker, replaced by a restore when the worker dies. */
/**
 * The link is also what the session registers with its `WorkerLink` (`LinkClient`): methods on the
 * shared prototype rather than an object of closures per session (P4, docs/performance.md).
 */
export class SessionLink implements RestoreLink, MirrorWorker, LinkClient {
  readonly sessionId: string;
  readonly #setup: SessionSetup;
  readonly #session: LinkedSession;
  readonly #model: SessionModel;
  readonly #thinking: SessionThinking;
  readonly #queued: QueuedMessages;
  /** X7: restores on a fresh worker after this session's worker dies; calls to the worker wait for one. */
  readonly #restore: SessionRestore<AfterRun>;
  #link: WorkerLink;
  /**
   * pi's steering and follow-up modes as the worker has them (a restore sets them again). Every
   * session starts on the one frozen default and gets its own record only once it changes a mode
   * (P4, docs/performance.md).
   */
  #queueModes: Readonly<Record<QueueKind, QueueMode>> = DEFAULT_QUEUE_MODES;

  /** Nothing reaches the session until {@link connect}. */
  constructor(
    setup: SessionSetup,
    session: LinkedSession,
    parts: { model: SessionModel; thinking: SessionThinking; queued: QueuedMessages; events: SessionListeners },
  ) {
    this.sessionId = setup.start.sessionId;
    this.#setup = setup;
    this.#session = session;
    this.#model = parts.model;
    this.#thinking = parts.thinking;
    this.#queued = parts.queued;
    this.#link = setup.start.link;
    this.#restore = new SessionRestore<AfterRun>(session, this, {
      settings: setup.start.settings,
      events: parts.events,
      pacer: setup.host.pacer,
    });
  }

  /** `LinkClient`: an item the worker sent for the session, in order (X4). */
  handleItem(item: BatchItem): void {
    this.#session.handleItem(item);
  }

  /** `LinkClient`: true while the session has a run in the worker. */
  hasRunInFlight(): boolean {
    return this.#session.hasRunInFlight();
  }

  /** `LinkClient`: resolves once everything the session recorded so far is stored; never rejects. */
  stored(): Promise<void> {
    return this.#setup.host.recorder?.flush() ?? Promise.resolve();
  }

  /** `LinkClient`: the worker died; X7's restore decides what follows. */
  handleWorkerExit(error: WorkerExitedError, suspect: boolean): void {
    this.#restore.onWorkerExit(error, suspect);
  }

  /** The link now, without waiting for a restore (`dispose()` detaches from it). */
  get current(): WorkerLink {
    return this.#link;
  }

  /** Settles when the restore in progress is over; undefined when none is. The live prompt does not settle meanwhile. */
  get restoring(): Promise<void> | undefined {
    return this.#restore.restoring;
  }

  /** True once the session is closed: calls to the worker then fail with its close error. */
  isClosed(): boolean {
    return this.#session.closed !== undefined;
  }

  /** Attaches the session's client: its items and its worker's death reach it from now on. Called once. */
  connect(): void {
    this.#link.attach(this.sessionId, this);
  }

  /** The link to the session's worker, once any restore in progress is over. @throws the session's close error. */
  async worker(): Promise<WorkerLink> {
    const restoring = this.#restore.restoring;
    if (restoring !== undefined) await restoring;
    if (this.#session.closed !== undefined) throw this.#session.closed;
    return this.#link;
  }

  /**
   * `setModel()`, once `change` is resolved: the worker takes it with the thinking level the
   * session carries to it (pi's rule, clamped there), then it is the session's model (a restore
   * reopens with it), recorded in its file, followed by the level when that changed. Resolves
   * with the model the worker resolved.
   * @throws the session's close error; the worker's refusal (model and level are unchanged then).
   */
  async setModel(change: ModelChange): Promise<Model<Api>> {
    const worker = await this.worker();
    const switched = await worker.call("setModel", this.sessionId, change, this.#thinking.forModelSwitch());
    this.#model.switched(switched.model, change);
    this.#setup.host.recorder?.modelChange(switched.model.provider, switched.model.id);
    this.#thinking.adopt(switched.thinkingLevel);
    return switched.model;
  }

  /**
   * `setThinkingLevel()`: the worker clamps `level` to the session's model and applies it from
   * the next request; the session adopts what it applied. Resolves with that level.
   * @throws the session's close error; the worker's refusal (the level is unchanged then).
   */
  async setThinkingLevel(level: ThinkingLevel): Promise<ThinkingLevel> {
    const applied = await (await this.worker()).call("setThinkingLevel", this.sessionId, level);
    this.#thinking.adopt(applied);
    return applied;
  }

  /**
   * `queueMessage()`: sends `text` as a user message to the worker's `kind` queue, counted as
   * pending until it reaches the transcript (a restore sends it again, once).
   * @throws the session's close error; the worker's refusal (the message is then not pending).
   */
  async queueMessage(kind: QueueKind, text: string): Promise<void> {
    const message: AgentMessage = { role: "user", content: [{ type: "text", text }], timestamp: Date.now() };
    // B7: stored when main sends it, so a restart delivers it once (see SessionRecorder.queued).
    await this.#setup.host.recorder?.queued(kind, message);
    if (this.#session.closed !== undefined) throw this.#session.closed;
    this.#queued.add(kind, message);
    try {
      await (await this.worker()).call("queueMessage", this.sessionId, kind, message);
    } catch (error) {
      this.#queued.remove(message);
      throw error;
    }
  }

  /** The queues' modes: `all` delivers every queued message at once, `one-at-a-time` one per turn. */
  get queueModes(): Readonly<Record<QueueKind, QueueMode>> {
    return this.#queueModes;
  }

  /**
   * `setQueueMode()`: the worker's agent takes `mode` for its `kind` queue, from the next time it
   * reads the queue; a restore sets it again. @throws the session's close error.
   */
  async setQueueMode(kind: QueueKind, mode: QueueMode): Promise<void> {
    await (await this.worker()).call("setQueueMode", this.sessionId, kind, mode);
    this.#queueModes = { ...this.#queueModes, [kind]: mode };
  }

  /**
   * `abort()`'s call to the worker (X3), once any restore is over; resolves when the worker has
   * acted on it. A worker that is gone, or does not answer, is no failure of the call.
   * @throws the session's close error; any other failure of the call.
   */
  async abort(): Promise<void> {
    try {
      await (await this.worker()).abort(this.sessionId);
    } catch (error) {
      // Bounded (see WorkerLink.abort): a worker that does not act on it is terminated as hung, and
      // the prompt settles through the worker's exit; a worker that is gone runs nothing either.
      // Either way abort() has done all it can.
      if (!isWorkerGone(error)) throw error;
    }
  }

  /** X7: opens the session again on a fresh worker (its own if `isolate`) from the main-side transcript, model and thinking level. */
  reopen(isolate: boolean): Promise<WorkerLink> {
    const messages = [...this.#session.transcript.messages];
    return this.#setup.host.reopen(messages, this.#model.change, this.#thinking.level, isolate);
  }

  /** X7: `link`, the fresh worker's, becomes the session's; steering not yet delivered goes to it, once. */
  adopt(link: WorkerLink): void {
    this.#link = link;
    link.attach(this.sessionId, this);
    // Posted before the steering below, on the same port: the modes apply to it.
    for (const [kind, mode] of Object.entries(this.#queueModes) as [QueueKind, QueueMode][]) {
      if (mode !== "one-at-a-time") void link.call("setQueueMode", this.sessionId, kind, mode).catch(() => {});
    }
    for (const [message, kind] of this.#queued) {
      void link.call("queueMessage", this.sessionId, kind, message).catch(() => {});
    }
  }
}
