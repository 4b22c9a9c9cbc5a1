/**
 * A session's runs in its worker, and the state they own: the run in flight (its id, what main
 * knows of it, the decision made at its agent_end). A prompt causes one run or several: its first,
 * then a `continue` after each retry's sleep (R4) or after an overflow compaction (R1); a
 * compaction's summary request is a run too (`summarize`).
 *
 * A run's life: `start()` → the key for its attempt, then `startRun` on the worker → its events
 * routed by `RunEvents` (X4), which the runs build and serve as its `RunEventsTarget` → at
 * `agent_end` the retry controller decides, at `run_end` the decision is carried out: a chain of
 * retries (the controller's `execute`), a compaction after an overflow, or nothing; then the live
 * prompt may settle. A run whose worker died (X7), and the run a resumed transcript ends in
 * (`resumeRun`), are ended here as their worker would have ended them.
 *
 * What the runs need of the prompt lifecycle goes through `SessionRunsTarget`, implemented by the
 * session's `PromptRunner` (prompt-runner.ts), which builds them.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { LifelineError, type WorkerExitedError } from "../../../shared/errors.js";
import type { RetryEvent } from "../../../shared/events.js";
import { errorText } from "../../../shared/failures/error-text.js";
import type { BatchItem, RunInput } from "../../../shared/wire/protocol.js";
import type { SessionCompaction, SummaryEnd } from "../../compaction/session-compaction.js";
import type { RetryActions, RetryController } from "../../retry/retry-controller.js";
import { workerFate } from "../../supervision/interrupted-run.js";
import type { ActiveRun } from "../../supervision/session-restore.js";
import { isWorkerGone } from "../../workers/worker-exit.js";
import type { QueuedMessages } from "../commands/queued-messages.js";
import type { PendingPrompt } from "../prompt/pending-prompt.js";
import type { SessionSetup } from "../session-setup.js";
import type { SessionListeners } from "../state/session-listeners.js";
import type { SessionModel } from "../state/session-model.js";
import { type AfterRun, RunEvents, type RunEventsTarget } from "./run-events.js";
import type { SessionLink } from "./session-link.js";
import { sessionRetryActions } from "./session-retry.js";
import type { TranscriptMirror } from "./transcript-mirror.js";

/** What the runs read and tell of the session's prompts; implemented by its `PromptRunner`. */
export interface SessionRunsTarget {
  /** The error the session was closed with; undefined while it is open. */
  readonly closed: LifelineError | undefined;
  /** The live prompt, if any: its runs' replies, retries and failure are noted on it. */
  livePrompt(): PendingPrompt | undefined;
  /** Settles the live prompt if nothing of it is left. */
  maybeSettle(): void;
  /** A chain failed outside the model, or a stored run could not be ended: the live prompt settles as failed. */
  failPrompt(error: unknown): void;
  /** A run of the live prompt was refused (write-ahead, worker): it rejects with `error` (no model outcome to report). */
  rejectPrompt(error: LifelineError): void;
}

/** The session's parts the runs use, built by its `PromptRunner`. */
export interface SessionRunsParts {
  readonly setup: SessionSetup;
  readonly model: SessionModel;
  readonly events: SessionListeners;
  readonly queued: QueuedMessages;
  readonly link: SessionLink;
  readonly transcript: TranscriptMirror;
  /** The session's retry controller; the runs carry out its decisions. */
  readonly retry: RetryController<AssistantMessage>;
  readonly compaction: Pick<SessionCompaction, "afterOverflow" | "endSummary">;
  /** The session's public `setModel()`: R4's move to a fallback model goes through it. */
  setModel(name: string): Promise<unknown>;
}

/** One session's runs. All methods are called on the main thread. */
export class SessionRuns implements RunEventsTarget {
  readonly #target: SessionRunsTarget;
  readonly #setup: SessionSetup;
  readonly #model: SessionModel;
  readonly #events: SessionListeners;
  readonly #link: SessionLink;
  readonly #transcript: TranscriptMirror;
  readonly #retry: RetryController<AssistantMessage>;
  readonly #compaction: SessionRunsParts["compaction"];
  /** What the retry controller's chains do to the session (R4). */
  readonly #retryActions: RetryActions<AssistantMessage>;
  readonly #runEvents: RunEvents;
  #runId = 0;
  #activeRunId: number | undefined;
  #run: ActiveRun | undefined;
  /** The decision made at the active run's agent_end, carried out at its run_end. */
  #afterRun: AfterRun | undefined;

  constructor(target: SessionRunsTarget, parts: SessionRunsParts) {
    const { setup, model, events, queued, transcript, retry } = parts;
    this.#target = target;
    this.#setup = setup;
    this.#model = model;
    this.#events = events;
    this.#link = parts.link;
    this.#transcript = transcript;
    this.#retry = retry;
    this.#compaction = parts.compaction;
    this.#runEvents = new RunEvents(this, { events, mirror: transcript, queued, retry });
    this.#retryActions = sessionRetryActions(setup, model, transcript, parts.setModel, () =>
      this.#continueAfterRetry(),
    );
  }

  /** True while a run (a summary request included) is in flight in the worker. */
  get inFlight(): boolean {
    return this.#activeRunId !== undefined;
  }

  /** True while a run of the agent is in flight in the worker (a compaction's summary request is not one). */
  get isStreaming(): boolean {
    return this.#activeRunId !== undefined && this.#run?.input.kind !== "summarize";
  }

  /** `abort()`: the run last started is marked aborted (X7 then ends it as aborted). */
  markAborted(): void {
    if (this.#run !== undefined) this.#run.aborted = true;
  }

  /** The live prompt failed, or the session closed: no run is in flight for it (a late `run_end` is stale). */
  stop(): void {
    this.#activeRunId = undefined;
    this.#afterRun = undefined;
  }

  /** An item the worker sent for the session, routed in order (X4). */
  route(item: BatchItem): void {
    this.#runEvents.route(item);
  }

  /** The retry controller's `emit` (see `RunEvents.retryEvent`). */
  retryEvent(event: RetryEvent): void {
    this.#runEvents.retryEvent(event);
  }

  /**
   * Posts a run of `input` on the session's worker (after any restore), with the key for this
   * attempt. A failure to post ends it: a summary run's compaction fails, a prompt's run rejects
   * the live prompt; a worker that is gone settles the prompt through its exit instead.
   */
  async start(input: RunInput, retry = false): Promise<void> {
    const runId = ++this.#runId;
    this.#activeRunId = runId;
    this.#afterRun = undefined;
    this.#run = { input, started: false, userSeen: false, aborted: false, ...(retry ? { retry } : {}) };
    try {
      const link = await this.#link.worker();
      // R4: the key for this attempt (a rotation may have switched it). Posted on the same FIFO
      // port right before startRun, so the worker has it before the run's request goes out.
      const change = this.#model.freshCredential(this.#setup.host.credentials);
      const sessionId = this.#setup.start.sessionId;
      if (change !== undefined) void link.call("setModel", sessionId, change).catch(() => {});
      await link.startRun(sessionId, runId, input);
    } catch (error) {
      if (this.#activeRunId !== runId || this.#target.closed !== undefined) return;
      // A worker that died, or hung (a timed-out call terminates it), settles this prompt through
      // its exit, with the code and cause that name what happened (SPEC X5).
      if (isWorkerGone(error)) return;
      if (input.kind === "summarize") {
        this.summaryEnded({ error: errorText(error) });
        return;
      }
      // The worker refused the run: the runtime cannot serve this prompt; say so with a code.
      this.refuse(error instanceof LifelineError ? error : new LifelineError("ERR_PROTOCOL", String(error)));
    }
  }

  /** The live prompt's admission ended it before any run (aborted while it waited): it may settle now. */
  endUnsent(): void {
    this.#target.maybeSettle();
  }

  /** The live prompt cannot be run (its write-ahead failed, the worker refused its run): it rejects with `error`. */
  refuse(error: LifelineError): void {
    this.#target.rejectPrompt(error);
  }

  /**
   * `resumeRun()`: ends the stored run `pending` resumes as its worker would have: a failed reply
   * is decided on as at any agent_end; an interrupted run gets X7's closing messages (here, and in
   * the worker before anything the decision posts). Then the decision is carried out: a retry like
   * a 503's.
   */
  async endStored(pending: PendingPrompt, failed: AssistantMessage | undefined): Promise<void> {
    let afterRun: AfterRun;
    if (failed !== undefined) {
      this.#events.emit({ type: "agent_start" });
      afterRun = this.#runEvents.decide([failed]);
    } else {
      const before = this.#transcript.messages.length;
      const run: ActiveRun = { input: { kind: "continue" }, started: false, userSeen: true, aborted: false };
      afterRun = this.#runEvents.interrupted(run, "exit", this.#model.current);
      try {
        await this.#transcript.appendInWorker(this.#transcript.messages.slice(before));
      } catch (error) {
        if (this.#isLive(pending)) this.#target.failPrompt(error);
        return;
      }
    }
    if (this.#isLive(pending)) this.#carryOut(afterRun, undefined);
  }

  #isLive(pending: PendingPrompt): boolean {
    return this.#target.livePrompt() === pending && this.#target.closed === undefined;
  }

  /** Carries out a finished run's decision (retry, overflow compaction, or nothing), then maybe settles. */
  #carryOut(afterRun: AfterRun | undefined, runError: string | undefined): void {
    if (afterRun === undefined) {
      // The run ended without agent_end (it failed outside the agent loop): end any chain (B3).
      const prompt = this.#target.livePrompt();
      if (prompt !== undefined) prompt.failure = runError ?? "The run ended without a reply.";
      this.#retry.onAgentEnd(undefined);
    } else if (afterRun.decision.kind === "retry") {
      void this.#retry
        .execute(afterRun.decision, this.#retryActions)
        // R4: the chain may end inside execute (every key blocked past retry.maxDelayMs).
        .then(
          () => this.#target.maybeSettle(),
          (error: unknown) => this.#target.failPrompt(error),
        );
    } else if (afterRun.decision.failure === "overflow" && afterRun.last !== undefined) {
      void this.#compaction.afterOverflow(afterRun.last);
    }
    this.#target.maybeSettle();
  }

  async #continueAfterRetry(): Promise<void> {
    if (this.#target.closed !== undefined) return;
    await this.start({ kind: "continue" }, true);
  }

  /**
   * X7 (`RestoreTarget.interrupt`): ends what ran on the dead worker. A summary request fails its
   * compaction; a run in flight keeps the decision made at its agent_end if one came, else ends as
   * a failed reply and is decided on. Returns the decision, carried out by {@link resume}.
   */
  interrupt(error: WorkerExitedError): AfterRun | undefined {
    if (this.#run?.input.kind === "summarize") {
      // A summary request dies with its worker: the compaction fails (reported, not retried).
      this.summaryEnded({ error: `The summary request ended because the worker ${workerFate(error.exitCause)}.` });
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
    return this.#runEvents.interrupted(run, error.exitCause, this.#model.current);
  }

  /** X7 (`RestoreTarget.resume`), once restored: carries out the dead run's decision, or settles the live prompt. */
  resume(afterRun: AfterRun | undefined): void {
    if (afterRun !== undefined) this.#carryOut(afterRun, undefined);
    else this.#target.maybeSettle();
  }

  // RunEventsTarget (run-events.ts): the run's events as they are routed.

  isClosed(): boolean {
    return this.#target.closed !== undefined;
  }

  get activeRunId(): number | undefined {
    return this.#activeRunId;
  }

  /** The run last started, until it ends (what main knows of it, for X7). */
  get activeRun(): ActiveRun | undefined {
    return this.#run;
  }

  noteReply(message: AssistantMessage): void {
    const prompt = this.#target.livePrompt();
    if (prompt !== undefined) prompt.lastAssistant = message;
  }

  countRetry(): void {
    const prompt = this.#target.livePrompt();
    if (prompt !== undefined) prompt.retries++;
  }

  decided(afterRun: AfterRun): void {
    this.#afterRun = afterRun;
  }

  summaryEnded(end: SummaryEnd): void {
    this.#activeRunId = undefined;
    this.#run = undefined;
    this.#compaction.endSummary(end);
  }

  runEnded(runError: string | undefined): void {
    this.#activeRunId = undefined;
    this.#run = undefined;
    const afterRun = this.#afterRun;
    this.#afterRun = undefined;
    this.#carryOut(afterRun, runError);
  }
}
