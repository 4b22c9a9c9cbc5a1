/**
 * What a session shows of itself: the read-only side of `AgentSession` (agent-session.ts), its
 * base class, so that the facade's own file holds the calls that act. Each getter reads one of
 * the session's parts (session-parts.ts); none changes anything.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import type { Settings } from "../../shared/settings/settings.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import type { QueueMode } from "../../shared/wire/protocol.js";
import type { CoordinationState } from "../coordination/session-coordination.js";
import type { QueueKind } from "./commands/queued-messages.js";
import type { PromptRecord } from "./prompt/prompt-records.js";
import type { PromptRunner } from "./prompt/prompt-runner.js";
import { SessionParts } from "./session-parts.js";
import type { SessionSetup } from "./session-setup.js";
import { type SessionStats, sessionStats } from "./state/session-stats.js";

/** The read-only side of a session; see the module comment. */
export abstract class SessionReadout {
  /** @internal What the host opened the session with. */
  protected readonly setup: SessionSetup;
  /** @internal The session's parts. */
  protected readonly parts: SessionParts;
  /** @internal The prompt lifecycle, and through it the transcript, the retry controller and the link (one of the parts). */
  protected readonly runner: PromptRunner;

  /** Stable id of this session (also passed to providers for cache affinity). */
  abstract readonly id: string;
  /** What the parts call on the facade (`AgentSession` implements them). */
  abstract setModel(model: string): Promise<Model<Api>>;
  abstract setThinkingLevel(level: ThinkingLevel): Promise<ThinkingLevel>;
  abstract abort(): Promise<void>;

  /** Builds the session's parts, which hold this facade; nothing reaches them from the worker until they connect. */
  protected constructor(setup: SessionSetup) {
    this.setup = setup;
    this.parts = new SessionParts(setup, this);
    this.runner = this.parts.runner;
  }

  /**
   * What became of the prompt given `id` (`prompt(text, { id })`), in this session's life or, for
   * a resumed session, in its stored history: undefined when none was stored; `{}` when it was
   * stored but its run never finished (the host running it stopped: see {@link resumeRun});
   * `{ result }` once it settled, with what `prompt()` resolved to.
   */
  promptRecord(id: string): PromptRecord | undefined {
    return this.runner.records.get(id);
  }

  /**
   * The id of the prompt whose run this session's transcript ends in, when that prompt was given
   * an id and never settled (its host stopped mid-run): finish it with {@link resumeRun} before
   * the next prompt, so that every prompt is followed by its own answer. Undefined otherwise.
   */
  get unfinishedPromptId(): string | undefined {
    return this.runner.records.unfinished;
  }

  /** The session's model; {@link setModel} changes it. */
  get model(): Model<Api> {
    return this.parts.model.current;
  }

  /** The thinking level of the next model request (pi's levels), clamped to the model. */
  get thinkingLevel(): ThinkingLevel {
    return this.parts.thinking.level;
  }

  /** The queues' modes (see {@link setQueueMode}). */
  get queueModes(): Readonly<Record<QueueKind, QueueMode>> {
    return this.parts.steering.modes;
  }

  /** pi's display name (the file's last `session_info` entry); undefined without one. */
  get sessionName(): string | undefined {
    return this.parts.name.current;
  }

  /** Steering and follow-up messages not yet delivered to the model. */
  get pendingMessageCount(): number {
    return this.parts.steering.pending;
  }

  /** R12: whether auto-retry is on for this session. */
  get autoRetryEnabled(): boolean {
    return this.setup.start.settings.retry.enabled;
  }

  /** Whether compaction on an overflow and at the threshold is on for this session. */
  get autoCompactionEnabled(): boolean {
    return this.setup.start.settings.compaction.enabled;
  }

  /** True while a compaction (its summary request, then installing the result) is in progress. */
  get isCompacting(): boolean {
    return this.runner.isCompacting;
  }

  /** True while an {@link executeBash} command runs. */
  get isBashRunning(): boolean {
    return this.parts.bash.isRunning;
  }

  /** R12: true while a retry chain is live. */
  get isRetrying(): boolean {
    return this.runner.retry.isRetrying;
  }

  /** R3: the live chain's attempt, 0 when idle. */
  get retryAttempt(): number {
    return this.runner.retry.attempt;
  }

  /**
   * B8: the host-wide retry budget, provider gate and request permits of this session's provider,
   * as far as its settings turn them on (an empty object with the defaults).
   */
  get coordinationState(): CoordinationState {
    return this.parts.coordination?.state() ?? {};
  }

  /** True while a run of the agent is in flight in the worker (a compaction's summary request is not one). */
  get isStreaming(): boolean {
    return this.runner.isStreaming;
  }

  /** True after `dispose()`, or once the session's worker has exited (`worker_exited`). */
  get isClosed(): boolean {
    return this.runner.isClosed();
  }

  /** True from `prompt()` until its `agent_settled`, and while `compact()` runs. */
  get isBusy(): boolean {
    return this.runner.hasLivePrompt || this.runner.isCompacting;
  }

  /** The runtime transcript the model sees (failed attempts removed while retrying, R4). */
  get messages(): readonly AgentMessage[] {
    return this.runner.transcript.messages;
  }

  /** Every message the session produced, failed attempts included (R4's persisted history). */
  get history(): readonly AgentMessage[] {
    return this.runner.transcript.history;
  }

  /** pi's session statistics; tokens and cost count failed attempts too (session-stats.ts). */
  get stats(): SessionStats {
    return sessionStats(this);
  }

  /** B7: the file this session is persisted to; undefined when persistence is off. */
  get sessionFile(): string | undefined {
    return this.setup.host.recorder?.path;
  }

  /**
   * B7: resolves once everything this session has recorded so far is stored (as durably as the
   * fsync policy says): after `prompt()` returns, that includes the prompt's user message. At once
   * when the session is not persisted. Never rejects (a failed write-ahead rejects the prompt).
   */
  flushSession(): Promise<void> {
    return this.setup.host.recorder?.flush() ?? Promise.resolve();
  }

  /**
   * B7: the first error storing this session's entries met (ERR_SESSION_FILE, or ERR_SESSION_LOCKED
   * when another host took the session over), undefined while every append was stored. Once set,
   * entries recorded since may be missing from the store: resume the session to go on.
   */
  get storeError(): Error | undefined {
    return this.setup.host.recorder?.failure;
  }

  /** The session's effective settings (files, host and session overrides, and toggles). */
  get settings(): Readonly<Settings> {
    return this.setup.start.settings;
  }
}
