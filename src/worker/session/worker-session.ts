/**
 * One session's agent loop inside a worker: a pi-agent-core `Agent`, its runs, its steering and
 * follow-up queues, model switches, and the transcript edits the main thread's retry controller
 * asks for. Opening the agent is open-session-agent.ts; a compaction's model call is
 * summary-request.ts; a failed reply is finished by finish-failed-message.ts.
 */
import type { Agent, AgentMessage, StreamFn } from "@mariozechner/pi-agent-core";
import { clampThinkingLevel } from "@mariozechner/pi-ai";
import type { SummaryRequest } from "../../shared/compaction/summary-prompt.js";
import { LifelineError, toWireError } from "../../shared/errors.js";
import type { UiTransport } from "../../shared/extensions/extension-ui.js";
import { isRemovableFailure } from "../../shared/failures/classify.js";
import { redactSecrets } from "../../shared/failures/redact.js";
import { epochNow } from "../../shared/request-timing.js";
import { isThinkingLevel, type ThinkingLevel } from "../../shared/thinking.js";
import type { ModelChange, QueueMode, RunInput, SessionInit, SessionOpened } from "../../shared/wire/protocol.js";
import { RunMessageRefs } from "../../shared/wire/run-message-refs.js";
import { forgetDemoSession } from "../demo-provider.js";
import type { EventBatcher } from "../event-batcher.js";
import { assertRegisteredApi } from "../registered-api.js";
import type { RequestPermits } from "../request-permits.js";
import { resolveModel } from "../resolve-model.js";
import type { Credentials } from "./credentials.js";
import { finishFailedMessage, markIfOverflow } from "./finish-failed-message.js";
import { openSessionAgent, type SessionAgent } from "./open-session-agent.js";
import { requestSummary } from "./summary-request.js";

/**
 * A session inside the worker, created by `serveWorker` on `openSession`. Its methods throw typed
 * errors that `serveWorker` returns as data; its run's end is reported through the batcher.
 */
export class WorkerSession {
  readonly id: string;
  /** Where the session's `bash` commands run (the host's cwd). */
  readonly cwd: string;
  readonly #agent: Agent;
  readonly #batcher: EventBatcher;
  #activeRunId: number | undefined;
  /** Transcript length when the active run started, and message_end events forwarded since. */
  #runStart = 0;
  #forwarded = 0;
  #closed = false;
  readonly #credentials: Credentials;
  readonly #streamFn: StreamFn;
  /** The session's request timer: whether its current model request has gone out. */
  readonly #timer: SessionAgent["capture"]["timer"];
  /** The session's request capture: an aborted request's connection is closed after its run's end. */
  readonly #capture: SessionAgent["capture"];
  /** Aborts the summary request of an active `summarize` run. */
  #summaryAbort: AbortController | undefined;
  /** The run {@link abort} was called on: its `run_end` is posted at once, not batched. */
  #abortedRunId: number | undefined;

  private constructor(id: string, cwd: string, parts: SessionAgent, batcher: EventBatcher) {
    const { agent, capture, credentials } = parts;
    this.id = id;
    this.cwd = cwd;
    this.#agent = agent;
    this.#streamFn = parts.streamFn;
    this.#timer = capture.timer;
    this.#capture = capture;
    this.#batcher = batcher;
    this.#credentials = credentials;
    const secrets = credentials.secrets;
    const refs = new RunMessageRefs();
    // Tool times at the source (X9): pi-agent-core awaits its listeners before it runs a tool and
    // after the tool settled, so these stamps bracket the tool's execution. A run's executions
    // never outlive it: its end drops the stamps of calls that never ended (a thrown run).
    const toolStarts = new Map<string, number>();
    agent.subscribe((event) => {
      if (this.#closed) return;
      if (event.type === "tool_execution_start") toolStarts.set(event.toolCallId, epochNow());
      else if (event.type === "agent_end") toolStarts.clear();
      refs.note(event);
      if (event.type === "tool_execution_end") {
        const startMs = toolStarts.get(event.toolCallId);
        toolStarts.delete(event.toolCallId);
        if (startMs !== undefined) {
          batcher.pushEvent(id, { ...event, timing: { startMs, endMs: epochNow() } });
          return;
        }
      }
      if (event.type === "message_end") this.#forwarded++;
      // A reply that fails before streaming arrives as message_start carrying a copy of the final
      // message, then message_end with the message itself; both must be treated.
      if (event.type === "message_start" || event.type === "message_end") {
        const message = event.message;
        if (message.role === "assistant" && message.stopReason === "error") {
          finishFailedMessage(message, capture.failure(), secrets, this.#agent.state.model.contextWindow);
        }
      }
      // Timing at the source (request-timer.ts): each delta is stamped as the provider's stream
      // parsed it, before the batcher merges deltas and spaces its messages.
      if (event.type === "message_update") {
        if (TOKEN_DELTAS.has(event.assistantMessageEvent.type)) capture.timer.chunk();
      } else if (event.type === "message_end" && event.message.role === "assistant") {
        const timing = capture.timer.end();
        if (timing !== undefined) {
          batcher.pushEvent(id, { ...event, timing });
          return;
        }
      }
      if (event.type === "turn_end") batcher.pushEvent(id, refs.turnEnd(event));
      else if (event.type === "agent_end") batcher.pushEvent(id, refs.agentEnd(event));
      else batcher.pushEvent(id, event);
    });
  }

  /**
   * Opens the session's agent (see open-session-agent.ts).
   * @throws LifelineError ERR_UNKNOWN_MODEL, ERR_WORKER_MODULE, ERR_INVALID_OPTIONS for a model
   *   whose api no provider serves (checked after the module's setup, which may register it), or
   *   ERR_MISSING_API_KEY.
   */
  static async open(
    init: SessionInit,
    batcher: EventBatcher,
    permits?: RequestPermits,
    ui?: UiTransport,
  ): Promise<{ session: WorkerSession; opened: SessionOpened }> {
    const parts = await openSessionAgent(init, permits, ui);
    const session = new WorkerSession(init.sessionId, init.cwd ?? process.cwd(), parts, batcher);
    return { session, opened: { model: parts.model, thinkingLevel: parts.agent.state.thinkingLevel } };
  }

  /**
   * Switches the model for the next request (a retried one included); the active request keeps
   * its model. The thinking level becomes `thinkingLevel` (else the current one), clamped to the
   * new model. @throws LifelineError ERR_UNKNOWN_MODEL, ERR_INVALID_OPTIONS (no provider for its
   * api, or not a thinking level) or ERR_MISSING_API_KEY; model and level are unchanged then.
   */
  setModel(change: ModelChange, thinkingLevel?: ThinkingLevel): SessionOpened {
    const level = thinkingLevel ?? this.#agent.state.thinkingLevel;
    assertThinkingLevel(level);
    const model = resolveModel(change.model);
    assertRegisteredApi(model);
    this.#credentials.set(model, change.apiKey, change.authHeader === true);
    this.#agent.state.model = model;
    this.#agent.state.thinkingLevel = clampThinkingLevel(model, level);
    return { model, thinkingLevel: this.#agent.state.thinkingLevel };
  }

  /**
   * Sets the thinking level of the next request (a retried one included; the active request keeps
   * its own), clamped to the session's model; returns the level applied.
   * @throws LifelineError ERR_INVALID_OPTIONS for a value that is not a thinking level.
   */
  setThinkingLevel(level: ThinkingLevel): ThinkingLevel {
    assertThinkingLevel(level);
    this.#agent.state.thinkingLevel = clampThinkingLevel(this.#agent.state.model, level);
    return this.#agent.state.thinkingLevel;
  }

  /**
   * Queues a user message into the agent loop: `steer` before its next model call, `followUp`
   * when it would otherwise stop (pi-agent-core's queues). A retried run (`continue`) delivers
   * them too. Messages still queued when a run ends are delivered by the next run.
   */
  queueMessage(kind: "steer" | "followUp", message: AgentMessage): void {
    if (this.#closed) throw new LifelineError("ERR_SESSION_DISPOSED", `Session ${this.id} is closed.`);
    if (kind === "steer") this.#agent.steer(message);
    else this.#agent.followUp(message);
  }

  /** pi's steering and follow-up modes: how many queued messages the agent takes per turn. */
  setQueueMode(kind: "steer" | "followUp", mode: QueueMode): void {
    if (this.#closed) throw new LifelineError("ERR_SESSION_DISPOSED", `Session ${this.id} is closed.`);
    if (kind === "steer") this.#agent.steeringMode = mode;
    else this.#agent.followUpMode = mode;
  }

  /** Starts a run without waiting for it; its end is reported as a `run_end` item. */
  startRun(runId: number, input: RunInput): void {
    if (this.#closed) throw new LifelineError("ERR_SESSION_DISPOSED", `Session ${this.id} is closed.`);
    if (this.#activeRunId !== undefined || this.#agent.state.isStreaming) {
      throw new LifelineError(
        "ERR_SESSION_BUSY",
        `Session ${this.id} is already running; wait for agent_settled before starting another run.`,
      );
    }
    this.#activeRunId = runId;
    this.#runStart = this.#agent.state.messages.length;
    this.#forwarded = 0;
    if (input.kind === "summarize") {
      this.#summarize(input.request).then(
        (summary) => this.#endRun(runId, undefined, { summary }),
        (error: unknown) => this.#endRun(runId, error, { summary: undefined }),
      );
      return;
    }
    const run = input.kind === "prompt" ? this.#agent.prompt(input.message) : this.#agent.continue();
    run.then(
      () => this.#endRun(runId),
      (error: unknown) => this.#endRun(runId, error),
    );
  }

  /**
   * A compaction's model call (summary-request.ts), abortable by {@link abort}. Resolves with the
   * summary text, or undefined when aborted.
   * @throws LifelineError ERR_RUN_FAILED with the provider's error text when the request fails.
   */
  async #summarize(request: SummaryRequest): Promise<string | undefined> {
    const controller = new AbortController();
    this.#summaryAbort = controller;
    try {
      return await requestSummary(request, {
        streamFn: this.#streamFn,
        model: this.#agent.state.model,
        thinkingLevel: this.#agent.state.thinkingLevel,
        apiKey: this.#credentials.apiKey,
        sessionId: this.id,
        signal: controller.signal,
      });
    } finally {
      if (this.#summaryAbort === controller) this.#summaryAbort = undefined;
    }
  }

  /**
   * Aborts the active run's model request or tool, and drops queued steering and follow-up
   * messages (an abort stops what the user asked for, queued requests included, as in pi).
   * Returns whether a run was active.
   */
  abort(): boolean {
    const active = this.#activeRunId !== undefined;
    this.#abortedRunId = this.#activeRunId;
    this.#agent.clearAllQueues();
    this.#agent.abort();
    this.#summaryAbort?.abort();
    return active;
  }

  /**
   * The control channel's early abort (control-inbox.ts): {@link abort}, but only if run `runId`
   * is the active one and its model request has gone out (the request timer's `sent`). A run whose
   * `startRun` is still queued on the port, one that has ended, and one between its `turn_start`
   * and its fetch (or between two requests, or on a provider with no HTTP) are left alone; the
   * ordered `abort` call that follows on the port then does what is left. Why the fetch: the
   * early abort is polled between events, so it can land in the microtasks between a turn's
   * start and its request; cut there, the session would count a request the server never got.
   */
  abortRun(runId: number): void {
    if (this.#activeRunId === runId && this.#timer.sent) this.abort();
  }

  /** R4: removes a trailing failed assistant message. Refused while a run is active. */
  popFailedMessage(): boolean {
    if (this.#activeRunId !== undefined) return false;
    const messages = this.#agent.state.messages;
    if (!isRemovableFailure(messages[messages.length - 1])) return false;
    this.#agent.state.messages = messages.slice(0, -1);
    return true;
  }

  /** Installs a compacted transcript. Refused while a run is active (it would lose the run's messages). */
  replaceMessages(messages: AgentMessage[]): void {
    if (this.#activeRunId !== undefined || this.#agent.state.isStreaming) {
      throw new LifelineError(
        "ERR_SESSION_BUSY",
        `Session ${this.id} is running; its transcript cannot be replaced now.`,
      );
    }
    this.#agent.state.messages = messages;
  }

  /** B3: puts a message back at the end of the transcript. */
  appendMessage(message: AgentMessage): void {
    this.#agent.state.messages = [...this.#agent.state.messages, message];
  }

  /** Ends the session: aborts its run or summary request; nothing of it is reported after. */
  close(): void {
    this.#closed = true;
    this.#agent.abort();
    this.#summaryAbort?.abort();
    forgetDemoSession(this.id);
  }

  /** `summarized`: the outcome of a `summarize` run (no summary and no error: it was aborted). */
  #endRun(runId: number, error?: unknown, summarized?: { summary: string | undefined }): void {
    if (this.#activeRunId !== runId) return;
    this.#activeRunId = undefined;
    if (this.#closed) return;
    const tail = summarized === undefined ? this.#agent.state.messages.slice(this.#runStart + this.#forwarded) : [];
    for (const message of tail) {
      if (message.role === "assistant" && message.stopReason === "error") {
        markIfOverflow(message, this.#agent.state.model.contextWindow);
      }
    }
    const item: Parameters<EventBatcher["pushRunEnd"]>[0] = { type: "run_end", sessionId: this.id, runId, tail };
    if (summarized !== undefined && error === undefined) {
      if (summarized.summary === undefined) item.aborted = true;
      else item.summary = redactSecrets(summarized.summary, this.#credentials.secrets);
    }
    if (error !== undefined) {
      const wire = toWireError(error, "ERR_RUN_FAILED");
      wire.message = redactSecrets(wire.message, this.#credentials.secrets);
      if (wire.stack !== undefined) wire.stack = redactSecrets(wire.stack, this.#credentials.secrets);
      item.error = wire;
    }
    this.#batcher.pushRunEnd(item, this.#abortedRunId === runId);
    // The run's end is posted: an aborted request's connection, whose teardown was deferred so
    // that this post would not wait for it, is closed now rather than on the next macrotask (X3).
    this.#capture.tearDownAborted();
  }
}

/** The deltas that carry output: the first one ends the time to first token. */
const TOKEN_DELTAS = new Set(["text_delta", "thinking_delta", "toolcall_delta"]);

/** Main validates levels at its boundary; a value that is none still never reaches the agent. */
function assertThinkingLevel(level: unknown): asserts level is ThinkingLevel {
  if (!isThinkingLevel(level)) {
    throw new LifelineError("ERR_INVALID_OPTIONS", `${JSON.stringify(level)} is not a thinking level.`);
  }
}
