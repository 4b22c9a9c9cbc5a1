/**
 * The wire protocol between the main thread and a worker, written once (STYLE 2).
 *
 * One MessagePort per worker carries everything, in both directions, so that one FIFO queue
 * orders a session's events, its run boundaries and the answers to its calls (messages on
 * separate ports have no relative order: fact F2 in docs/architecture.md).
 *
 * - main → worker: comlink calls on the {@link WorkerApi} (short request/response: accepted or
 *   refused, never "wait until the run is done").
 * - worker → main: comlink replies, and {@link WorkerMessage} batches of session items. A run's
 *   completion is a `run_end` item on the same port, after the run's last event.
 *
 * Only plain data crosses (X6): every call returns a {@link Result}; nothing is thrown across.
 *
 * One exception to "one port": the control channel ({@link ControlChannel}), main → worker only,
 * which lets an abort reach a busy worker ahead of its loop's turn. It carries nothing whose order
 * matters: every abort also goes as the `abort` call on the port, in order.
 */
import type { MessagePort } from "node:worker_threads";
import type { AgentEvent, AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import type { BashResult } from "../bash/bash-message.js";
import type { SummaryRequest } from "../compaction/summary-prompt.js";
import type { WireError } from "../errors.js";
import type { TimedAgentEvent } from "../events.js";
import type { UiAnswer, UiRequest } from "../extensions/extension-ui.js";
import type { ThinkingLevel } from "../thinking.js";
import type { CatalogueQuery, ModelChange, QueueMode, SessionInit, SessionOpened } from "./protocol-session.js";
import type { WireAgentEnd, WireTurnEnd } from "./run-message-refs.js";
import type { WireUpdateEvent } from "./stream-wire.js";

/** The outcome of a worker call: a value or a typed error as data. */
export type Result<T> = { ok: true; value: T } | { ok: false; error: WireError };

/** The session's description (protocol-session.ts), re-exported so the protocol has one import path. */
export type {
  CatalogueQuery,
  ModelChange,
  ModelRef,
  ProviderOverrides,
  ProviderSettings,
  QueueMode,
  SessionExtensions,
  SessionInit,
  SessionOpened,
  WorkerNetwork,
} from "./protocol-session.js";

/**
 * What a run starts from: a new user prompt, or `continue()` after a retry sleep. The prompt's
 * user message is built on the main thread, so it can be stored before the run is posted (B7).
 * A `summarize` run is a compaction's model call: it leaves the transcript alone and reports
 * the summary in its `run_end` (it is a run so that `abort()`, keep-alive and a worker's death
 * treat it as one).
 */
export type RunInput =
  | { kind: "prompt"; message: AgentMessage }
  | { kind: "continue" }
  | { kind: "summarize"; request: SummaryRequest };

/** One run to start: the session, the run's id (main's, echoed in its `run_end`) and what it starts from. */
interface RunStart {
  sessionId: string;
  runId: number;
  input: RunInput;
}

/**
 * One entry of a `runOps` message: a run to start, or R4's removal of a trailing failed reply
 * from the session's runtime transcript (answered with whether one was removed). Both come in
 * bursts on a busy host (thousands of prompts started, thousands of 503s decided in one batch),
 * so they travel together, in the order they were made: a session's removal reaches the worker
 * before the retried run that follows it.
 */
export type RunOp = ({ kind: "start" } & RunStart) | { kind: "pop_failed"; sessionId: string };

/**
 * The worker's API, called from the main thread through comlink.
 * Every method returns quickly (but `awaitBash`, see there); a run's progress arrives as batch items.
 */
export interface WorkerApi {
  openSession(init: SessionInit): Promise<Result<SessionOpened>>;
  /**
   * Applies run ops ({@link RunOp}), of one session or of many (the main thread sends the ops of
   * one task as one message: run-op-queue.ts), in order. Each op is answered on its own in the
   * array, at its index: a start with null, or refused with ERR_SESSION_BUSY if the session has a
   * run active; a `pop_failed` with whether a trailing failed reply was removed (none is while a
   * run is active).
   */
  runOps(ops: RunOp[]): Result<Result<boolean | null>[]>;
  /** Aborts the active run's model request or tool; `value` says whether a run was active. */
  abort(sessionId: string): Result<boolean>;
  /** B3: puts a message back at the end of the runtime transcript (a cancelled chain's failure). */
  appendMessage(sessionId: string, message: AgentMessage): Result<null>;
  /** Replaces the runtime transcript (a compaction installs its result). Refused while a run is active. */
  replaceMessages(sessionId: string, messages: AgentMessage[]): Result<null>;
  /** Queues a user message into the active (or next) run: `steer` or `followUp` (pi-agent-core). */
  queueMessage(sessionId: string, kind: "steer" | "followUp", message: AgentMessage): Result<null>;
  /**
   * How the session's `kind` queue delivers (pi-agent-core's `steeringMode`/`followUpMode`): all
   * queued messages at once, or one per turn. Applies from the next time the agent reads the queue.
   */
  setQueueMode(sessionId: string, kind: "steer" | "followUp", mode: QueueMode): Result<null>;
  /**
   * Switches the model for the session's next request. `thinkingLevel`: the level the session
   * carries to the new model (pi's rule, decided on main), clamped to it; absent (a key rotation),
   * the current level, clamped. Returns the resolved model and the level applied.
   */
  setModel(sessionId: string, change: ModelChange, thinkingLevel?: ThinkingLevel): Result<SessionOpened>;
  /** Sets the thinking level of the session's next request, clamped to its model; returns the level applied. */
  setThinkingLevel(sessionId: string, level: ThinkingLevel): Result<ThinkingLevel>;
  /**
   * The models this worker provides itself (the demo models), then, with `catalogue`, pi-ai's
   * catalogue models of the providers it names (pi-ai lives in the worker, not on main).
   */
  listBuiltInModels(catalogue?: CatalogueQuery): Result<Model<Api>[]>;
  /**
   * Closes a session. For a session still opening (its worker module's `setup()` has not
   * returned), the open is cancelled: it completes into a closed session and answers an error.
   */
  closeSession(sessionId: string): Result<null>;
  /** Aborts every run, closes every session and ends the worker's serve loop. */
  shutdown(): Result<null>;
  /**
   * B9: the worker samples its event-loop delay from now on and reports it on its heartbeats (see
   * {@link WorkerMessage}). Idempotent. Called only by a host that records metrics: the sampler
   * wakes the worker's loop every 20 ms (shared/loop-delay.ts).
   */
  watchEventLoop(): Result<null>;
  /** B8: main's answer to a `permit_request`: the model request may be sent, or not (`granted` false). */
  grantPermit(requestId: number, granted: boolean): Result<null>;
  /**
   * Starts a shell command for the session in its `cwd` (one at a time per session); answers at
   * once with the shell's pid, which leads the command's process group, so main can kill the tree
   * if this worker dies. Refused with ERR_SESSION_BUSY while the session's last command runs.
   */
  startBash(sessionId: string, command: string): Result<{ pid: number }>;
  /**
   * The result of the session's command started by `startBash`: the one call that answers only
   * when something is over (the command), so main makes it without a timeout; a worker's death
   * still settles it (X5).
   */
  awaitBash(sessionId: string): Promise<Result<BashResult>>;
  /** Kills the session's running command (its whole process group); `value`: whether one ran. */
  abortBash(sessionId: string): Result<boolean>;
  /** Main's answer to a dialog's `ui_request` (null: none will come); the tool's `ctx.ui` call resolves. */
  answerUi(requestId: number, answer: UiAnswer | null): Result<null>;
}

/**
 * An agent event as it crosses; `message_update` travels slimmed down (see stream-wire.ts),
 * `turn_end` and `agent_end` refer to the messages their run's `message_end` events carried (see
 * run-message-refs.ts), and an assistant reply's `message_end` and a `tool_execution_end` carry
 * the worker's timing (request-timing.ts).
 */
type WireAgentEvent =
  | Exclude<AgentEvent, { type: "message_update" | "turn_end" | "agent_end" | TimedAgentEvent["type"] }>
  | WireUpdateEvent
  | TimedAgentEvent
  | WireTurnEnd
  | WireAgentEnd;

/** One item of a batch: a session's event, or the end of one of its runs. */
export type BatchItem =
  | { type: "event"; sessionId: string; event: WireAgentEvent }
  | {
      type: "run_end";
      sessionId: string;
      runId: number;
      /** Messages the agent appended without a `message_end` event (a thrown run's failure message). */
      tail: AgentMessage[];
      /** Set when the run failed outside the agent's own error handling. */
      error?: WireError;
      /** A `summarize` run that ended with a summary (else `error`, or `aborted`). */
      summary?: string;
      /** A `summarize` run that `abort()` stopped. */
      aborted?: boolean;
    };

/**
 * Worker → main messages that are not comlink replies:
 * - `hello`: the serve loop is up (sent once, first); until it arrives the worker is starting.
 * - `heartbeat`: the worker is alive and making progress (SPEC X8). Sent every `heartbeatMs` unless a
 *   batch went out since the last one: any message proves the loop is alive. Also sent from inside a
 *   long task (a burst of aborts, a loop turn over thousands of sockets) once nothing went out for
 *   `heartbeatMs`: such a worker reaches its timers late but is not stuck. Once the main thread
 *   called `watchEventLoop` (B9), every {@link LOOP_REPORT_BEATS}-th heartbeat is sent whatever
 *   else went out, carrying `loop`: the worker's event-loop delay since its previous report.
 * - `batch`: session items.
 * - `permit_request` / `permit_release` (B8): a session's model request asks for, and gives back,
 *   a permit of `retry.maxConcurrentRequests`; main answers a request with `grantPermit`.
 *   Request ids are the worker's, unique for its lifetime.
 * - `tool_calls_ready` (sessions opened with `storeToolCalls`): a session's reply with tool calls
 *   has ended (its `message_end` was flushed just before, on the same port); its tools wait until
 *   main answers `grantPermit` once the reply is stored. Ids share the permits' counter.
 * - `ui_request` (sessions opened with `hasUI`): an extension tool's `ctx.ui` call, for the host's
 *   UI. A dialog carries a `requestId` that main answers with `answerUi`; a notice has none.
 *   `ui_cancel`: the dialog's timeout passed or its signal aborted; main withdraws it.
 */
export type WorkerMessage =
  | { type: "hello"; threadId: number }
  | { type: "heartbeat"; loop?: LoopDelay }
  | BatchMessage
  | { type: "permit_request"; sessionId: string; requestId: number }
  | { type: "permit_release"; requestId: number }
  | { type: "tool_calls_ready"; sessionId: string; requestId: number }
  | { type: "ui_request"; sessionId: string; requestId?: number; request: UiRequest }
  | { type: "ui_cancel"; requestId: number };

/** A thread's event-loop delay over a window, in seconds (B9; shared/loop-delay.ts samples it). */
export interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

/** Heartbeats per loop report of a watched worker: with the default 1 s heartbeat, one every 5 s. */
export const LOOP_REPORT_BEATS = 5;

/**
 * The control channel of a worker, made by the main thread and handed over with the worker's
 * task: a second port, main → worker, and a shared counter (an `Int32Array` over `flag`, one
 * element) that main increments after each message it posts there. A worker busy streaming for
 * other sessions reads the counter between the events it queues (an `Atomics.load`, nothing
 * more) and, when it moved, takes the messages off the port at once (`receiveMessageOnPort`),
 * instead of when its loop next turns to the port, which under load is tens to hundreds of ms
 * later. An idle worker gets them as ordinary messages. Messages here have no order relative to
 * the main port's (F2), so each names exactly what it acts on and repeats what an ordered call
 * on the main port also does.
 */
export interface ControlChannel {
  port: MessagePort;
  flag: SharedArrayBuffer;
}

/**
 * A message on the control channel. `abort`: abort run `runId` of the session, if that run is
 * the one active in the worker (what its `abort` call, which follows on the main port, does
 * too); a run that has not started there yet, or has ended, is left alone, so the early abort can
 * never hit a later run of the session.
 */
export type ControlMessage = { type: "abort"; sessionId: string; runId: number };

/** Checks a message that arrived on the control channel; undefined for anything malformed. */
export function decodeControlMessage(data: unknown): ControlMessage | undefined {
  if (data === null || typeof data !== "object") return undefined;
  const { type, sessionId, runId } = data as Record<string, unknown>;
  if (type !== "abort" || typeof sessionId !== "string" || !Number.isInteger(runId)) return undefined;
  return { type, sessionId, runId: runId as number };
}

/** A batch of session items (see EventBatcher). */
export interface BatchMessage {
  type: "batch";
  items: BatchItem[];
}

/** What the main thread's decoder makes of a message on the port. */
export type DecodedMessage =
  | { kind: "comlink" }
  | { kind: "message"; message: WorkerMessage }
  | { kind: "invalid"; reason: string };

/**
 * Sorts a message that arrived on the port. comlink replies carry an `id` and a wire-value
 * `type` (RAW or HANDLER) and are left to comlink; anything else must be a {@link WorkerMessage}.
 */
export function decodeWorkerMessage(data: unknown): DecodedMessage {
  if (data === null || typeof data !== "object") return { kind: "invalid", reason: "not an object" };
  const record = data as { id?: unknown; type?: unknown; items?: unknown };
  if (typeof record.id === "string" && (record.type === "RAW" || record.type === "HANDLER")) {
    return { kind: "comlink" };
  }
  if (record.type === "batch" && Array.isArray(record.items)) {
    return { kind: "message", message: data as WorkerMessage };
  }
  if (record.type === "heartbeat") {
    const loop = (data as { loop?: unknown }).loop;
    if (loop === undefined) return { kind: "message", message: { type: "heartbeat" } };
    if (isLoopDelay(loop)) return { kind: "message", message: { type: "heartbeat", loop } };
    return { kind: "invalid", reason: "heartbeat with a malformed loop report" };
  }
  const permit = data as { sessionId?: unknown; requestId?: unknown };
  if (record.type === "permit_request" && typeof permit.sessionId === "string" && Number.isInteger(permit.requestId)) {
    return { kind: "message", message: data as WorkerMessage };
  }
  if (
    record.type === "tool_calls_ready" &&
    typeof permit.sessionId === "string" &&
    Number.isInteger(permit.requestId)
  ) {
    return { kind: "message", message: data as WorkerMessage };
  }
  if (
    record.type === "ui_request" &&
    typeof permit.sessionId === "string" &&
    isUiRequest((data as { request?: unknown }).request)
  ) {
    const requestId = permit.requestId;
    if (requestId === undefined || Number.isInteger(requestId))
      return { kind: "message", message: data as WorkerMessage };
  }
  if ((record.type === "permit_release" || record.type === "ui_cancel") && Number.isInteger(permit.requestId)) {
    return { kind: "message", message: data as WorkerMessage };
  }
  if (record.type === "hello" && typeof (data as { threadId?: unknown }).threadId === "number") {
    return { kind: "message", message: data as WorkerMessage };
  }
  return { kind: "invalid", reason: `unknown message type ${JSON.stringify(record.type)}` };
}

const UI_METHODS = new Set([
  "select",
  "confirm",
  "input",
  "editor",
  "notify",
  "setStatus",
  "setWidget",
  "setTitle",
  "set_editor_text",
]);

function isLoopDelay(value: unknown): value is LoopDelay {
  if (value === null || typeof value !== "object") return false;
  const { p50, p99, max } = value as Record<string, unknown>;
  return typeof p50 === "number" && typeof p99 === "number" && typeof max === "number";
}

function isUiRequest(value: unknown): value is UiRequest {
  return (
    value !== null && typeof value === "object" && UI_METHODS.has((value as { method?: unknown }).method as string)
  );
}
