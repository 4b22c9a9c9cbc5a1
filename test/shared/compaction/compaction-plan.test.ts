/**
 * The pure parts of compaction (R1): where the transcript is cut, how its size is counted, and
 * how a stored compaction entry becomes a resumed transcript.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { fauxAssistantMessage } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { restoreTranscript } from "../../../src/main/session-files/session-transcript.js";
import { planCompaction, planKeepingAll } from "../../../src/shared/compaction/plan.js";
import { summaryMessage } from "../../../src/shared/compaction/summary-message.js";
import { contextTokens, overThreshold } from "../../../src/shared/compaction/tokens.js";

const user = (text: string): AgentMessage => ({ role: "user", content: [{ type: "text", text }], timestamp: 1 });
const reply = (text: string): AgentMessage => fauxAssistantMessage(text);
const toolCall = (): AgentMessage => ({
  ...fauxAssistantMessage(""),
  content: [{ type: "toolCall", id: "t1", name: "read", arguments: { path: "a" } }],
  stopReason: "toolUse",
});
const toolResult = (text: string): AgentMessage => ({
  role: "toolResult",
  toolCallId: "t1",
  toolName: "read",
  content: [{ type: "text", text }],
  isError: false,
  timestamp: 1,
});
const words = (n: number) => "x".repeat(n * 4);

describe("planCompaction", () => {
  it("R1: keeps about keepRecentTokens of the newest messages and summarizes the rest", () => {
    const messages = [user(words(100)), reply(words(100)), user(words(100)), reply(words(100))];
    const plan = planCompaction(messages, 150);
    expect(plan?.summarize).toEqual(messages.slice(0, 2));
    expect(plan?.kept).toEqual(messages.slice(2));
  });

  it("R1: never cuts between a tool call and its result", () => {
    const messages = [user(words(100)), toolCall(), toolResult(words(200)), reply(words(10))];
    const plan = planCompaction(messages, 150);
    // The result alone is over the budget; the cut moves to the next user or assistant message.
    expect(plan?.kept[0]?.role).not.toBe("toolResult");
    expect(plan?.kept).toEqual([messages[3]]);
  });

  it("R1: a summary at the front is not summarized as a message but updated", () => {
    const messages = [summaryMessage("earlier notes", 9000, 1), user(words(100)), reply(words(100)), user(words(100))];
    const plan = planCompaction(messages, 50);
    expect(plan?.previousSummary).toBe("earlier notes");
    expect(plan?.summarize).toEqual(messages.slice(1, 3));
  });

  it("R1: a transcript within keepRecentTokens has nothing to compact automatically", () => {
    expect(planCompaction([user("hi"), reply("hello")], 20_000)).toBeUndefined();
    expect(planCompaction([summaryMessage("s", 1, 1), user(words(100))], 0)).toBeUndefined();
  });
});

describe("planKeepingAll", () => {
  it("an explicit compaction of a short transcript, as pi's: nothing summarized, every message kept, a previous summary updated", () => {
    const short = [user("hi"), reply("hello")];
    expect(planKeepingAll(short)).toEqual({ summarize: [], previousSummary: undefined, kept: short });
    const compacted = [summaryMessage("earlier notes", 9000, 1), ...short];
    expect(planKeepingAll(compacted)).toEqual({ summarize: [], previousSummary: "earlier notes", kept: short });
    expect(planKeepingAll([])).toEqual({ summarize: [], previousSummary: undefined, kept: [] });
  });
});

describe("context tokens", () => {
  it("R1: the last successful reply's usage counts, plus estimates of what came after it", () => {
    const answered = {
      ...fauxAssistantMessage("ok"),
      usage: { ...fauxAssistantMessage("ok").usage, totalTokens: 5000 },
    };
    expect(contextTokens([user(words(10)), answered, user(words(100))])).toBe(5100);
    expect(contextTokens([user(words(10))])).toBe(10);
    expect(overThreshold(5100, 8000, 3000)).toBe(true);
    expect(overThreshold(5000, 8000, 3000)).toBe(false);
    expect(overThreshold(5100, 0, 3000)).toBe(false);
  });
});

describe("restoreTranscript with a compaction entry", () => {
  const at = "2026-01-01T00:00:00.000Z";
  const entry = (id: string, parentId: string | null, message: AgentMessage) => ({
    id,
    parentId,
    timestamp: at,
    type: "message" as const,
    message,
  });

  it("R1 B7: a resumed session starts from the summary and the messages from firstKeptEntryId on", () => {
    const [one, first, two, second, three] = [user("one"), reply("first"), user("two"), reply("second"), user("3")];
    const entries = [
      entry("a", null, one as AgentMessage),
      entry("b", "a", first as AgentMessage),
      entry("c", "b", two as AgentMessage),
      entry("d", "c", second as AgentMessage),
      {
        id: "e",
        parentId: "d",
        timestamp: at,
        type: "compaction",
        summary: "S",
        firstKeptEntryId: "c",
        tokensBefore: 9,
      },
      entry("f", "e", three as AgentMessage),
    ];
    const restored = restoreTranscript(entries);
    expect(restored.history).toHaveLength(5);
    expect(restored.messages[0]).toMatchObject({ role: "compactionSummary", summary: "S", tokensBefore: 9 });
    expect(restored.messages.slice(1)).toEqual([two, second, three]);
  });
});
