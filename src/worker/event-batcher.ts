/**
 * Batches and coalesces what a worker sends to the main thread.
 *
 * One `postMessage` costs the receiving main thread more than an in-process agent spends on an
 * event, so forwarding each streamed delta on its own would make the host slower than running
 * in-process. The batcher sends at most one message per flush for all sessions of the worker, and
 * merges consecutive deltas of the same content block of a session into one delta.
 *
 * Flush timing: the first item after a quiet period is flushed on the next macrotask (low latency);
 * under load, flushes are spaced at least `minIntervalMs` apart (bounded message rate).
 */
import type { AgentEvent } from "@mariozechner/pi-agent-core";
import type { BatchItem, WorkerMessage } from "../shared/protocol.js";

type UpdateEvent = Extract<AgentEvent, { type: "message_update" }>;
const DELTA_TYPES = new Set(["text_delta", "thinking_delta", "toolcall_delta"]);

export class EventBatcher {
  readonly #post: (message: WorkerMessage) => void;
  readonly #minIntervalMs: number;
  #items: BatchItem[] = [];
  /** Index in #items of each session's last item, for coalescing. */
  #lastIndex = new Map<string, number>();
  #timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  #lastFlush = 0;

  constructor(post: (message: WorkerMessage) => void, minIntervalMs: number) {
    this.#post = post;
    this.#minIntervalMs = minIntervalMs;
  }

  /** Queues a session event; deltas may be merged into the session's previous queued delta. */
  pushEvent(sessionId: string, event: AgentEvent): void {
    if (event.type === "message_update") {
      const wire = stripPartial(event);
      const index = this.#lastIndex.get(sessionId);
      const previous = index === undefined ? undefined : this.#items[index];
      if (previous?.type === "event" && tryMerge(previous.event, wire)) return;
      this.#append(sessionId, { type: "event", sessionId, event: wire });
      return;
    }
    this.#append(sessionId, { type: "event", sessionId, event });
  }

  /** Queues a run boundary. It is sent after every event queued before it. */
  pushRunEnd(item: Extract<BatchItem, { type: "run_end" }>): void {
    this.#append(item.sessionId, item);
  }

  /** Sends everything queued now. */
  flush(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer as NodeJS.Timeout);
      clearImmediate(this.#timer as NodeJS.Immediate);
      this.#timer = undefined;
    }
    if (this.#items.length === 0) return;
    const items = this.#items;
    this.#items = [];
    this.#lastIndex.clear();
    this.#lastFlush = performance.now();
    this.#post({ type: "batch", items });
  }

  #append(sessionId: string, item: BatchItem): void {
    this.#lastIndex.set(sessionId, this.#items.length);
    this.#items.push(item);
    if (this.#timer !== undefined) return;
    const wait = this.#lastFlush + this.#minIntervalMs - performance.now();
    this.#timer = wait > 0 ? setTimeout(() => this.flush(), wait) : setImmediate(() => this.flush());
  }
}

/** `partial` duplicates `message`; the main thread restores it (see the session event stream). */
function stripPartial(event: UpdateEvent): UpdateEvent {
  // Always a copy: tryMerge mutates queued events, which must never be the agent's own objects.
  const { partial: _partial, ...rest } = event.assistantMessageEvent as { partial?: unknown };
  return { ...event, assistantMessageEvent: rest as UpdateEvent["assistantMessageEvent"] };
}

/** Merges `next` into `previous` when both are deltas of the same content block. */
function tryMerge(previous: AgentEvent, next: UpdateEvent): boolean {
  if (previous.type !== "message_update") return false;
  const a = previous.assistantMessageEvent;
  const b = next.assistantMessageEvent;
  if (a.type !== b.type || !DELTA_TYPES.has(a.type)) return false;
  if (!("contentIndex" in a) || !("contentIndex" in b) || a.contentIndex !== b.contentIndex) return false;
  if (!("delta" in a) || !("delta" in b)) return false;
  (a as { delta: string }).delta += b.delta;
  previous.message = next.message;
  return true;
}
