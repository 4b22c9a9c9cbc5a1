import type { AgentEvent } from "@mariozechner/pi-agent-core";
import { fauxAssistantMessage } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import type { BatchMessage } from "../../src/shared/wire/protocol.js";
import { EventBatcher } from "../../src/worker/event-batcher.js";

function delta(text: string, contentIndex = 0): AgentEvent {
  const message = fauxAssistantMessage(text);
  return {
    type: "message_update",
    message,
    assistantMessageEvent: { type: "text_delta", contentIndex, delta: text, partial: message },
  };
}

describe("EventBatcher", () => {
  it("sends everything queued in one turn as one message", async () => {
    const sent: BatchMessage[] = [];
    const batcher = new EventBatcher((m) => sent.push(m), 0);
    batcher.pushEvent("a", { type: "agent_start" });
    batcher.pushEvent("b", { type: "agent_start" });
    batcher.pushEvent("a", { type: "turn_start" });
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toHaveLength(1);
    expect(sent[0]?.items.map((i) => (i.type === "event" ? `${i.sessionId}:${i.event.type}` : i.type))).toEqual([
      "a:agent_start",
      "b:agent_start",
      "a:turn_start",
    ]);
  });

  it("merges consecutive deltas of one content block per session and drops the duplicate partial", () => {
    const sent: BatchMessage[] = [];
    const batcher = new EventBatcher((m) => sent.push(m), 0);
    batcher.pushEvent("a", delta("Hel"));
    batcher.pushEvent("b", delta("x"));
    batcher.pushEvent("a", delta("lo"));
    batcher.pushEvent("a", delta("!", 1));
    batcher.flush();
    const items = sent[0]?.items ?? [];
    const deltas = items.map((i) => {
      if (i.type !== "event" || i.event.type !== "message_update") return "";
      const inner = i.event.assistantMessageEvent as unknown as {
        delta: string;
        contentIndex: number;
        partial?: unknown;
      };
      expect(inner.partial).toBeUndefined();
      return `${i.sessionId}:${inner.contentIndex}:${inner.delta}`;
    });
    expect(deltas).toEqual(["a:0:Hello", "b:0:x", "a:1:!"]);
  });

  it("never merges across another event of the same session", () => {
    const sent: BatchMessage[] = [];
    const batcher = new EventBatcher((m) => sent.push(m), 0);
    batcher.pushEvent("a", delta("one"));
    batcher.pushEvent("a", { type: "turn_start" });
    batcher.pushEvent("a", delta("two"));
    batcher.flush();
    expect(sent[0]?.items).toHaveLength(3);
  });

  it("does not mutate the agent's own event objects", () => {
    const batcher = new EventBatcher(() => {}, 0);
    const first = delta("a");
    batcher.pushEvent("s", first);
    batcher.pushEvent("s", delta("b"));
    batcher.flush();
    expect((first as { assistantMessageEvent: { delta: string; partial?: unknown } }).assistantMessageEvent.delta).toBe(
      "a",
    );
    expect((first as { assistantMessageEvent: { partial?: unknown } }).assistantMessageEvent.partial).toBeDefined();
  });

  it("under load spaces flushes by the minimum interval", async () => {
    const sent: BatchMessage[] = [];
    const batcher = new EventBatcher((m) => sent.push(m), 20);
    batcher.pushEvent("a", { type: "agent_start" });
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toHaveLength(1);
    batcher.pushEvent("a", { type: "turn_start" });
    await new Promise((resolve) => setImmediate(resolve));
    // Still inside the interval: held back, not sent on the next macrotask.
    expect(sent).toHaveLength(1);
    batcher.flush();
    expect(sent).toHaveLength(2);
  });

  it("sends a run end on the next macrotask even inside the load spacing", async () => {
    const sent: BatchMessage[] = [];
    const batcher = new EventBatcher((m) => sent.push(m), 10_000);
    batcher.pushEvent("a", { type: "agent_start" });
    await new Promise((resolve) => setImmediate(resolve));
    batcher.pushEvent("a", { type: "turn_start" });
    batcher.pushRunEnd({ type: "run_end", sessionId: "a", runId: 1, tail: [] });
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toHaveLength(2);
    expect(sent[1]?.items.map((i) => i.type)).toEqual(["event", "run_end"]);
  });

  it("posts an aborted run's end at once, with everything queued before it", () => {
    const sent: BatchMessage[] = [];
    const batcher = new EventBatcher((m) => sent.push(m), 10_000);
    batcher.pushEvent("b", delta("other"));
    batcher.pushEvent("a", { type: "agent_end", messages: [] });
    batcher.pushRunEnd({ type: "run_end", sessionId: "a", runId: 1, tail: [] }, true);
    // Synchronously: a busy worker's next macrotask may be a whole turn of its loop away.
    expect(sent).toHaveLength(1);
    expect(sent[0]?.items.map((i) => `${i.sessionId}:${i.type === "event" ? i.event.type : i.type}`)).toEqual([
      "b:message_update",
      "a:agent_end",
      "a:run_end",
    ]);
  });

  it("calls its onEvent hook for every event pushed, merged deltas included", () => {
    let calls = 0;
    const batcher = new EventBatcher(
      () => {},
      10_000,
      32,
      () => calls++,
    );
    batcher.pushEvent("a", delta("Hel"));
    batcher.pushEvent("a", delta("lo"));
    batcher.pushEvent("a", { type: "turn_start" });
    expect(calls).toBe(3);
  });
});
