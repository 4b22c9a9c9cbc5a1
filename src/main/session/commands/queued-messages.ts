/**
 * The steering and follow-up messages a session sent to its worker and has not yet seen in the
 * transcript (`pendingMessageCount`). pi-agent-core's queues in the worker are the real ones;
 * this is main's view of them, what a restore sends to a fresh worker again (X7), and the source
 * of pi's `queue_update` event, emitted whenever the view changes.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { SessionEvent } from "../../../shared/events.js";
import { messageText } from "../../../shared/message-text.js";

/** The queue a message went to: `steer` before the next model call, `followUp` when the loop would stop. */
export type QueueKind = "steer" | "followUp";

/**
 * One pending message: its queue, and whether its delivery has begun (its `message_start` came,
 * its `message_end` has not: it is out of the queues, but not yet in the transcript either).
 */
type Entry = [message: AgentMessage, kind: QueueKind, starting: boolean];

/** One session's sent, undelivered steering and follow-up messages, in the order sent. */
export class QueuedMessages {
  /**
   * Each pending message, in the order sent. Made by the first `add` (P4: a session that never
   * steers keeps no array; docs/performance.md).
   */
  #messages: Entry[] | undefined;
  /** Where `queue_update` goes (the session's listeners; held as the object, P4). */
  readonly #events: { emit(event: SessionEvent): void };

  constructor(events: { emit(event: SessionEvent): void }) {
    this.#events = events;
  }

  /** Messages still in the queues, as pi counts them: a delivery that has begun is not counted. */
  get count(): number {
    let count = 0;
    for (const [, , starting] of this.#messages ?? []) if (!starting) count++;
    return count;
  }

  /** `message` is being sent to the worker's `kind` queue. */
  add(kind: QueueKind, message: AgentMessage): void {
    this.#messages ??= [];
    this.#messages.push([message, kind, false]);
    this.#changed();
  }

  /** The worker refused `message` (added last): it is not pending. */
  remove(message: AgentMessage): void {
    const messages = this.#messages;
    if (messages === undefined) return;
    const index = messages.findIndex(([queued]) => queued === message);
    if (index < 0) return;
    messages.splice(index, 1);
    this.#changed();
  }

  /** abort(): the worker drops its queues with the run. Returns whether anything was queued. */
  clear(): boolean {
    const had = (this.#messages?.length ?? 0) > 0;
    this.#messages = undefined;
    if (had) this.#changed();
    return had;
  }

  /**
   * A user message starts in the run (its `message_start`): if it is a queued one (same time, same
   * content), it leaves the queues now, before the event is emitted, as pi updates its queues. It
   * stays pending for a restore until {@link delivered}.
   */
  starting(message: AgentMessage): void {
    const entry = this.#find(message, false);
    if (entry === undefined) return;
    entry[2] = true;
    this.#changed();
  }

  /** A user message reached the transcript: the queued message it is (same time, same content) is delivered. */
  delivered(message: AgentMessage): void {
    const messages = this.#messages;
    const entry = this.#find(message, true);
    if (messages === undefined || entry === undefined) return;
    messages.splice(messages.indexOf(entry), 1);
    // Its start was announced already, unless the start never came through (a restored run).
    if (!entry[2]) this.#changed();
  }

  /** Each pending message with its queue, in the order sent (deliveries begun included: not in the transcript yet). */
  *[Symbol.iterator](): IterableIterator<[AgentMessage, QueueKind]> {
    for (const [message, kind] of this.#messages ?? []) yield [message, kind];
  }

  /** The first entry that is `message`, among those whose delivery has not begun unless `starting`. */
  #find(message: AgentMessage, starting: boolean): Entry | undefined {
    const messages = this.#messages;
    if (messages === undefined || messages.length === 0) return undefined;
    return messages.find(
      ([queued, , begun]) =>
        (starting || !begun) && queued.timestamp === message.timestamp && sameContent(queued, message),
    );
  }

  /** pi's `queue_update`: the text of every message still in each queue, in order. */
  #changed(): void {
    const steering: string[] = [];
    const followUp: string[] = [];
    for (const [message, kind, starting] of this.#messages ?? []) {
      if (!starting) (kind === "steer" ? steering : followUp).push(textOf(message));
    }
    this.#events.emit({ type: "queue_update", steering, followUp });
  }
}

function sameContent(a: AgentMessage, b: AgentMessage): boolean {
  return "content" in a && "content" in b && JSON.stringify(a.content) === JSON.stringify(b.content);
}

/** A queued message's text (lifeline queues text only). */
function textOf(message: AgentMessage): string {
  return "content" in message ? messageText(message.content) : "";
}
