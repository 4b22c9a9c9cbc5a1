/**
 * The public session API on the main thread: a thin facade over the worker link, the event
 * stream, the transcript mirror and the retry controller.
 *
 * A prompt's life: `prompt()` → `startRun` on the worker → events arrive in order on the link
 * (X4) → at `agent_end` the controller decides → maybe a chain of retries, or a compaction after
 * an overflow (R1) and the prompt going on once → when no run is in flight, no chain is live and
 * no compaction is in progress (a threshold compaction runs just before), `agent_settled` is
 * emitted and the prompt resolves (R11, B4). Each step is driven by an event; nothing polls or
 * sleeps.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { type Api, type AssistantMessage, isContextOverflow, type Model } from "@mariozechner/pi-ai";
import type { ClassifiableMessage } from "../../shared/classify.js";
import { errorText } from "../../shared/error-text.js";
import { LifelineError, SessionBusyError, type WorkerExitedError } from "../../shared/errors.js";
import type { CompactionResult, PromptResult, RetryEvent, SessionEvent } from "../../shared/events.js";
import type { BatchItem, ModelChange, ModelRef, RunInput } from "../../shared/protocol.js";
import type { Settings } from "../../shared/settings.js";
import { fromWireUpdate, type StreamState, startStream } from "../../shared/stream-wire.js";
import { freshCredential, switchToFallback } from "../auth/session-credentials.js";
import type {
  ContextOverflowAnswer,
  ContextOverflowHook,
  ContextOverflowInfo,
} from "../compaction/context-overflow-hook.js";
import { SessionCompaction, summaryEndOf } from "../compaction/session-compaction.js";
import { toModelRef } from "../config/model-ref.js";
import {
  assertListener,
  assertQueueKind,
  invalidOptions,
  modelRefSchema,
  promptOptionsSchema,
  validate,
} from "../config/option-schemas.js";
import { PromptGate } from "../coordination/prompt-gate.js";
import { type CoordinationState, SessionCoordination } from "../coordination/session-coordination.js";
import { RetryController, type RetryDecision } from "../retry/retry-controller.js";
import { abortableSleep } from "../retry/sleep.js";
import { PromptWriteAhead } from "../session-files/prompt-write-ahead.js";
import { workerFate } from "../supervision/interrupted-run.js";
import { type ActiveRun, endInterruptedRun, SessionRestore } from "../supervision/session-restore.js";
import { isWorkerGone } from "../workers/worker-exit.js";
import type { LinkClient, WorkerLink } from "../workers/worker-link.js";
import { lastAssistant, type PendingPrompt, type QueuedPrompt, settledResult } from "./pending-prompt.js";
import { QueuedMessages } from "./queued-messages.js";
import { type SessionListener, SessionListeners } from "./session-listeners.js";
import type { SessionWiring } from "./session-wiring.js";
import { TranscriptMirror } from "./transcript-mirror.js";

export type { ContextOverflowAnswer, ContextOverflowHook, ContextOverflowInfo };

/** Options of {@link AgentSession.prompt}. */
export interface PromptOptions {
  /**
   * When the session is busy, wait for the current prompt to settle and then run, instead of
   * rejecting with ERR_SESSION_BUSY. @default false
   */
  queue?: boolean;
}

/** The decision made at a run's agent_end, carried out at its run_end. */
interface AfterRun {
  decision: RetryDecision<AssistantMessage>;
  last: AssistantMessage | undefined;
}

/**
 * One conversation with a model whose agent loop runs in a worker thread.
 * Created by `SessionHost.createSession()`. All methods are called on the main thread.
 */
export class AgentSession {
  /** Stable id of this session (also passed to providers for cache affinity). */
  readonly id: string;
  #model: Model<Api>;
  /** Steering and follow-up messages sent to the worker and not yet seen in the transcript. */
  readonly #queued = new QueuedMessages();
  #link: WorkerLink;
  /** X7: restores on a fresh worker after this session's worker dies; calls to the worker wait for one. */
  readonly #supervisor: SessionRestore<AfterRun>;
  #modelChange: ModelChange;
  #run: ActiveRun | undefined;
  readonly #settings: Settings;
  readonly #events: SessionListeners;
  readonly #retry: RetryController<AssistantMessage>;
  readonly #wiring: SessionWiring;
  /** The transcript and history on main (X7: a restore starts from them). */
  readonly #mirror: TranscriptMirror;
  #runId = 0;
  #activeRunId: number | undefined;
  /** The decision made at the active run's agent_end, carried out at its run_end. */
  #afterRun: AfterRun | undefined;
  #prompt: PendingPrompt | undefined;
  readonly #queue: QueuedPrompt[] = [];
  /** The session's compactions; the session is busy while one is in progress. */
  readonly #compaction: SessionCompaction;
  /** B7: stores each prompt's user message before its run is posted; undefined when not persisted. */
  readonly #writeAhead: PromptWriteAhead | undefined;
  /** The assistant message being streamed, rebuilt from slimmed updates (see stream-wire.ts). */
  #streaming: StreamState | undefined;
  /** Collects controller events while an agent_end decision is being made (see #handleItem). */
  #heldRetryEvents: RetryEvent[] | undefined;
  #closed: LifelineError | undefined;
  /** B8: this session's view of the host's budget, gate and permits; undefined without a host's. */
  readonly #coordination: SessionCoordination | undefined;
  /** B8: the live prompt waits at its provider's closed gate before its first request; abort() ends it. */
  readonly #gate: PromptGate;

  /** @internal Use `SessionHost.createSession()`. */
  constructor(wiring: SessionWiring) {
    this.id = wiring.sessionId;
    this.#model = wiring.model;
    this.#wiring = wiring;
    this.#link = wiring.link;
    this.#modelChange = wiring.modelChange;
    this.#settings = wiring.settings;
    this.#supervisor = new SessionRestore<AfterRun>({
      sessionId: this.id,
      supervision: () => this.#settings.supervision,
      isClosed: () => this.#closed !== undefined,
      interrupt: (error) => this.#interrupt(error),
      reopen: (isolate) => wiring.reopen([...this.#mirror.messages], this.#modelChange, isolate),
      adopt: (link) => this.#adopt(link),
      resume: (afterRun) => {
        if (afterRun !== undefined) this.#carryOut(afterRun, undefined);
        else this.#maybeSettle();
      },
      emit: (event) => this.#events.emit(event),
      endChain: (message) => this.#retry.dispose(message, "non_retryable"),
      close: (error) => {
        this.#close(error);
        this.#wiring.onDisposed(this.id)?.catch(() => {});
      },
    });
    this.#mirror = new TranscriptMirror(wiring.messages, wiring.history ?? wiring.messages, wiring.recorder, {
      sessionId: this.id,
      worker: () => this.#worker(),
      isClosed: () => this.#closed !== undefined,
    });
    this.#events = new SessionListeners(wiring.onListenerError);
    this.#compaction = new SessionCompaction({
      sessionId: this.id,
      recorder: wiring.recorder,
      history: this.#mirror.history,
      settings: () => this.#settings.compaction,
      contextWindow: () => this.#model.contextWindow,
      messages: () => this.#mirror.messages,
      overflowHook: wiring.onContextOverflow,
      isClosed: () => this.#closed !== undefined,
      livePrompt: () => this.#prompt,
      continueRun: () => void this.#startRun({ kind: "continue" }),
      settle: () => this.#maybeSettle(),
      install: (messages) => this.#mirror.install(messages),
      removeFailed: () => this.#mirror.removeFailed(),
      restoreFailed: (message) => this.#mirror.restoreFailed(message),
      startSummaryRun: (request) => void this.#startRun({ kind: "summarize", request }),
      emit: (event) => this.#events.emit(event),
    });
    const controllerOptions: ConstructorParameters<typeof RetryController>[0] = {
      sessionId: wiring.sessionId,
      settings: () => this.#settings.retry,
      sleep: wiring.sleep ?? abortableSleep,
      now: Date.now,
      random: Math.random,
      isOverflow: (message: ClassifiableMessage) => {
        const contextWindow = this.#model.contextWindow;
        return isContextOverflow(message as AssistantMessage, contextWindow > 0 ? contextWindow : undefined);
      },
      emit: (event) => {
        if (event.type === "auto_retry_start" && this.#prompt !== undefined) this.#prompt.retries++;
        if (this.#heldRetryEvents !== undefined) this.#heldRetryEvents.push(event);
        else this.#events.emit(event);
      },
      baseUrl: () => this.#model.baseUrl,
    };
    if (wiring.authStorage !== undefined) controllerOptions.authStorage = wiring.authStorage;
    if (wiring.coordination !== undefined) {
      this.#coordination = new SessionCoordination(wiring.coordination, {
        provider: () => this.#model.provider,
        baseUrl: () => this.#model.baseUrl,
        apiKey: () => this.#modelChange.apiKey,
        settings: () => this.#settings.retry,
        emit: (event) => this.#events.emit(event),
      });
      controllerOptions.coordination = this.#coordination;
    }
    this.#retry = new RetryController<AssistantMessage>(controllerOptions);
    this.#gate = new PromptGate(this.#coordination);
    this.#writeAhead = wiring.recorder === undefined ? undefined : new PromptWriteAhead(wiring.recorder);
    const extensions = wiring.extensions;
    if (extensions !== undefined) {
      // An ordinary listener that only enqueues: handlers never delay delivery or the retry path.
      this.#events.subscribe((event) => extensions.deliver(event));
      extensions.bind(this, (event) => this.#events.emit(event));
    }
    this.#link.attach(this.id, this.#linkClient());
  }

  #linkClient(): LinkClient {
    return {
      handleItem: (item) => this.#handleItem(item),
      hasRunInFlight: () => this.#activeRunId !== undefined,
      handleWorkerExit: (error, suspect) => this.#supervisor.onWorkerExit(error, suspect),
    };
  }

  /** The link to the session's worker, once any restore in progress is over. */
  async #worker(): Promise<WorkerLink> {
    const restoring = this.#supervisor.restoring;
    if (restoring !== undefined) await restoring;
    if (this.#closed !== undefined) throw this.#closed;
    return this.#link;
  }

  /**
   * Sends a user prompt. Resolves with how the prompt ended once every run it caused and any retry
   * chain have finished (R11), right after `agent_settled`. Model failures resolve (see
   * `stopReason`/`errorMessage`); the promise rejects only when the runtime cannot serve it.
   * @throws SessionBusyError (ERR_SESSION_BUSY) while another prompt is live, unless `queue` is set.
   * @throws ERR_SESSION_DISPOSED after dispose(); WorkerExitedError if the worker dies; ERR_INVALID_OPTIONS for empty text or malformed options.
   */
  prompt(text: string, options: PromptOptions = {}): Promise<PromptResult> {
    if (this.#closed !== undefined) return Promise.reject(this.#closed);
    const badOptions = invalidOptions(promptOptionsSchema, options, "prompt() options", "options");
    if (badOptions !== undefined) return Promise.reject(badOptions);
    if (typeof text !== "string" || text.trim() === "") {
      return Promise.reject(
        new LifelineError("ERR_INVALID_OPTIONS", "prompt() needs a non-empty string; pass the user's message text."),
      );
    }
    return new Promise<PromptResult>((resolve, reject) => {
      if (this.#prompt === undefined && this.#compaction.reason === undefined) {
        this.#begin(text, resolve, reject);
        return;
      }
      if (options.queue === true) {
        this.#queue.push({ text, resolve, reject });
        return;
      }
      const state = this.#retry.isRetrying
        ? `in a retry chain (attempt ${this.#retry.attempt})`
        : this.#compaction.reason !== undefined
          ? "compacting"
          : "streaming";
      reject(
        new SessionBusyError(
          `Session ${this.id} is ${state}. Wait for agent_settled (or the pending prompt), call abort(), or pass { queue: true } to run this prompt afterwards.`,
        ),
      );
    });
  }

  /** The session's model; {@link setModel} changes it. */
  get model(): Model<Api> {
    return this.#model;
  }

  /**
   * Switches the model for the next model request, a retried one included (the request in flight
   * keeps its model). The reference resolves as in `createSession` (`"provider/id"`, models.json,
   * keys). Resolves with the new model.
   * @throws ERR_INVALID_OPTIONS for a malformed reference, ERR_UNKNOWN_MODEL, ERR_MISSING_API_KEY,
   *   ERR_INVALID_MODELS; the model is unchanged then.
   */
  async setModel(model: string | ModelRef): Promise<Model<Api>> {
    if (this.#closed !== undefined) throw this.#closed;
    validate(modelRefSchema, model, "setModel() argument", "model");
    const change = await this.#wiring.resolveModel(toModelRef(model));
    const resolved = await (await this.#worker()).call("setModel", this.id, change);
    this.#model = resolved;
    this.#modelChange = change;
    this.#wiring.recorder?.modelChange(resolved.provider, resolved.id);
    return resolved;
  }

  /**
   * Delivers a user message into the live prompt's agent loop (pi's steering queues): `steer`
   * before its next model call, `followUp` when it would otherwise stop. During a retry sleep the
   * retried run delivers them. Messages still queued when the prompt settles (it failed or was
   * cancelled) are delivered by the next prompt; `abort()` drops them.
   * @throws ERR_INVALID_OPTIONS when no prompt is live (use `prompt()`), the text is empty or `kind`
   *   is neither "steer" nor "followUp";
   *   ERR_SESSION_DISPOSED after dispose().
   */
  async queueMessage(kind: "steer" | "followUp", text: string): Promise<void> {
    if (this.#closed !== undefined) throw this.#closed;
    assertQueueKind(kind);
    if (typeof text !== "string" || text.trim() === "") {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `${kind}() needs a non-empty string; pass the user's message text.`,
      );
    }
    if (this.#prompt === undefined && this.#compaction.reason !== undefined) {
      throw new SessionBusyError(`Session ${this.id} is compacting; wait for compaction_end, then prompt.`);
    }
    if (this.#prompt === undefined) {
      throw new LifelineError("ERR_INVALID_OPTIONS", `Nothing to ${kind}: session ${this.id} is idle; use prompt().`);
    }
    const message: AgentMessage = { role: "user", content: [{ type: "text", text }], timestamp: Date.now() };
    // B7: stored when main sends it, so a restart delivers it once (see SessionRecorder.queued).
    await this.#wiring.recorder?.queued(kind, message);
    if (this.#closed !== undefined) throw this.#closed;
    this.#queued.add(kind, message);
    try {
      await (await this.#worker()).call("queueMessage", this.id, kind, message);
    } catch (error) {
      this.#queued.remove(message);
      throw error;
    }
  }

  /** Steering and follow-up messages not yet delivered to the model. */
  get pendingMessageCount(): number {
    return this.#queued.count;
  }

  /**
   * R9: cancels any retry chain (abortRetry), then aborts the active run's model request in the
   * worker (X3). Resolves when the worker has acted on it, or after the host's control bound
   * (2 s at most) if it does not answer: a worker that sent nothing in that time is stuck in
   * synchronous code and is terminated (SPEC X8). The prompt settles through its events, or with
   * ERR_WORKER_EXITED when the worker was terminated.
   */
  async abort(): Promise<void> {
    this.abortRetry();
    if (this.#closed !== undefined) return;
    this.#writeAhead?.abort();
    this.#gate.abort();
    // The worker drops queued steering and follow-up messages with the run.
    const dropQueued = this.#queued.clear();
    if (this.#run !== undefined) this.#run.aborted = true;
    this.#compaction.abort();
    if (dropQueued) this.#wiring.recorder?.queueCleared();
    if (this.#activeRunId === undefined && !dropQueued) return;
    try {
      await (await this.#worker()).control("abort", this.id);
    } catch (error) {
      // Bounded (see WorkerLink.control): a worker that does not answer is terminated as hung, and
      // the prompt settles through the worker's exit; a worker that is gone runs nothing either.
      // Either way abort() has done all it can.
      if (!isWorkerGone(error)) throw error;
    }
  }

  /** R8/B3: ends a live retry chain, sleeping or in flight, with "Retry cancelled". No-op when idle. */
  abortRetry(): void {
    this.#retry.abortRetry();
    this.#maybeSettle();
  }

  /**
   * Adds a listener for every {@link SessionEvent}, in the order the worker produced them.
   * @returns a function that removes the listener. @throws ERR_INVALID_OPTIONS for a non-function.
   */
  subscribe(listener: SessionListener): () => void {
    assertListener(listener);
    return this.#events.subscribe(listener);
  }

  /** B5: turns auto-retry on or off for this session only; no file is written. */
  setAutoRetryEnabled(enabled: boolean): void {
    if (typeof enabled !== "boolean") {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `setAutoRetryEnabled() takes true or false, got ${JSON.stringify(enabled)}.`,
      );
    }
    this.#settings.retry.enabled = enabled;
  }

  /** R12: whether auto-retry is on for this session. */
  get autoRetryEnabled(): boolean {
    return this.#settings.retry.enabled;
  }

  /**
   * Turns compaction on an overflow and at the threshold on or off for this session only; no
   * file is written (unlike pi). `compact()` works either way.
   */
  setAutoCompactionEnabled(enabled: boolean): void {
    if (typeof enabled !== "boolean") {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `setAutoCompactionEnabled() takes true or false, got ${JSON.stringify(enabled)}.`,
      );
    }
    this.#settings.compaction.enabled = enabled;
  }

  /** Whether compaction on an overflow and at the threshold is on for this session. */
  get autoCompactionEnabled(): boolean {
    return this.#settings.compaction.enabled;
  }

  /** True while a compaction (its summary request, then installing the result) is in progress. */
  get isCompacting(): boolean {
    return this.#compaction.reason !== undefined;
  }

  /**
   * Summarizes the older part of the transcript with the session's model now (reason
   * `"manual"`), keeping about `compaction.keepRecentTokens` of the newest messages. Emits
   * `compaction_start`/`compaction_end`; `abort()` cancels it. Prompts sent meanwhile are refused
   * as busy, or wait with `{ queue: true }`.
   * @throws SessionBusyError while a prompt or another compaction is live; ERR_COMPACTION_FAILED
   *   when there is nothing to compact or the summary request failed; ERR_ABORTED after abort();
   *   ERR_INVALID_OPTIONS for instructions that are not a string; ERR_SESSION_DISPOSED.
   */
  async compact(customInstructions?: string): Promise<CompactionResult> {
    if (this.#closed !== undefined) throw this.#closed;
    if (customInstructions !== undefined && typeof customInstructions !== "string") {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `compact() takes instructions as a string, got ${JSON.stringify(customInstructions)}.`,
      );
    }
    if (this.#prompt !== undefined || this.#compaction.reason !== undefined) {
      throw new SessionBusyError(
        `Session ${this.id} is ${this.#compaction.reason !== undefined ? "compacting" : "busy with a prompt"}; wait for agent_settled, then compact.`,
      );
    }
    const outcome = await this.#compaction.manual(customInstructions);
    if (this.#closed === undefined) this.#compaction.end("manual", outcome, false);
    const next = this.#prompt === undefined ? this.#queue.shift() : undefined;
    if (next !== undefined) this.#begin(next.text, next.resolve, next.reject);
    if (outcome.result !== null) return outcome.result;
    if (this.#closed !== undefined) throw this.#closed;
    throw outcome.aborted
      ? new LifelineError("ERR_ABORTED", `The compaction of session ${this.id} was aborted.`)
      : new LifelineError("ERR_COMPACTION_FAILED", outcome.errorMessage ?? "The compaction failed.");
  }

  /** R12: true while a retry chain is live. */
  get isRetrying(): boolean {
    return this.#retry.isRetrying;
  }

  /** R3: the live chain's attempt, 0 when idle. */
  get retryAttempt(): number {
    return this.#retry.attempt;
  }

  /**
   * B8: the host-wide retry budget, provider gate and request permits of this session's provider,
   * as far as its settings turn them on (an empty object with the defaults).
   */
  get coordinationState(): CoordinationState {
    return this.#coordination?.state() ?? {};
  }

  /**
   * B8, for the host's permit requests: the provider, its permit count and the gate key of this
   * session's model requests; undefined when `retry.maxConcurrentRequests` is not set.
   * @internal
   */
  get permitTarget(): { provider: string; limit: number; gateKey: string | undefined } | undefined {
    const limit = this.#settings.retry.maxConcurrentRequests;
    if (limit === undefined || this.#coordination === undefined || this.#closed !== undefined) return undefined;
    return { provider: this.#model.provider, limit, gateKey: this.#coordination.permitGateKey };
  }

  /** True while a run of the agent is in flight in the worker (a compaction's summary request is not one). */
  get isStreaming(): boolean {
    return this.#activeRunId !== undefined && this.#run?.input.kind !== "summarize";
  }

  /** True after `dispose()`, or once the session's worker has exited (`worker_exited`). */
  get isClosed(): boolean {
    return this.#closed !== undefined;
  }

  /** True from `prompt()` until its `agent_settled`, and while `compact()` runs. */
  get isBusy(): boolean {
    return this.#prompt !== undefined || this.#compaction.reason !== undefined;
  }

  /** The runtime transcript the model sees (failed attempts removed while retrying, R4). */
  get messages(): readonly AgentMessage[] {
    return this.#mirror.messages;
  }

  /** Every message the session produced, failed attempts included (R4's persisted history). */
  get history(): readonly AgentMessage[] {
    return this.#mirror.history;
  }

  /** B7: the file this session is persisted to; undefined when persistence is off. */
  get sessionFile(): string | undefined {
    return this.#wiring.recorder?.path;
  }

  /**
   * B7: resolves once everything this session has recorded so far is stored (as durably as the
   * fsync policy says): after `prompt()` returns, that includes the prompt's user message. At once
   * when the session is not persisted. Never rejects (a failed write-ahead rejects the prompt).
   */
  flushSession(): Promise<void> {
    return this.#wiring.recorder?.flush() ?? Promise.resolve();
  }

  /** The session's effective settings (files, host and session overrides, and toggles). */
  get settings(): Readonly<Settings> {
    return this.#settings;
  }

  /**
   * Ends the session: cancels any chain, aborts any run, closes the worker side and rejects
   * pending and queued prompts with ERR_SESSION_DISPOSED. Idempotent.
   */
  async dispose(): Promise<void> {
    if (this.#closed !== undefined) return;
    const error = new LifelineError("ERR_SESSION_DISPOSED", `Session ${this.id} was disposed; create a new session.`);
    this.#retry.dispose(error.message);
    this.#close(error);
    this.#link.detach(this.id);
    // Its file's close errors were reported as they happened (ERR_SESSION_FILE); none is left to give.
    const released = this.#wiring.onDisposed(this.id)?.catch(() => {});
    // A restore in progress closes the session on its new worker itself (see SessionRestore).
    if (this.#supervisor.restoring === undefined) {
      try {
        await this.#link.control("closeSession", this.id);
      } catch {
        // The worker is gone already; nothing is left to close there.
      }
    }
    await released;
  }

  #begin(text: string, resolve: PendingPrompt["resolve"], reject: PendingPrompt["reject"]): void {
    const pending: PendingPrompt = { resolve, reject, retries: 0, lastAssistant: undefined, failure: undefined };
    this.#prompt = pending;
    // Built here rather than in the worker so the same object can be stored first (write-ahead).
    const message: AgentMessage = { role: "user", content: [{ type: "text", text }], timestamp: Date.now() };
    const writeAhead = this.#writeAhead;
    if (writeAhead === undefined) {
      this.#postPrompt(pending, message);
      return;
    }
    // B7 write-ahead: the run is posted only once the user message is stored.
    writeAhead.write(message, {
      live: () => this.#prompt === pending && this.#closed === undefined,
      stored: () => this.#postPrompt(pending, message),
      aborted: () => {
        pending.abortedEarly = true;
        pending.failure = "Aborted before the model request was sent.";
        this.#maybeSettle();
      },
      failed: (error) => this.#rejectPrompt(error),
    });
  }

  /**
   * B8: posts a prompt's run, its first model attempt: counted toward the provider's retry budget,
   * and held first at the provider's gate while a rate limit closes it (`abort()` ends the wait;
   * the prompt then settles as aborted with no request sent).
   */
  #postPrompt(pending: PendingPrompt, message: AgentMessage): void {
    this.#gate.admit({
      live: () => this.#prompt === pending && this.#closed === undefined,
      start: () => void this.#startRun({ kind: "prompt", message }),
      aborted: () => {
        pending.abortedEarly = true;
        pending.failure = "Aborted while waiting at the provider gate, before the model request was sent.";
        this.#maybeSettle();
      },
    });
  }

  async #startRun(input: RunInput): Promise<void> {
    const runId = ++this.#runId;
    this.#activeRunId = runId;
    this.#afterRun = undefined;
    this.#run = { input, started: false, userSeen: false, aborted: false };
    try {
      const link = await this.#worker();
      // R4: the key for this attempt (a rotation may have switched it). Posted on the same FIFO
      // port right before startRun, so the worker has it before the run's request goes out.
      const change = freshCredential(this.#modelChange, this.#model.provider, this.#wiring);
      if (change !== undefined) {
        this.#modelChange = change;
        void link.call("setModel", this.id, change).catch(() => {});
      }
      await link.call("startRun", this.id, runId, input);
    } catch (error) {
      if (this.#activeRunId !== runId || this.#closed !== undefined) return;
      // A worker that died, or hung (a timed-out call terminates it), settles this prompt through
      // its exit, with the code and cause that name what happened (SPEC X5).
      if (isWorkerGone(error)) return;
      if (input.kind === "summarize") {
        this.#activeRunId = undefined;
        this.#run = undefined;
        this.#compaction.endSummary({ error: errorText(error) });
        return;
      }
      // The worker refused the run: the runtime cannot serve this prompt; say so with a code.
      this.#rejectPrompt(error instanceof LifelineError ? error : new LifelineError("ERR_PROTOCOL", String(error)));
    }
  }

  /** Rejects the live prompt with a runtime error (no model outcome to report); queued prompts go on. */
  #rejectPrompt(error: LifelineError): void {
    const pending = this.#prompt;
    this.#prompt = undefined;
    this.#activeRunId = undefined;
    this.#afterRun = undefined;
    this.#retry.dispose(error.message, "non_retryable");
    pending?.reject(error);
    const next = this.#queue.shift();
    if (next !== undefined) this.#begin(next.text, next.resolve, next.reject);
  }

  #handleItem(item: BatchItem): void {
    if (this.#closed !== undefined) return;
    if (item.type === "run_end") {
      this.#handleRunEnd(item);
      return;
    }
    const event = item.event;
    switch (event.type) {
      case "message_start": {
        if (event.message.role === "assistant") this.#streaming = startStream(event.message);
        this.#events.emit(event);
        return;
      }
      case "message_update": {
        this.#events.emit(fromWireUpdate(event, this.#streaming));
        return;
      }
      case "message_end": {
        this.#streaming = undefined;
        if (event.message.role === "user") {
          this.#queued.delivered(event.message);
          if (this.#run !== undefined) this.#run.userSeen = true;
        }
        this.#mirror.append(event.message);
        this.#events.emit(event);
        if (event.message.role === "assistant") {
          if (this.#prompt !== undefined) this.#prompt.lastAssistant = event.message;
          this.#retry.onMessageEnd(event.message);
        }
        return;
      }
      case "agent_end": {
        // Acted on at run_end: the worker's run is over by then and the transcript tail is in.
        this.#afterRun = this.#decide(event.messages);
        return;
      }
      case "agent_start": {
        if (this.#run !== undefined) this.#run.started = true;
        this.#events.emit(event);
        return;
      }
      default:
        this.#events.emit(event);
    }
  }

  /** R1/R4 at a run's end: the retry decision, then `agent_end {willRetry}` and any chain end. */
  #decide(messages: AgentMessage[]): AfterRun {
    const last = lastAssistant(messages);
    if (last !== undefined && this.#prompt !== undefined) this.#prompt.lastAssistant = last;
    // The decision may end a chain; as in pi, listeners see agent_end before auto_retry_end.
    const held: RetryEvent[] = [];
    this.#heldRetryEvents = held;
    const decision = this.#retry.onAgentEnd(last);
    this.#heldRetryEvents = undefined;
    this.#events.emit({ type: "agent_end", messages, willRetry: decision.kind === "retry" });
    for (const retryEvent of held) this.#events.emit(retryEvent);
    return { decision, last };
  }

  #handleRunEnd(item: Extract<BatchItem, { type: "run_end" }>): void {
    if (item.runId !== this.#activeRunId) return;
    if (this.#run?.input.kind === "summarize") {
      this.#activeRunId = undefined;
      this.#run = undefined;
      this.#compaction.endSummary(summaryEndOf(item));
      return;
    }
    for (const message of item.tail) {
      this.#mirror.append(message);
    }
    this.#activeRunId = undefined;
    this.#run = undefined;
    const afterRun = this.#afterRun;
    this.#afterRun = undefined;
    this.#carryOut(afterRun, item.error?.message);
  }

  /** Carries out a finished run's decision (retry, overflow hook, or nothing), then maybe settles. */
  #carryOut(afterRun: AfterRun | undefined, runError: string | undefined): void {
    if (afterRun === undefined) {
      // The run ended without agent_end (it failed outside the agent loop): end any chain (B3).
      if (this.#prompt !== undefined) this.#prompt.failure = runError ?? "The run ended without a reply.";
      this.#retry.onAgentEnd(undefined);
    } else if (afterRun.decision.kind === "retry") {
      void this.#retry
        .execute(afterRun.decision, {
          removeFailedMessage: () => this.#mirror.removeFailed(),
          restoreFailedMessage: (message) => this.#mirror.restoreFailed(message),
          continueRun: () => this.#continueAfterRetry(),
          switchToFallback: () =>
            switchToFallback(
              this.#settings.retry.fallbackModels ?? [],
              `${this.#model.provider}/${this.#model.id}`,
              this.#wiring.isProviderExhausted,
              (name) => this.setModel(name),
            ),
        })
        // R4: the chain may end inside execute (every key blocked past retry.maxDelayMs).
        .then(
          () => this.#maybeSettle(),
          (error: unknown) => this.#failPrompt(error),
        );
    } else if (afterRun.decision.failure === "overflow" && afterRun.last !== undefined) {
      void this.#compaction.afterOverflow(afterRun.last);
    }
    this.#maybeSettle();
  }

  async #continueAfterRetry(): Promise<void> {
    if (this.#closed !== undefined) return;
    await this.#startRun({ kind: "continue" });
  }

  /** Settles the live prompt when nothing of it is left: no run, no chain, no overflow hook. */
  #maybeSettle(): void {
    const pending = this.#prompt;
    if (pending === undefined || this.#closed !== undefined) return;
    if (this.#activeRunId !== undefined || this.#retry.isRetrying || this.#compaction.reason !== undefined) return;
    if (this.#supervisor.restoring !== undefined) return;
    if (this.#writeAhead?.writing === true || this.#gate.waiting) return;
    if (this.#compaction.startThresholdIfDue(pending)) return;
    this.#prompt = undefined;
    const result = settledResult(pending);
    this.#events.emit({ type: "agent_settled", ...result });
    pending.resolve(result);
    const next = this.#queue.shift();
    if (next !== undefined) this.#begin(next.text, next.resolve, next.reject);
  }

  #failPrompt(error: unknown): void {
    if (this.#closed !== undefined) return;
    if (this.#prompt !== undefined) this.#prompt.failure = errorText(error);
    this.#retry.dispose(this.#prompt?.failure ?? "Retry failed", "non_retryable");
    this.#activeRunId = undefined;
    this.#maybeSettle();
  }

  /** X7: ends what ran on the dead worker (the restore's `interrupt`); returns the run's decision. */
  #interrupt(error: WorkerExitedError): AfterRun | undefined {
    if (this.#run?.input.kind === "summarize") {
      // A summary request dies with its worker: the compaction fails (reported, not retried).
      this.#activeRunId = undefined;
      this.#run = undefined;
      this.#compaction.endSummary({
        error: `The summary request ended because the worker ${workerFate(error.exitCause)}.`,
      });
      return undefined;
    }
    if (this.#activeRunId === undefined) return undefined;
    const run = this.#run;
    this.#activeRunId = undefined;
    this.#run = undefined;
    // Its agent_end was already seen: only its run_end was lost, and the decision stands.
    if (this.#afterRun !== undefined) {
      const afterRun = this.#afterRun;
      this.#afterRun = undefined;
      return afterRun;
    }
    const streaming = this.#streaming;
    this.#streaming = undefined;
    const { produced, reply } = endInterruptedRun(run, streaming?.message, {
      messages: this.#mirror.messages,
      model: this.#model,
      cause: error.exitCause,
      append: (message) => this.#mirror.append(message),
      emit: (event) => this.#events.emit(event),
    });
    if (this.#prompt !== undefined) this.#prompt.lastAssistant = reply;
    this.#retry.onMessageEnd(reply);
    return this.#decide(produced);
  }

  /** X7: `link`, a fresh worker the session was opened on again, becomes the session's. */
  #adopt(link: WorkerLink): void {
    this.#link = link;
    link.attach(this.id, this.#linkClient());
    // Steering accepted before the crash and not yet delivered goes to the new worker, once.
    for (const [message, kind] of this.#queued) {
      void link.call("queueMessage", this.id, kind, message).catch(() => {});
    }
  }

  /** Marks the session closed and rejects the live and queued prompts with `error`. */
  #close(error: LifelineError): void {
    this.#closed = error;
    this.#gate.abort();
    this.#activeRunId = undefined;
    const pending = this.#prompt;
    this.#prompt = undefined;
    pending?.reject(error);
    for (const queued of this.#queue.splice(0)) queued.reject(error);
    this.#compaction.endSummary({ error: error.message });
  }
}
