/**
 * A session's prompt lifecycle on the main thread, and the state it owns: the live prompt, the
 * `{ queue: true }` prompts waiting behind it and whether the session is closed.
 *
 * A prompt's life: `submit()` → `PromptAdmission` (its turn, write-ahead B7, gate B8; it posts the
 * first run) → its runs in the worker, each posted and ended by `SessionRuns` (a chain of retries,
 * or a compaction after an overflow (R1) and the prompt going on once) → when no run is in flight,
 * no chain is live, no compaction or restore is in progress and nothing waits before a first
 * request (a threshold compaction runs just before), `agent_settled` is emitted and the prompt
 * resolves (R11, B4); the next queued prompt then begins. Each step is driven by an event.
 *
 * The runner builds the parts; those that report back to it do so through the narrow interface
 * each declares: `SessionRuns` (SessionRunsTarget), `SessionCompaction` (CompactionTarget),
 * `SessionLink` and its `SessionRestore` (LinkedSession, X7).
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import type { SummaryRequest } from "../../../shared/compaction/summary-prompt.js";
import { LifelineError, SessionBusyError, type WorkerExitedError } from "../../../shared/errors.js";
import type { CompactionResult, PromptResult } from "../../../shared/events.js";
import { errorText } from "../../../shared/failures/error-text.js";
import type { BatchItem } from "../../../shared/wire/protocol.js";
import { type CompactionTarget, SessionCompaction } from "../../compaction/session-compaction.js";
import type { SessionCoordination } from "../../coordination/session-coordination.js";
import type { RetryController } from "../../retry/retry-controller.js";
import { storedRunTail } from "../../supervision/interrupted-run.js";
import type { QueuedMessages } from "../commands/queued-messages.js";
import type { AfterRun } from "../runs/run-events.js";
import { type LinkedSession, SessionLink } from "../runs/session-link.js";
import { sessionRetryController } from "../runs/session-retry.js";
import { SessionRuns, type SessionRunsTarget } from "../runs/session-runs.js";
import { TranscriptMirror } from "../runs/transcript-mirror.js";
import type { SessionSetup } from "../session-setup.js";
import type { SessionListeners } from "../state/session-listeners.js";
import type { SessionModel } from "../state/session-model.js";
import type { SessionThinking } from "../state/session-thinking.js";
import { type PendingPrompt, type QueuedPrompt, settledResult } from "./pending-prompt.js";
import { PromptAdmission } from "./prompt-admission.js";
import { PromptRecords } from "./prompt-records.js";
import { RunnerCompactionHost } from "./runner-compaction-host.js";

/** What `AgentSession` hands its runner: the parts it shares with it, and its own `setModel`. */
export interface PromptRunnerParts {
  readonly setup: SessionSetup;
  readonly model: SessionModel;
  readonly thinking: SessionThinking;
  readonly events: SessionListeners;
  readonly queued: QueuedMessages;
  /** B8: the session's view of the host's budget, gate and permits; undefined without a host's. */
  readonly coordination: SessionCoordination | undefined;
  /** The session's public `setModel()`: R4's move to a fallback model goes through it. */
  setModel(name: string): Promise<unknown>;
  /** Called as a prompt begins, before its user message is built: deferred bash messages go in first. */
  beforePrompt(): void;
}

/** One session's prompts. All methods are called on the main thread. */
export class PromptRunner implements SessionRunsTarget, CompactionTarget, LinkedSession {
  readonly sessionId: string;
  /** The session's link to its worker; every call to the worker goes through it. */
  readonly link: SessionLink;
  /** The transcript and history on main (X7: a restore starts from them). */
  readonly transcript: TranscriptMirror;
  /** The session's retry controller (R1–R15's chains); its runs carry out its decisions. */
  readonly retry: RetryController<AssistantMessage>;
  readonly #setup: SessionSetup;
  readonly #events: SessionListeners;
  readonly #queued: QueuedMessages;
  /** The prompts' runs in the worker: posting them, the run in flight, carrying out its decision. */
  readonly #runs: SessionRuns;
  /** The session's compactions; the session is busy while one is in progress. */
  readonly #compaction: SessionCompaction;
  /** B7/B8: the live prompt's write-ahead and provider-gate waits before its first request. */
  readonly #admission: PromptAdmission;
  /** What became of the prompts given an id (prompt-records.ts). */
  readonly records: PromptRecords;
  #prompt: PendingPrompt | undefined;
  readonly #queue: QueuedPrompt[] = [];
  #closed: LifelineError | undefined;

  /** Builds the session's lifecycle parts; nothing reaches it from the worker until `link.connect()`. */
  constructor({ setup, model, thinking, events, queued, coordination, setModel, beforePrompt }: PromptRunnerParts) {
    this.sessionId = setup.start.sessionId;
    this.#setup = setup;
    this.#events = events;
    this.#queued = queued;
    this.link = new SessionLink(setup, this, { model, thinking, queued, events });
    this.transcript = new TranscriptMirror(
      setup.start.messages,
      setup.start.history ?? setup.start.messages,
      setup.host.recorder,
      this.link,
    );
    this.retry = sessionRetryController(setup, model, coordination, (event) => this.#runs.retryEvent(event));
    this.#compaction = new SessionCompaction(new RunnerCompactionHost(setup, model, this, events));
    this.#runs = new SessionRuns(this, {
      setup,
      model,
      events,
      queued,
      link: this.link,
      transcript: this.transcript,
      retry: this.retry,
      compaction: this.#compaction,
      setModel,
    });
    this.records = new PromptRecords(setup.start.prompts, setup.start.lastPromptId, setup.host.recorder);
    this.#admission = new PromptAdmission({
      recorder: setup.host.recorder,
      coordination,
      pacer: setup.host.pacer,
      beforePrompt,
      records: this.records,
      runs: this.#runs,
    });
  }

  /** The error the session was closed with (ERR_SESSION_DISPOSED, ERR_SESSION_CRASHED); undefined while open. */
  get closed(): LifelineError | undefined {
    return this.#closed;
  }

  /** True once the session is closed (disposed, or given up after its worker's deaths). */
  isClosed(): boolean {
    return this.#closed !== undefined;
  }

  /** A prompt is live, from `submit()` until its `agent_settled` or rejection. */
  get hasLivePrompt(): boolean {
    return this.#prompt !== undefined;
  }

  /** True while a compaction (its summary request, then installing the result) is in progress. */
  get isCompacting(): boolean {
    return this.#compaction.reason !== undefined;
  }

  /** True while a run of the agent is in flight in the worker (a compaction's summary request is not one). */
  get isStreaming(): boolean {
    return this.#runs.isStreaming;
  }

  /**
   * Begins a prompt now when the session is free, queues it behind the live one when `queue`, else
   * rejects it with SessionBusyError. The promise settles as `AgentSession.prompt()` documents.
   */
  submit(text: string, queue: boolean, id?: string): Promise<PromptResult> {
    // B9: read here, synchronously, where the caller's trace context is active.
    const trace = this.#setup.host.telemetry?.capture();
    let resolve!: (result: PromptResult) => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<PromptResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    try {
      if (this.#prompt === undefined && this.#compaction.reason === undefined) {
        this.#begin(text, resolve, reject, id, trace);
      } else if (queue) {
        this.#queue.push({ text, resolve, reject, id, trace });
      } else {
        const state = this.retry.isRetrying
          ? `in a retry chain (attempt ${this.retry.attempt})`
          : this.#compaction.reason !== undefined
            ? "compacting"
            : "streaming";
        reject(
          new SessionBusyError(
            `Session ${this.sessionId} is ${state}. Wait for agent_settled (or the pending prompt), call abort(), or pass { queue: true } to run this prompt afterwards.`,
          ),
        );
      }
    } catch (error) {
      // As a throw inside a Promise executor would: the prompt rejects.
      reject(error instanceof Error ? error : new Error(String(error)));
    }
    return promise;
  }

  /**
   * The main-side part of `abort()` (after its abortRetry): ends a write-ahead or gate wait, drops
   * the queued steering (the worker drops its queues with the run), marks the run aborted and ends
   * a compaction. Returns whether the worker must be told to abort (a run is in flight, or steering
   * was queued there).
   */
  abort(): boolean {
    this.#admission.abort();
    const dropQueued = this.#queued.clear();
    this.#runs.markAborted();
    this.#compaction.abort();
    if (dropQueued) this.#setup.host.recorder?.queueCleared();
    return this.#runs.inFlight || dropQueued;
  }

  /** R8/B3: ends a live retry chain with "Retry cancelled", then settles the prompt if nothing is left of it. */
  abortRetry(): void {
    this.retry.abortRetry();
    this.maybeSettle();
  }

  /**
   * `compact()` on a free session: a manual compaction, then the next queued prompt begins.
   * @throws SessionBusyError while a prompt or compaction is live; the close error; ERR_ABORTED;
   *   ERR_COMPACTION_FAILED.
   */
  async compact(customInstructions: string | undefined): Promise<CompactionResult> {
    if (this.#prompt !== undefined || this.#compaction.reason !== undefined) {
      throw new SessionBusyError(
        `Session ${this.sessionId} is ${this.#compaction.reason !== undefined ? "compacting" : "busy with a prompt"}; wait for agent_settled, then compact.`,
      );
    }
    const outcome = await this.#compaction.manual(customInstructions);
    if (this.#closed === undefined) this.#compaction.end("manual", outcome, false);
    if (this.#prompt === undefined) this.#beginNext();
    if (outcome.result !== null) return outcome.result;
    if (this.#closed !== undefined) throw this.#closed;
    throw outcome.aborted
      ? new LifelineError("ERR_ABORTED", `The compaction of session ${this.sessionId} was aborted.`)
      : new LifelineError("ERR_COMPACTION_FAILED", outcome.errorMessage ?? "The compaction failed.");
  }

  /**
   * `dispose()` on an open session: ends any chain, closes the session with `error`, detaches it
   * from its link and closes it in its worker. Resolves once the host has released its file.
   */
  async dispose(error: LifelineError): Promise<void> {
    this.retry.dispose(error.message);
    this.#close(error);
    this.link.current.detach(this.sessionId);
    // Its file's close errors were reported as they happened (ERR_SESSION_FILE); none is left to give.
    const released = this.#setup.host.onDisposed(this.sessionId)?.catch(() => {});
    // A restore in progress closes the session on its new worker itself (see SessionRestore).
    if (this.link.restoring === undefined) {
      try {
        await this.link.current.control("closeSession", this.sessionId);
      } catch {
        // The worker is gone already; nothing is left to close there.
      }
    }
    await released;
  }

  /**
   * `AgentSession.resumeRun()` on a free session: the run the transcript ends in is finished as
   * X7 finishes a run whose worker died (see there), as a prompt of its own that settles as one.
   */
  resumeRun(id: string | undefined): Promise<PromptResult> {
    return new Promise<PromptResult>((resolve, reject) => {
      if (this.#prompt !== undefined || this.#compaction.reason !== undefined) {
        reject(new SessionBusyError(`Session ${this.sessionId} is busy; resumeRun() comes before any prompt.`));
        return;
      }
      const tail = storedRunTail(this.transcript.messages);
      if (tail.kind === "none") {
        reject(new LifelineError("ERR_INVALID_OPTIONS", `Session ${this.sessionId} holds no run to resume.`));
        return;
      }
      const pending: PendingPrompt = { resolve, reject, retries: 0, lastAssistant: undefined, failure: undefined, id };
      this.#prompt = pending;
      this.records.stored(id);
      if (tail.kind === "finished") {
        pending.lastAssistant = tail.reply;
        this.maybeSettle();
      } else void this.#runs.endStored(pending, tail.kind === "failed" ? tail.reply : undefined);
    });
  }

  #begin(
    text: string,
    resolve: QueuedPrompt["resolve"],
    reject: QueuedPrompt["reject"],
    id: string | undefined,
    trace: unknown,
  ): void {
    const pending: PendingPrompt = { resolve, reject, retries: 0, lastAssistant: undefined, failure: undefined, id };
    this.#prompt = pending;
    this.#setup.host.telemetry?.begin(trace);
    this.#admission.admit(pending, text);
  }

  /** The first queued prompt begins, if any. */
  #beginNext(): void {
    const next = this.#queue.shift();
    if (next !== undefined) this.#begin(next.text, next.resolve, next.reject, next.id, next.trace);
  }

  /** Rejects the live prompt with a runtime error (no model outcome to report); queued prompts go on. */
  rejectPrompt(error: LifelineError): void {
    const pending = this.#release();
    this.#runs.stop();
    this.retry.dispose(error.message, "non_retryable");
    pending?.reject(error);
    this.#beginNext();
  }

  /**
   * Settles the live prompt when nothing of it is left: no run, no chain, no compaction, no restore,
   * no write-ahead or gate wait; a threshold compaction due first starts instead (and settles it
   * when over). The next queued prompt then begins.
   */
  maybeSettle(): void {
    const pending = this.#prompt;
    if (pending === undefined || this.#closed !== undefined) return;
    if (this.#runs.inFlight || this.retry.isRetrying || this.#compaction.reason !== undefined) return;
    if (this.link.restoring !== undefined) return;
    if (this.#admission.waiting) return;
    if (this.#compaction.startThresholdIfDue(pending)) return;
    this.#release();
    const result = settledResult(pending);
    this.records.settled(pending.id, result);
    this.#events.emit({ type: "agent_settled", ...result });
    pending.resolve(result);
    this.#beginNext();
  }

  /** The live prompt failed outside the model (its chain, its stored run): it settles as failed. */
  failPrompt(error: unknown): void {
    if (this.#closed !== undefined) return;
    if (this.#prompt !== undefined) this.#prompt.failure = errorText(error);
    this.retry.dispose(this.#prompt?.failure ?? "Retry failed", "non_retryable");
    this.#runs.stop();
    this.maybeSettle();
  }

  /** The live prompt stops being live (marked `over`, so no step still waiting for it goes on); returns it. */
  #release(): PendingPrompt | undefined {
    const pending = this.#prompt;
    this.#prompt = undefined;
    if (pending !== undefined) pending.over = true;
    return pending;
  }

  /** Marks the session closed and rejects the live and queued prompts with `error`. */
  #close(error: LifelineError): void {
    this.#closed = error;
    this.#admission.close();
    this.#runs.stop();
    this.#release()?.reject(error);
    for (const queued of this.#queue.splice(0)) queued.reject(error);
    this.#compaction.endSummary({ error: error.message });
  }

  // CompactionTarget (compaction/session-compaction.ts): what a compaction does to the prompt.

  livePrompt(): PendingPrompt | undefined {
    return this.#prompt;
  }

  continueRun(): void {
    void this.#runs.start({ kind: "continue" });
  }

  startSummaryRun(request: SummaryRequest): void {
    void this.#runs.start({ kind: "summarize", request });
  }

  // LinkedSession and its RestoreTarget (session-link.ts): the worker's items, and X7 after its death.

  handleItem(item: BatchItem): void {
    this.#runs.route(item);
  }

  hasRunInFlight(): boolean {
    return this.#runs.inFlight;
  }

  interrupt(error: WorkerExitedError): AfterRun | undefined {
    return this.#runs.interrupt(error);
  }

  resume(afterRun: AfterRun | undefined): void {
    this.#runs.resume(afterRun);
  }

  endChain(message: string): void {
    this.retry.dispose(message, "non_retryable");
  }

  close(error: LifelineError): void {
    this.#close(error);
    this.#setup.host.onDisposed(this.sessionId)?.catch(() => {});
  }
}
