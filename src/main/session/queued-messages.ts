/**
 * The steering and follow-up messages a session sent to its worker and has not yet seen in the
 * transcript (`pendingMessageCount`). pi-agent-core's queues in the worker are the real ones;
 * this is main's count of them, and what a restore sends to a fresh worker again (X7).
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";

/** The queue a message went to: `steer` before the next model call, `followUp` when the loop would stop. */
export type QueueKind = "steer" | "followUp";

/** One session's sent, undelivered steering and follow-up messages, in the order sent. */
export class QueuedMessages {
  /**
   * Each pending message with its queue, in the order sent. Made by the first `add` (P4: a session
   * that never steers keeps no array; docs/performance.md).
   */
  #messages: [AgentMessage, QueueKind][] | undefined;

  get count(): number {
    return this.#messages?.length ?? 0;
  }

  /** `message` is being sent to the worker's `kind` queue. */
  add(kind: QueueKind, message: AgentMessage): void {
    this.#messages ??= [];
    this.#messages.push([message, kind]);
  }

  /** The worker refused `message` (added last): it is not pending. */
  remove(message: AgentMessage): void {
    const messages = this.#messages;
    if (messages === undefined) return;
    const index = messages.findIndex(([queued]) => queued === message);
    if (index >= 0) messages.splice(index, 1);
  }

  /** abort(): the worker drops its queues with the run. Returns whether anything was queued. */
  clear(): boolean {
    const had = this.count > 0;
    this.#messages = undefined;
    return had;
  }

  /** A user message reached the transcript: the queued message it is (same time, same content) is delivered. */
  delivered(message: AgentMessage): void {
    const messages = this.#messages;
    if (messages === undefined || messages.length === 0) return;
    const index = messages.findIndex(
      ([queued]) => queued.timestamp === message.timestamp && sameContent(queued, message),
    );
    if (index >= 0) messages.splice(index, 1);
  }

  /** Each pending message with its queue, in the order sent. */
  *[Symbol.iterator](): IterableIterator<[AgentMessage, QueueKind]> {
    for (const [message, kind] of this.#messages ?? []) yield [message, kind];
  }
}

function sameContent(a: AgentMessage, b: AgentMessage): boolean {
  return "content" in a && "content" in b && JSON.stringify(a.content) === JSON.stringify(b.content);
}
