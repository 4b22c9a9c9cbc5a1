/**
 * Routing of a session's link items into its events (X4: in the order the worker produced them).
 * Streamed updates arrive slimmed and are rebuilt into whole messages here (see stream-wire.ts);
 * each `message_end`'s message is replaced by its compact copy (compact-message.ts), which reaches
 * the listeners and the transcript mirror; the retry controller sees each reply; and a run's
 * `agent_end` is decided here (R1/R4) but acted on at its `run_end`, by the session's runs, when
 * the worker's run is over and the transcript tail is in. A run whose worker died (X7) is ended
 * here too, with the events the worker would have sent.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, AssistantMessage, Model } from "@mariozechner/pi-ai";
import type { WorkerExitCause } from "../../../shared/errors.js";
import type { RetryEvent } from "../../../shared/events.js";
import type { BatchItem } from "../../../shared/wire/protocol.js";
import { RunMessages } from "../../../shared/wire/run-message-refs.js";
import { fromWireUpdate, type StreamState, startStream } from "../../../shared/wire/stream-wire.js";
import { type SummaryEnd, summaryEndOf } from "../../compaction/session-compaction.js";
import type { RetryController, RetryDecision } from "../../retry/retry-controller.js";
import { type ActiveRun, endInterruptedRun } from "../../supervision/session-restore.js";
import type { QueuedMessages } from "../commands/queued-messages.js";
import { lastAssistant } from "../prompt/pending-prompt.js";
import type { SessionListeners } from "../state/session-listeners.js";
import { compactMessage } from "./compact-message.js";
import type { TranscriptMirror } from "./transcript-mirror.js";

/** The decision made at a run's agent_end, carried out at its run_end. */
export interface AfterRun {
  decision: RetryDecision<AssistantMessage>;
  last: AssistantMessage | undefined;
}

/** A `run_end` item: the worker's run is over. */
type RunEnd = Extract<BatchItem, { type: "run_end" }>;

/** What the routing reads and tells of the run in flight and its prompt; implemented by the session's `SessionRuns`. */
export interface RunEventsTarget {
  isClosed(): boolean;
  /** The id of the run in flight; a `run_end` of any other run is stale. */
  readonly activeRunId: number | undefined;
  /** The run last started, if any; its `started` and `userSeen` are marked here as its events arrive. */
  readonly activeRun: ActiveRun | undefined;
  /** `message` is the live prompt's latest reply (no-op without a live prompt). */
  noteReply(message: AssistantMessage): void;
  /** A retry request of the live prompt went out (no-op without a live prompt). */
  countRetry(): void;
  /** The active run's agent_end was decided; the decision waits for its run_end. */
  decided(afterRun: AfterRun): void;
  /** The active `summarize` run ended with `end` (its compaction goes on). */
  summaryEnded(end: SummaryEnd): void;
  /** The active prompt run ended, its tail in the transcript: its agent_end decision is carried out. */
  runEnded(runError: string | undefined): void;
}

/** The session's parts the routing writes to, as narrow as it uses them. */
export interface RunEventsParts {
  readonly events: Pick<SessionListeners, "emit">;
  readonly mirror: Pick<TranscriptMirror, "messages" | "append">;
  readonly queued: Pick<QueuedMessages, "starting" | "delivered">;
  readonly retry: Pick<RetryController<AssistantMessage>, "onMessageEnd" | "onAgentEnd">;
}

/** One session's routing of link items; owns the message being streamed and the held retry events. */
export class RunEvents {
  readonly #target: RunEventsTarget;
  readonly #parts: RunEventsParts;
  /** The assistant message being streamed, rebuilt from slimmed updates (see stream-wire.ts). */
  #streaming: StreamState | undefined;
  /** Collects controller events while an agent_end decision is being made (see {@link decide}). */
  #heldRetryEvents: RetryEvent[] | undefined;
  /** The run's `message_end` messages, which its `turn_end` and `agent_end` refer to (run-message-refs.ts). */
  readonly #runMessages = new RunMessages();

  constructor(target: RunEventsTarget, parts: RunEventsParts) {
    this.#target = target;
    this.#parts = parts;
  }

  /** An item from the session's link (its `LinkClient.handleItem`). Ignored once the session is closed. */
  route(item: BatchItem): void {
    if (this.#target.isClosed()) return;
    if (item.type === "run_end") {
      this.#runEnded(item);
      return;
    }
    const { events, mirror, queued, retry } = this.#parts;
    const event = item.event;
    switch (event.type) {
      case "message_start": {
        if (event.message.role === "assistant") this.#streaming = startStream(event.message);
        // A user or tool message starts and ends as one object when both events share a batch:
        // the copy keeps that (its message_end finds the same copy).
        else event.message = compactMessage(event.message);
        // pi's order: a queued message leaves the queues (queue_update) before its message_start.
        if (event.message.role === "user") queued.starting(event.message);
        events.emit(event);
        return;
      }
      case "message_update": {
        events.emit(fromWireUpdate(event, this.#streaming));
        return;
      }
      case "message_end": {
        this.#streaming = undefined;
        // P4: the session keeps, and everyone sees, the compact copy (compact-message.ts).
        const message = compactMessage(event.message);
        event.message = message;
        const run = this.#target.activeRun;
        if (message.role === "user") {
          queued.delivered(message);
          if (run !== undefined) run.userSeen = true;
        }
        this.#runMessages.ended(message);
        mirror.append(message);
        events.emit(event);
        if (message.role === "assistant") {
          this.#target.noteReply(message);
          // A prompt's `retries` are the retry requests it sent: a retried attempt counts once its
          // request went out, as the worker's timing on its first reply says. A retry the budget
          // refused, or cancelled before its request (in the back-off, or aborted first), had an
          // `auto_retry_start` but sent nothing. (A reply made here for a dead worker's run has
          // no timing: whether its request went out is not known, and it is not counted.)
          if (run?.retry === true && event.timing !== undefined) {
            run.retry = false;
            this.#target.countRetry();
          }
          retry.onMessageEnd(message);
        }
        return;
      }
      case "agent_end": {
        // Acted on at run_end: the worker's run is over by then and the transcript tail is in.
        // Its messages are the copies their message_end events gave the mirror and the listeners.
        this.#target.decided(this.decide(this.#runMessages.agentEnd(event)));
        return;
      }
      case "turn_end": {
        events.emit(this.#runMessages.turnEnd(event));
        return;
      }
      case "agent_start": {
        this.#runMessages.started();
        const run = this.#target.activeRun;
        if (run !== undefined) run.started = true;
        events.emit(event);
        return;
      }
      default:
        events.emit(event);
    }
  }

  /**
   * A run ended in the worker. A stale `run_end` (not the active run's) is ignored; a summary run's
   * end goes to its compaction; a prompt run's tail (messages without a `message_end`) reaches the
   * transcript before its decision is carried out.
   */
  #runEnded(item: RunEnd): void {
    const target = this.#target;
    if (item.runId !== target.activeRunId) return;
    if (target.activeRun?.input.kind === "summarize") {
      target.summaryEnded(summaryEndOf(item));
      return;
    }
    for (const message of item.tail) {
      this.#parts.mirror.append(message);
    }
    target.runEnded(item.error?.message);
  }

  /**
   * The retry controller's `emit`. While an agent_end is being decided the event is held, so that
   * listeners see `agent_end` first (as in pi).
   */
  retryEvent(event: RetryEvent): void {
    if (this.#heldRetryEvents !== undefined) this.#heldRetryEvents.push(event);
    else this.#parts.events.emit(event);
  }

  /**
   * R1/R4 at a run's end (its agent_end, or the end main made for a run whose worker died): the
   * retry decision, then `agent_end {willRetry}` and any chain end.
   */
  decide(messages: AgentMessage[]): AfterRun {
    const last = lastAssistant(messages);
    if (last !== undefined) this.#target.noteReply(last);
    // The decision may end a chain; as in pi, listeners see agent_end before auto_retry_end.
    const held: RetryEvent[] = [];
    this.#heldRetryEvents = held;
    const decision = this.#parts.retry.onAgentEnd(last);
    this.#heldRetryEvents = undefined;
    this.#parts.events.emit({ type: "agent_end", messages, willRetry: decision.kind === "retry" });
    for (const retryEvent of held) this.#parts.events.emit(retryEvent);
    return { decision, last };
  }

  /**
   * X7: ends `run`, whose worker died before its agent_end, as the worker would have (see
   * {@link endInterruptedRun}): the reply being streamed, if any, ends as a failed one. Returns the
   * run's decision, made as at any agent_end.
   */
  interrupted(run: ActiveRun | undefined, cause: WorkerExitCause, model: Model<Api>): AfterRun {
    const { events, mirror, retry } = this.#parts;
    const streaming = this.#streaming;
    this.#streaming = undefined;
    const { produced, reply } = endInterruptedRun(run, streaming?.message, {
      messages: mirror.messages,
      model,
      cause,
      append: (message) => mirror.append(message),
      emit: (event) => events.emit(event),
    });
    this.#target.noteReply(reply);
    retry.onMessageEnd(reply);
    return this.decide(produced);
  }
}
