/**
 * The public session API on the main thread: `AgentSession`, a facade that validates each call's
 * arguments (with config/option-schemas.ts), refuses calls on a closed session, and delegates to
 * the parts it is made of (session-parts.ts): its listeners, model, thinking level, B8 coordination
 * view, steering, name and bash commands, and the `PromptRunner` (prompt-runner.ts), which owns the
 * prompt lifecycle, the transcript, the retry controller and the link to the worker (its X7
 * restore; the calls of `setModel`, `queueMessage` and `abort`); the runs in the worker are
 * `SessionRuns`' (session-runs.ts). What it shows of itself, read-only, is its base class's
 * (session-readout.ts).
 */
import type { Api, Model } from "@mariozechner/pi-ai";
import type { BashResult } from "../../shared/bash/bash-message.js";
import { LifelineError } from "../../shared/errors.js";
import type { CompactionResult, CoordinationFallbackEvent, PromptResult } from "../../shared/events.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import type { ModelRef, QueueMode } from "../../shared/wire/protocol.js";
import { toModelRef } from "../config/model-ref.js";
import {
  assertListener,
  assertToggle,
  invalidInstructions,
  invalidPrompt,
  invalidResumeId,
  modelRefSchema,
  thinkingLevelSchema,
  validate,
} from "../config/option-schemas.js";
import type { PermitTarget } from "../coordination/permit-bridge.js";
import type { QueueKind } from "./commands/queued-messages.js";
import type { BashOptions } from "./commands/session-bash.js";
import type { PromptOptions } from "./prompt/pending-prompt.js";
import { SessionReadout } from "./session-readout.js";
import type { SessionSetup } from "./session-setup.js";
import type { SessionListener } from "./state/session-listeners.js";

/** The options of a `prompt()` called without any (shared, never written). */
const NO_OPTIONS: PromptOptions = Object.freeze({});
/**
 * One conversation with a model whose agent loop runs in a worker thread.
 * Created by `SessionHost.createSession()`. All methods are called on the main thread.
 */
export class AgentSession extends SessionReadout {
  /** Stable id of this session (also passed to providers for cache affinity). */
  readonly id: string;

  /** @internal Use `SessionHost.createSession()`. */
  constructor(setup: SessionSetup) {
    super(setup);
    this.id = setup.start.sessionId;
    this.parts.connect();
  }

  /**
   * Sends a user prompt. Resolves with how the prompt ended once every run it caused and any retry
   * chain have finished (R11), right after `agent_settled`. Model failures resolve (see
   * `stopReason`/`errorMessage`); the promise rejects only when the runtime cannot serve it.
   * @throws SessionBusyError (ERR_SESSION_BUSY) while another prompt is live, unless `queue` is set.
   * @throws ERR_SESSION_DISPOSED after dispose(); WorkerExitedError if the worker dies; ERR_INVALID_OPTIONS for empty text or malformed options.
   */
  prompt(text: string, options?: PromptOptions): Promise<PromptResult> {
    // No `= {}` default: a burst of prompt() calls would allocate one empty object per call.
    const refusal = this.runner.closed ?? invalidPrompt(text, options === undefined ? NO_OPTIONS : options);
    return refusal === undefined
      ? this.runner.submit(text, options?.queue === true, options?.id)
      : Promise.reject(refusal);
  }

  /**
   * SPEC X7 for a session resumed after the host running it stopped mid-run (fleet mode): finishes
   * the run its transcript ends in, as a restore finishes a run whose worker died (docs/sessions.md):
   * a finished reply settles at once, a failed one gets its retry decision, a run cut off gets an
   * "interrupted" result for each tool call without one (never run again) and a failed reply marked
   * as a worker exit, retried like a 503. Resolves as `prompt()` does, after `agent_settled`; with
   * `id`, the outcome is recorded under it as a prompt's would be.
   * @throws SessionBusyError while a prompt or compaction is live; ERR_INVALID_OPTIONS when the
   *   transcript holds no run; ERR_SESSION_DISPOSED after dispose(); as `prompt()` otherwise.
   */
  resumeRun(id?: string): Promise<PromptResult> {
    const refusal = this.runner.closed ?? invalidResumeId(id);
    return refusal === undefined ? this.runner.resumeRun(id) : Promise.reject(refusal);
  }

  /**
   * Switches the model for the next model request, a retried one included (the request in flight
   * keeps its model). The reference resolves as in `createSession` (`"provider/id"`, models.json,
   * keys). Resolves with the new model.
   * @throws ERR_INVALID_OPTIONS for a malformed reference, ERR_UNKNOWN_MODEL, ERR_MISSING_API_KEY,
   *   ERR_INVALID_MODELS; the model is unchanged then.
   */
  async setModel(model: string | ModelRef): Promise<Model<Api>> {
    if (this.runner.closed !== undefined) throw this.runner.closed;
    validate(modelRefSchema, model, "setModel() argument", "model");
    const change = await this.setup.host.credentials.resolveModel(toModelRef(model));
    return this.runner.link.setModel(change);
  }

  /**
   * Sets the thinking level from the next request (a retry's included), clamped to the model (see
   * session-thinking.ts). Resolves with the level applied. @throws ERR_INVALID_OPTIONS, ERR_SESSION_DISPOSED.
   */
  async setThinkingLevel(level: ThinkingLevel): Promise<ThinkingLevel> {
    if (this.runner.closed !== undefined) throw this.runner.closed;
    validate(thinkingLevelSchema, level, "setThinkingLevel() argument", "level");
    return this.runner.link.setThinkingLevel(level);
  }

  /** pi's cycle to the next supported level; undefined (no change) without reasoning. @throws ERR_SESSION_DISPOSED. */
  async cycleThinkingLevel(): Promise<ThinkingLevel | undefined> {
    if (this.runner.closed !== undefined) throw this.runner.closed;
    const next = this.parts.thinking.next();
    return next === undefined ? undefined : this.runner.link.setThinkingLevel(next);
  }

  /**
   * Delivers a user message into the live prompt's agent loop (pi's steering queues): `steer`
   * before its next model call, `followUp` when it would otherwise stop. During a retry sleep the
   * retried run delivers them. Messages still queued when the prompt settles (it failed or was
   * cancelled) are delivered by the next prompt; `abort()` drops them.
   * @throws ERR_INVALID_OPTIONS when no prompt is live (use `prompt()`), the text is empty or `kind`
   *   is neither "steer" nor "followUp"; ERR_SESSION_DISPOSED after dispose().
   */
  async queueMessage(kind: "steer" | "followUp", text: string): Promise<void> {
    await this.parts.steering.send(kind, text);
  }

  /**
   * pi's steering/follow-up mode of `kind`'s queue: every message at once (`all`) or one per turn
   * (`one-at-a-time`, the default); this session only, kept by a restore. Resolves once the worker
   * has it. @throws ERR_INVALID_OPTIONS for another kind or mode; ERR_SESSION_DISPOSED.
   */
  async setQueueMode(kind: QueueKind, mode: QueueMode): Promise<void> {
    await this.parts.steering.setMode(kind, mode);
  }

  /** Names the session (session-name.ts). @throws ERR_INVALID_OPTIONS when blank; ERR_SESSION_DISPOSED. */
  setSessionName(name: string): void {
    if (this.runner.closed !== undefined) throw this.runner.closed;
    this.parts.name.set(name);
  }

  /**
   * R9: cancels any retry chain (abortRetry), then aborts the active run's model request in the
   * worker (X3). Resolves when the worker has acted on it (the run has ended, or the worker
   * answered), or after the host's control bound (2 s at most) if it has done neither: a worker
   * that has not even ended the run in that time is stuck in synchronous code and is terminated
   * (SPEC X8). The prompt settles through its events, or with ERR_WORKER_EXITED when the worker
   * was terminated.
   */
  async abort(): Promise<void> {
    this.abortRetry();
    if (this.runner.isClosed()) return;
    if (this.runner.abort()) await this.runner.link.abort();
  }

  /** R8/B3: ends a live retry chain, sleeping or in flight, with "Retry cancelled". No-op when idle. */
  abortRetry(): void {
    this.runner.abortRetry();
  }

  /**
   * Adds a listener for every {@link SessionEvent}, in the order the worker produced them.
   * @returns a function that removes the listener. @throws ERR_INVALID_OPTIONS for a non-function.
   */
  subscribe(listener: SessionListener): () => void {
    assertListener(listener);
    return this.parts.events.subscribe(listener);
  }

  /** B5: turns auto-retry on or off for this session only; no file is written. */
  setAutoRetryEnabled(enabled: boolean): void {
    assertToggle("setAutoRetryEnabled", enabled);
    this.setup.start.settings.retry.enabled = enabled;
  }

  /**
   * Turns compaction on an overflow and at the threshold on or off for this session only; no
   * file is written (unlike pi). `compact()` works either way.
   */
  setAutoCompactionEnabled(enabled: boolean): void {
    assertToggle("setAutoCompactionEnabled", enabled);
    this.setup.start.settings.compaction.enabled = enabled;
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
  compact(customInstructions?: string): Promise<CompactionResult> {
    const refusal = this.runner.closed ?? invalidInstructions(customInstructions);
    return refusal === undefined ? this.runner.compact(customInstructions) : Promise.reject(refusal);
  }

  /**
   * Runs `command` with bash in the session's worker (never on the main thread), in the host's cwd,
   * one at a time (pi's `executeBash`); output bounded to the last 2000 lines or 50 KiB, the whole in
   * `fullOutputPath`. The result enters the transcript as pi's `bashExecution` message, stored, and
   * seen by the model with the next prompt (deferred to it while a prompt or compaction is live).
   * @throws ERR_INVALID_OPTIONS; SessionBusyError while a command runs; WorkerExitedError if the
   *   worker dies meanwhile (the command's process group is killed); ERR_SESSION_DISPOSED.
   */
  executeBash(command: string, options: BashOptions = {}): Promise<BashResult> {
    const closed = this.runner.closed;
    return closed === undefined ? this.parts.bash.execute(command, options) : Promise.reject(closed);
  }

  /** Kills the running command's process tree; its `executeBash` resolves with `cancelled: true`. No-op when none runs. */
  abortBash(): Promise<void> {
    return this.parts.bash.abort();
  }

  /** Fleet mode, from the host: its B8 decisions fell back or returned; emitted when the settings use any. @internal */
  announceCoordination(event: CoordinationFallbackEvent): void {
    if (this.parts.coordination?.inUse === true && !this.runner.isClosed()) this.parts.events.emit(event);
  }

  /** B8, for the host's permit requests: undefined when `retry.maxConcurrentRequests` is not set. @internal */
  get permitTarget(): PermitTarget | undefined {
    return this.runner.isClosed() ? undefined : this.parts.coordination?.permitTarget();
  }

  /**
   * Ends the session: cancels any chain, aborts any run, closes the worker side and rejects
   * pending and queued prompts with ERR_SESSION_DISPOSED. Idempotent.
   */
  dispose(): Promise<void> {
    if (this.runner.isClosed()) return Promise.resolve();
    return this.runner.dispose(
      new LifelineError("ERR_SESSION_DISPOSED", `Session ${this.id} was disposed; create a new session.`),
    );
  }
}
