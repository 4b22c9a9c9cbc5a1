/**
 * How `turn_end` and `agent_end` cross the thread boundary, both directions in one place.
 *
 * Both events repeat messages the run has already sent whole in its `message_end` events: a
 * turn's reply and tool results in `turn_end`, every message the run added in `agent_end`. Sent
 * as they are, a streamed reply crosses three times, each copy serialised by the worker and
 * deserialised by the host's main thread (bench (o) and (n): about a fifth of the bytes a prompt
 * sends). On the wire each such message is its position among the run's `message_end` events,
 * counted from the run's `agent_start`; the receiver keeps the messages of those events in order
 * and puts them back. Listeners then see, in all three events, the very object they saw at
 * `message_end`, as an in-process agent gives them, whichever batches the events crossed in.
 *
 * A message with no `message_end` in the run (the failure message pi-agent-core appends itself
 * when a run throws) crosses whole. A message is never an integer, so a number is always a
 * reference.
 */
import type { AgentEvent, AgentMessage } from "@mariozechner/pi-agent-core";
import type { ToolResultMessage } from "@mariozechner/pi-ai";

/** A message as `turn_end` and `agent_end` carry it across: whole, or its run's `message_end` index. */
export type WireRunMessage<M extends AgentMessage = AgentMessage> = M | number;

/** A `turn_end` as it crosses. */
export interface WireTurnEnd {
  type: "turn_end";
  message: WireRunMessage;
  toolResults: WireRunMessage<ToolResultMessage>[];
}

/** An `agent_end` as it crosses. */
export interface WireAgentEnd {
  type: "agent_end";
  messages: WireRunMessage[];
}

type TurnEnd = Extract<AgentEvent, { type: "turn_end" }>;
type AgentEnd = Extract<AgentEvent, { type: "agent_end" }>;

/**
 * Sender side, one per session: sees every agent event in order (before it is queued) and encodes
 * the two that repeat messages. Holds the run's messages until its `agent_end`.
 */
export class RunMessageRefs {
  #index = new Map<AgentMessage, number>();
  /** The run's `message_end` events so far: the receiver counts every one. */
  #ended = 0;

  /** Records what later events may refer to; call for every event, in the agent's order. */
  note(event: AgentEvent): void {
    if (event.type === "agent_start") this.#forget();
    else if (event.type === "message_end") {
      if (!this.#index.has(event.message)) this.#index.set(event.message, this.#ended);
      this.#ended++;
    }
  }

  /** The wire form of a `turn_end`: a new object; the agent's event is not modified. */
  turnEnd(event: TurnEnd): WireTurnEnd {
    return {
      type: "turn_end",
      message: this.#ref(event.message),
      toolResults: event.toolResults.map((result) => this.#ref(result)),
    };
  }

  /** The wire form of an `agent_end`, the run's last event: the run's messages are let go. */
  agentEnd(event: AgentEnd): WireAgentEnd {
    const messages = event.messages.map((message) => this.#ref(message));
    this.#forget();
    return { type: "agent_end", messages };
  }

  #forget(): void {
    this.#index.clear();
    this.#ended = 0;
  }

  #ref<M extends AgentMessage>(message: M): WireRunMessage<M> {
    return this.#index.get(message) ?? message;
  }
}

/**
 * Receiver side, one per session: the messages of the run's `message_end` events as the receiver
 * keeps them (its own copies), which `turn_end` and `agent_end` refer to.
 */
export class RunMessages {
  #ended: AgentMessage[] = [];

  /** The run started (its `agent_start`): earlier runs' messages are no longer referred to. */
  started(): void {
    this.#ended = [];
  }

  /** A `message_end` arrived; `message` is what the receiver made of it. */
  ended(message: AgentMessage): void {
    this.#ended.push(message);
  }

  /** @throws Error for a reference to no `message_end` of the run (a protocol error). */
  turnEnd(wire: WireTurnEnd): TurnEnd {
    return {
      type: "turn_end",
      message: this.#resolve(wire.message),
      toolResults: wire.toolResults.map((result) => this.#resolve(result)),
    };
  }

  /**
   * The run's last event: its messages are let go.
   * @throws Error for a reference to no `message_end` of the run (a protocol error).
   */
  agentEnd(wire: WireAgentEnd): AgentMessage[] {
    const messages = wire.messages.map((message) => this.#resolve(message));
    this.#ended = [];
    return messages;
  }

  #resolve<M extends AgentMessage>(wire: WireRunMessage<M>): M {
    if (typeof wire !== "number") return wire;
    const message = this.#ended[wire];
    if (message === undefined) {
      throw new Error(`a run event refers to message_end ${wire} of ${this.#ended.length} in its run`);
    }
    return message as M;
  }
}
