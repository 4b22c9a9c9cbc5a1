/**
 * Session events: what `AgentSession.subscribe()` listeners receive (SPEC R14, B4).
 *
 * The agent's lifecycle events come from the worker in the order it produced them (X4);
 * the retry, settle, compaction and worker events are made on the main thread.
 */
import type { AgentEvent, AgentMessage } from "@mariozechner/pi-agent-core";
import type { AssistantMessage } from "@mariozechner/pi-ai";
import type { WireError, WorkerExitCause } from "./errors.js";
import type { RequestTiming, ToolTiming } from "./request-timing.js";
import type { ThinkingLevel } from "./thinking.js";

/** `agent_end` as listeners see it: the agent's event plus the retry decision made for it. */
export interface AgentEndEvent {
  type: "agent_end";
  messages: AgentMessage[];
  /** True when the retry controller will retry this run (an `auto_retry_start` follows). */
  willRetry: boolean;
}

/** R14: a retry was scheduled. `attempt` is 1-based; `maxAttempts` is `retry.maxRetries`. */
export interface AutoRetryStartEvent {
  type: "auto_retry_start";
  attempt: number;
  maxAttempts: number;
  delayMs: number;
  errorMessage: string;
  /** `"provider/id"` of the model the retry runs on, when a fallback model replaced the session's (R4). */
  model?: string;
  /**
   * True when the auth storage moved the session to another free key of its provider for this
   * retry (R4's rotation; the delay is then 0). Absent otherwise. The key itself is never named.
   */
  credentialRotated?: true;
}

/**
 * Why a retry chain ended, for programs (`finalError` is for people):
 * - `success`: a retried attempt answered;
 * - `cancelled`: `abortRetry()`, `abort()`, `dispose()`, or auto-retry turned off mid-chain;
 * - `exhausted`: `retry.maxRetries` retries failed;
 * - `non_retryable`: the next failure was not retryable (or the session could not go on);
 * - `over_cap`: the server asked for a delay above `retry.maxDelayMs`;
 * - `budget_exhausted`: the host's retry budget for the provider was spent (B8).
 */
export type AutoRetryEndReason =
  | "success"
  | "cancelled"
  | "exhausted"
  | "non_retryable"
  | "over_cap"
  | "budget_exhausted";

/** R14: a retry chain ended. Exactly one per chain. */
export interface AutoRetryEndEvent {
  type: "auto_retry_end";
  success: boolean;
  attempt: number;
  /** Why the chain ended; `success` exactly when `success` is true. */
  reason: AutoRetryEndReason;
  finalError?: string;
}

/**
 * B8: the session waits at its provider's closed gate (a 429/529 with a retry hint was seen by a
 * session of the host) before a retry or a new prompt's request. Once per wait; `abort()` and
 * `abortRetry()` end the wait as they end a sleep.
 */
export interface ProviderGateWaitEvent {
  type: "provider_gate_wait";
  provider: string;
  /** What waits: a retry of a chain, or a new prompt. */
  before: "retry" | "prompt";
  /** How long the gate stays closed from now. */
  waitMs: number;
}

/**
 * Fleet mode (docs/fleet.md): the host lost its fleet's Redis (the connection closed, or a command
 * failed or did not answer within its bound), so from now on its B8 decisions (retry budget,
 * provider gate, request permits) are the host's own, as without a fleet. Sent once per loss to
 * every open session of the host that uses any of them; `coordination_fallback_end` follows when
 * the host rejoins.
 */
export interface CoordinationFallbackStartEvent {
  type: "coordination_fallback_start";
  /** The fleet's name (`fleet.name`). */
  fleet: string;
  /** What the host saw: the error of the failed command, or that the connection closed. */
  reason: string;
}

/** Fleet mode: the host rejoined its fleet's Redis; B8 decisions are fleet-wide again. */
export interface CoordinationFallbackEndEvent {
  type: "coordination_fallback_end";
  /** The fleet's name (`fleet.name`). */
  fleet: string;
  /** How long the host's decisions were its own, in ms. */
  fallbackMs: number;
}

/** Either fleet-mode coordination event. */
export type CoordinationFallbackEvent = CoordinationFallbackStartEvent | CoordinationFallbackEndEvent;

/** How a prompt ended; carried by `agent_settled` and returned by `prompt()`. */
export interface PromptResult {
  /** The last assistant message's stop reason, or "error" when the run failed without one. */
  stopReason: AssistantMessage["stopReason"];
  /** The error text when the prompt ended in an error or abort. */
  errorMessage?: string;
  /**
   * The retry requests this prompt actually sent, across all its chains: a retried attempt counts
   * once its model request went out. A retry announced by `auto_retry_start` but refused by a
   * budget (a fleet's answers after the announcement), cancelled in its back-off or aborted before
   * its request left counts none; so does a retried request whose worker died before its reply
   * came back (whether it left is not known). Equals the model requests the server received for
   * the prompt minus its turns.
   */
  retries: number;
  /** The last assistant message of the prompt, if the model produced one. */
  message?: AssistantMessage;
}

/** B4: the completion boundary of R11, once per prompt, after its last `agent_end` and any chain. */
export interface AgentSettledEvent extends PromptResult {
  type: "agent_settled";
}

/** Why a compaction ran: `compact()` was called, the context passed the threshold, or it overflowed (R1). */
export type CompactionReason = "manual" | "threshold" | "overflow";

/**
 * What a compaction produced (pi's `CompactionResult`, plus `tokensAfter`): the summary that now
 * stands for the older part of the transcript, and where the kept part starts.
 */
export interface CompactionResult {
  summary: string;
  /** Entry id of the first message kept as it is (its id in the session file, when persisted). */
  firstKeptEntryId: string;
  /** Estimated context tokens before compaction. */
  tokensBefore: number;
  /** Estimated context tokens of the compacted transcript (summary and kept messages). */
  tokensAfter: number;
  /** Implementation data, as in pi's entry; lifeline's own summaries leave it empty. */
  details?: unknown;
}

/** Compaction began (pi's event). */
export interface CompactionStartEvent {
  type: "compaction_start";
  reason: CompactionReason;
}

/**
 * Compaction ended (pi's event). `result` is null when it was aborted (`aborted: true`), failed
 * (`errorMessage`), or a host hook compacted nothing. `willRetry`: an overflowed prompt goes on
 * with the compacted transcript (once per prompt).
 */
export interface CompactionEndEvent {
  type: "compaction_end";
  reason: CompactionReason;
  result: CompactionResult | null;
  aborted: boolean;
  willRetry: boolean;
  errorMessage?: string;
}

/**
 * X5/X7: the session was given up (it kept killing its worker, or could not be restored): its
 * pending calls and prompts have been rejected and it is closed. A worker's death alone does not
 * emit this: its sessions are restored (`session_restored`).
 */
export interface WorkerExitedEvent {
  type: "worker_exited";
  error: WireError;
}

/**
 * X7: the session's worker died and the session now runs on a fresh worker, from the main
 * thread's transcript, with the same object, id, listeners and settings. A run that was in flight
 * came before this as a failed reply and `agent_end`; its retry follows.
 */
export interface SessionRestoredEvent {
  type: "session_restored";
  /** How the previous worker ended. */
  reason: WorkerExitCause;
  /** How many times this session has been restored so far, this one included. */
  restarts: number;
}

/**
 * An extension's event handler threw, rejected or did not settle within
 * `extensionHandlerTimeoutMs` (pi's `ExtensionError` shape). The session goes on; the event is
 * reported to `subscribe()` listeners and in RPC mode, never to extensions themselves.
 */
export interface ExtensionErrorEvent {
  type: "extension_error";
  /** The extension's file, as loaded. */
  extensionPath: string;
  /** The event type whose handler failed (`session_start` and `session_shutdown` included). */
  event: string;
  /** The error's message, or what timed out. */
  error: string;
}

/** pi's: the session's display name changed (`setSessionName`); `name` is undefined when cleared. */
export interface SessionInfoChangedEvent {
  type: "session_info_changed";
  name: string | undefined;
}

/**
 * pi's: the steering or follow-up queue changed (a message queued, taken by the run, refused, or
 * dropped by `abort()`); each list holds the text of every message still queued, in order. The
 * taking is emitted just before that user message's `message_start`, as pi emits it.
 */
export interface QueueUpdateEvent {
  type: "queue_update";
  steering: string[];
  followUp: string[];
}

/**
 * The agent's `message_end`, plus the timing of the model request of an assistant reply the worker
 * streamed: its start, first byte, first token, end and the gaps between its deltas, stamped in the
 * worker as they happened (see {@link RequestTiming}). Absent on other messages and on a reply the
 * main thread made itself (the failed reply of a run whose worker died).
 */
export interface MessageEndEvent {
  type: "message_end";
  message: AgentMessage;
  timing?: RequestTiming;
}

/**
 * The agent's `tool_execution_end`, plus when the execution started and ended, stamped in the
 * worker (see {@link ToolTiming}). Absent on an end the worker did not see start.
 */
export interface ToolExecutionEndEvent extends Extract<AgentEvent, { type: "tool_execution_end" }> {
  timing?: ToolTiming;
}

/** The agent's events that gain the worker's timing as they cross (X9). */
export type TimedAgentEvent = MessageEndEvent | ToolExecutionEndEvent;

/**
 * The agent's own events, except `agent_end`, which gains `willRetry`, and `message_end` and
 * `tool_execution_end`, which gain `timing`.
 */
export type ForwardedAgentEvent =
  | Exclude<AgentEvent, { type: "agent_end" | TimedAgentEvent["type"] }>
  | TimedAgentEvent;

/** Everything a session listener can receive. Switch on `type`. */
/**
 * The session's thinking level changed (pi's event and shape): `setThinkingLevel()`, a cycle, or a
 * model switch that clamped it. Not emitted when the level stays the same.
 */
export interface ThinkingLevelChangedEvent {
  type: "thinking_level_changed";
  level: ThinkingLevel;
}

export type SessionEvent =
  | ForwardedAgentEvent
  | AgentEndEvent
  | AutoRetryStartEvent
  | AutoRetryEndEvent
  | AgentSettledEvent
  | CompactionStartEvent
  | CompactionEndEvent
  | WorkerExitedEvent
  | SessionRestoredEvent
  | ExtensionErrorEvent
  | ProviderGateWaitEvent
  | CoordinationFallbackStartEvent
  | CoordinationFallbackEndEvent
  | ThinkingLevelChangedEvent
  | SessionInfoChangedEvent
  | QueueUpdateEvent;

/** The retry controller's events. */
export type RetryEvent = AutoRetryStartEvent | AutoRetryEndEvent | ProviderGateWaitEvent;
