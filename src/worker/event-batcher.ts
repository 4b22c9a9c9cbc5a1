/**
 * Batches and coalesces what a worker sends to the main thread.
 *
 * One `postMessage` costs the receiving main thread more than an in-process agent spends on an
 * event, so forwarding each streamed delta on its own would make the host slower than running
 * in-process. The batcher sends one message per flush for all sessions of the worker, merges
 * consecutive deltas of the same content block of a session, and slims updates down (see
 * stream-wire.ts).
 *
 * Flush timing: the first item after a quiet period is flushed on the next macrotask (low latency);
 * under load, flushes are spaced at least `minIntervalMs` apart (bounded message rate), and a batch
 * that reaches `maxItems` is sent at once, so no single message makes the host's main thread
 * deserialise and dispatch a long burst in one task.
 */
import type { AgentEvent } from "@mariozechner/pi-agent-core";
import type { TimedAgentEvent } from "../shared/events.js";
import type { BatchItem, BatchMessage } from "../shared/wire/protocol.js";
import type { WireAgentEnd, WireTurnEnd } from "../shared/wire/run-message-refs.js";
import { mergeWireUpdates, snapshot, toWireUpdate } from "../shared/wire/stream-wire.js";

/**
 * An agent event as the batcher takes it: `turn_end` and `agent_end` already in their wire form
 * (the session encodes them: run-message-refs.ts), `message_update` slimmed here.
 */
export type BatchedEvent =
  | Exclude<AgentEvent, { type: "turn_end" | "agent_end" | TimedAgentEvent["type"] }>
  | TimedAgentEvent
  | WireTurnEnd
  | WireAgentEnd;

/** Queues one worker's outgoing session items and posts them as batches; see the file comment. */
export class EventBatcher {
  readonly #post: (message: BatchMessage) => void;
  readonly #minIntervalMs: number;
  readonly #maxItems: number;
  #items: BatchItem[] = [];
  /** Index in #items of each session's last item, for coalescing. */
  #lastIndex = new Map<string, number>();
  /** The pending flush: a spacing timeout, or an immediate (next macrotask). */
  #timer: { kind: "timeout"; handle: NodeJS.Timeout } | { kind: "immediate"; handle: NodeJS.Immediate } | undefined;
  #lastFlush = Number.NEGATIVE_INFINITY;
  /** Called for every event pushed: the worker's control inbox looks for aborts (control-inbox.ts). */
  readonly #onEvent: (() => void) | undefined;

  /**
   * @param onEvent called for each event pushed, merged ones included, before it is queued; must
   *   be cheap and must not push anything itself (the control inbox's poll: one atomic read, its
   *   work deferred to a microtask; the worker's sign of life: a clock read, and a heartbeat
   *   posted past the batcher when nothing went out for a while).
   */
  constructor(post: (message: BatchMessage) => void, minIntervalMs: number, maxItems = 32, onEvent?: () => void) {
    this.#post = post;
    this.#minIntervalMs = minIntervalMs;
    this.#maxItems = maxItems;
    this.#onEvent = onEvent;
  }

  /**
   * Queues a session event; deltas may be merged into the session's previous queued delta. A
   * `message_end` or `tool_execution_end` may carry the worker's timing (the session adds it; the
   * batcher passes it on).
   */
  pushEvent(sessionId: string, event: BatchedEvent): void {
    this.#onEvent?.();
    if (event.type === "message_start") {
      this.#append(sessionId, { type: "event", sessionId, event: { ...event, message: snapshot(event.message) } });
      return;
    }
    if (event.type === "tool_execution_start") {
      // Sent before the tool runs: if the tool then kills or blocks the worker, the main thread
      // still knows the call was made and never re-runs it silently (SPEC X7).
      this.#append(sessionId, { type: "event", sessionId, event });
      this.flush();
      return;
    }
    if (event.type !== "message_update") {
      this.#append(sessionId, { type: "event", sessionId, event });
      return;
    }
    const wire = toWireUpdate(event);
    const index = this.#lastIndex.get(sessionId);
    const previous = index === undefined ? undefined : this.#items[index];
    if (
      previous?.type === "event" &&
      previous.event.type === "message_update" &&
      mergeWireUpdates(previous.event, wire)
    ) {
      return;
    }
    this.#append(sessionId, { type: "event", sessionId, event: wire });
  }

  /**
   * Queues a run boundary, sent after every event queued before it. It goes out on the next
   * macrotask, not after the load spacing: prompts settle and retries proceed on it. With `now`
   * (the end of an aborted run) it goes out at once, with everything queued before it: on a busy
   * worker the next macrotask can be a whole turn of its loop away (every other session's chunks
   * are parsed first), and `abort()` waits for this item to settle the prompt.
   */
  pushRunEnd(item: Extract<BatchItem, { type: "run_end" }>, now = false): void {
    this.#append(item.sessionId, item, true);
    if (now) this.flush();
  }

  /** Sends everything queued now. */
  flush(): void {
    this.#cancelTimer();
    if (this.#items.length === 0) return;
    const items = this.#items;
    this.#items = [];
    this.#lastIndex.clear();
    this.#lastFlush = performance.now();
    this.#post({ type: "batch", items });
  }

  /** Queues `item`; `urgent` items go out on the next macrotask whatever the load spacing. */
  #append(sessionId: string, item: BatchItem, urgent = false): void {
    this.#lastIndex.set(sessionId, this.#items.length);
    this.#items.push(item);
    if (this.#items.length >= this.#maxItems) {
      this.flush();
      return;
    }
    const wait = urgent ? 0 : this.#lastFlush + this.#minIntervalMs - performance.now();
    if (this.#timer !== undefined) {
      // A pending flush is soon enough unless this item is urgent and the flush is spaced out.
      if (wait > 0 || this.#timer.kind === "immediate") return;
      this.#cancelTimer();
    }
    this.#timer =
      wait > 0
        ? { kind: "timeout", handle: setTimeout(() => this.flush(), wait) }
        : { kind: "immediate", handle: setImmediate(() => this.flush()) };
  }

  #cancelTimer(): void {
    if (this.#timer?.kind === "timeout") clearTimeout(this.#timer.handle);
    else if (this.#timer?.kind === "immediate") clearImmediate(this.#timer.handle);
    this.#timer = undefined;
  }
}
