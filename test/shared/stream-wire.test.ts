import type { AgentEvent } from "@mariozechner/pi-agent-core";
import { type AssistantMessage, fauxAssistantMessage } from "@mariozechner/pi-ai";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  fromWireUpdate,
  mergeWireUpdates,
  snapshot,
  startStream,
  toWireUpdate,
} from "../../src/shared/wire/stream-wire.js";

type Update = Extract<AgentEvent, { type: "message_update" }>;

/** The updates an agent emits while streaming `blocks` (text or thinking), each with its own snapshot. */
function agentStream(blocks: readonly { kind: "text" | "thinking"; chunks: string[] }[]): {
  start: AssistantMessage;
  updates: Update[];
} {
  const start = fauxAssistantMessage([]);
  let partial: AssistantMessage = { ...start, content: [] };
  const updates: Update[] = [];
  const emit = (event: Record<string, unknown>) => {
    const snapshot = structuredClone(partial);
    updates.push({
      type: "message_update",
      message: snapshot,
      assistantMessageEvent: { ...event, partial: snapshot } as Update["assistantMessageEvent"],
    });
  };
  blocks.forEach((block, index) => {
    const field = block.kind === "text" ? "text" : "thinking";
    partial = { ...partial, content: [...partial.content, { type: block.kind, [field]: "" } as never] };
    emit({ type: `${block.kind}_start`, contentIndex: index });
    for (const chunk of block.chunks) {
      const current = partial.content[index] as unknown as Record<string, string>;
      partial.content[index] = { ...current, [field]: (current[field] ?? "") + chunk } as never;
      emit({ type: `${block.kind}_delta`, contentIndex: index, delta: chunk });
    }
    const done = partial.content[index] as unknown as Record<string, string>;
    emit({ type: `${block.kind}_end`, contentIndex: index, content: done[field] });
  });
  return { start, updates };
}

const blocks = fc.array(
  fc.record({
    kind: fc.constantFrom<"text" | "thinking">("text", "thinking"),
    chunks: fc.array(fc.string(), { maxLength: 8 }),
  }),
  { minLength: 1, maxLength: 4 },
);

describe("message_update on the wire", () => {
  it("the receiver rebuilds every snapshot exactly from slimmed updates", () => {
    fc.assert(
      fc.property(blocks, (spec) => {
        const { start, updates } = agentStream(spec);
        const state = startStream(start);
        for (const update of updates) {
          const wire = structuredClone(toWireUpdate(update));
          const rebuilt = fromWireUpdate(wire, state);
          expect(rebuilt.message).toEqual(update.message);
          expect(rebuilt.assistantMessageEvent).toEqual(update.assistantMessageEvent);
          expect((rebuilt.assistantMessageEvent as { partial: unknown }).partial).toBe(rebuilt.message);
        }
      }),
    );
  });

  it("text deltas travel without a snapshot; block boundaries keep theirs", () => {
    const { updates } = agentStream([{ kind: "text", chunks: ["a", "b"] }]);
    const wire = updates.map(toWireUpdate);
    expect(wire.map((w) => [w.assistantMessageEvent.type, w.message !== undefined])).toEqual([
      ["text_start", true],
      ["text_delta", false],
      ["text_delta", false],
      ["text_end", true],
    ]);
    expect(wire.every((w) => !("partial" in w.assistantMessageEvent))).toBe(true);
  });

  it("merged deltas rebuild the same final snapshot", () => {
    const { start, updates } = agentStream([{ kind: "text", chunks: ["he", "ll", "o"] }]);
    const [first, ...rest] = updates.map(toWireUpdate);
    const queued = [first];
    for (const next of rest) {
      const last = queued[queued.length - 1];
      if (!(last && next && mergeWireUpdates(last, next)) && next) queued.push(next);
    }
    expect(queued.map((w) => w?.assistantMessageEvent.type)).toEqual(["text_start", "text_delta", "text_end"]);
    const state = startStream(start);
    for (const wire of queued) if (wire) fromWireUpdate(wire, state);
    expect(state.message).toEqual(updates.at(-1)?.message);
  });

  it("snapshots that run ahead of the deltas do not duplicate text", () => {
    const { start, updates } = agentStream([{ kind: "text", chunks: ["ab", "cd"] }]);
    // As providers do: the block was mutated in place before the agent emitted text_start.
    const ahead = structuredClone(updates[0]) as Update;
    (ahead.message as AssistantMessage).content[0] = { type: "text", text: "abcd" };
    const state = startStream(start);
    const seen = [ahead, ...updates.slice(1)].map((u) => fromWireUpdate(toWireUpdate(u), state).message);
    const texts = seen.map((m) => (m.role === "assistant" && m.content[0]?.type === "text" ? m.content[0].text : "?"));
    expect(texts).toEqual(["", "ab", "abcd", "abcd"]);
  });

  it("a delta before its message_start is a protocol error, not a silent guess", () => {
    const { updates } = agentStream([{ kind: "text", chunks: ["x"] }]);
    const delta = updates[1];
    if (delta === undefined) throw new Error("no delta");
    expect(() => fromWireUpdate(toWireUpdate(delta), undefined)).toThrow(/before its message_start/);
  });

  it("a snapshot is a deep copy as of its event: the provider's later in-place edits do not show", () => {
    const message = fauxAssistantMessage([{ type: "text", text: "Hel" }]);
    const withDetails = { ...message, diagnostics: [{ at: new Date(0), tags: new Map([["a", 1]]) }] };
    const copy = snapshot(withDetails);
    const output = withDetails.usage.output;
    expect(copy).toEqual(structuredClone(withDetails));
    (withDetails.content[0] as { text: string }).text += "lo";
    withDetails.usage.output = output + 7;
    withDetails.diagnostics[0]?.tags.set("b", 2);
    expect(copy.content[0]).toEqual({ type: "text", text: "Hel" });
    expect(copy.usage.output).toBe(output);
    expect(copy.diagnostics[0]?.tags).toEqual(new Map([["a", 1]]));
    expect(() => snapshot({ ...message, bad: () => 1 })).toThrow();
  });
});
