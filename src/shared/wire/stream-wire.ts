/**
 * How `message_update` events cross the thread boundary, both directions in one place.
 *
 * An agent's `message_update` carries the whole partial message twice (`message`, and
 * `assistantMessageEvent.partial`), so forwarding it as is copies the answer so far on every
 * delta: O(n²) bytes over a streamed answer, all of it deserialised on the host's main thread.
 * On the wire, every update drops `partial`, and text/thinking deltas (the frequent ones) also
 * drop `message`; the receiver rebuilds it by appending the delta to its copy. Every other
 * update (block starts and ends, tool-call deltas) keeps `message`, and the receiver takes it as
 * its new copy, except for the text of blocks still streaming, which only deltas decide (see
 * {@link StreamState}).
 */
import type { AgentEvent } from "@mariozechner/pi-agent-core";
import type { AssistantMessage, AssistantMessageEvent } from "@mariozechner/pi-ai";

type UpdateEvent = Extract<AgentEvent, { type: "message_update" }>;
/** Omit that keeps a union discriminated. */
type WithoutPartial<T> = T extends unknown ? Omit<T, "partial"> : never;
type WireInnerEvent = WithoutPartial<AssistantMessageEvent>;

/** A `message_update` as it crosses: no `partial`, and no `message` on text/thinking deltas. */
export interface WireUpdateEvent {
  type: "message_update";
  assistantMessageEvent: WireInnerEvent;
  message?: UpdateEvent["message"];
}

const REBUILT_DELTAS = new Set(["text_delta", "thinking_delta"]);

/** Sender side. Always returns a new object; the agent's own event is never modified. */
export function toWireUpdate(event: UpdateEvent): WireUpdateEvent {
  const { partial: _partial, ...inner } = event.assistantMessageEvent as AssistantMessageEvent & { partial?: unknown };
  return REBUILT_DELTAS.has(inner.type)
    ? { type: "message_update", assistantMessageEvent: inner as WireInnerEvent }
    : { type: "message_update", assistantMessageEvent: inner as WireInnerEvent, message: snapshot(event.message) };
}

/**
 * A copy of a message being streamed, as it is now. The agent's event snapshots are shallow and
 * providers mutate their content blocks in place; a batch is serialised later, so without this
 * copy a snapshot would show the message as of the flush (blocks that start later included)
 * rather than as of its event. Worker-side, once per block boundary: not on the delta path.
 *
 * An assistant message (built by pi-ai's providers: plain objects, arrays and primitives) is copied
 * by {@link copyPlain}, a few times cheaper than `structuredClone` for these small objects, which
 * was a visible item of a streaming worker's profile (bench (o): several snapshots a reply). Any
 * other message (a tool result's `details` may hold anything) is cloned as before.
 */
export function snapshot<M>(message: M): M {
  const role = (message as { role?: unknown } | null)?.role;
  return role === "assistant" ? copyPlain(message) : structuredClone(message);
}

/**
 * A deep copy of plain data: arrays and objects whose prototype is Object's (or null) are copied
 * key by key; anything else that is an object (a Date, a Map, a class instance) or a function goes
 * to `structuredClone`, which copies it as posting it would, or throws the same DataCloneError.
 */
function copyPlain<T>(value: T): T {
  if (typeof value === "function") return structuredClone(value);
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map(copyPlain) as T;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) out[key] = copyPlain((value as Record<string, unknown>)[key]);
  return out as T;
}

/**
 * Merges `next` into `previous` (both wire updates of one session, adjacent in its stream) when
 * they are deltas of the same content block. Mutates `previous`, which must be a wire copy.
 */
export function mergeWireUpdates(previous: WireUpdateEvent, next: WireUpdateEvent): boolean {
  const a = previous.assistantMessageEvent;
  const b = next.assistantMessageEvent;
  if (a.type !== b.type || !("delta" in a) || !("delta" in b)) return false;
  if (!("contentIndex" in a) || !("contentIndex" in b) || a.contentIndex !== b.contentIndex) return false;
  (a as { delta: string }).delta += b.delta;
  if (next.message !== undefined) previous.message = next.message;
  return true;
}

/**
 * The receiver's view of the message being streamed. Text of blocks still streaming comes from
 * the deltas, never from snapshots: providers mutate their blocks in place and the agent consumes
 * its stream with a lag, so even an event's own snapshot can hold text whose deltas come later.
 */
export interface StreamState {
  message: AssistantMessage;
  /** Each text/thinking block that has started and not ended, by content index: its text so far. */
  open: Map<number, { kind: "text" | "thinking"; text: string }>;
}

/** Receiver side, at `message_start` of an assistant message. */
export function startStream(message: AssistantMessage): StreamState {
  return { message, open: new Map() };
}

/**
 * Receiver side: the full `message_update` event. Updates `state`.
 * @returns the event, whose `message` is a new object (listeners may keep earlier snapshots).
 * @throws Error when a delta arrives before its `message_start` (a protocol error).
 */
export function fromWireUpdate(wire: WireUpdateEvent, state: StreamState | undefined): UpdateEvent {
  if (state === undefined) throw new Error(`${wire.assistantMessageEvent.type} arrived before its message_start`);
  const event = wire.assistantMessageEvent;
  const base = (wire.message as AssistantMessage | undefined) ?? state.message;
  const content = base.content.slice();
  switch (event.type) {
    case "text_start":
    case "thinking_start":
      state.open.set(event.contentIndex, { kind: event.type === "text_start" ? "text" : "thinking", text: "" });
      break;
    case "text_delta":
    case "thinking_delta": {
      const open = state.open.get(event.contentIndex);
      const kind = event.type === "text_delta" ? "text" : "thinking";
      state.open.set(event.contentIndex, { kind, text: (open?.text ?? "") + event.delta });
      break;
    }
    case "text_end":
    case "thinking_end":
      state.open.delete(event.contentIndex);
      content[event.contentIndex] = withText(
        content[event.contentIndex],
        event.type === "text_end" ? "text" : "thinking",
        event.content,
      );
      break;
    default:
      break;
  }
  for (const [index, open] of state.open) content[index] = withText(content[index], open.kind, open.text);
  const message: AssistantMessage = { ...base, content };
  state.message = message;
  const assistantMessageEvent = { ...event, partial: message } as AssistantMessageEvent;
  return { type: "message_update", message, assistantMessageEvent };
}

type Block = AssistantMessage["content"][number];

function withText(block: Block | undefined, kind: "text" | "thinking", text: string): Block {
  if (kind === "text") return { ...(block?.type === "text" ? block : {}), type: "text", text };
  return { ...(block?.type === "thinking" ? block : {}), type: "thinking", thinking: text };
}
