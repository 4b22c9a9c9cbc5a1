/**
 * `session.stats` (pi's SessionStats): counts and sums over the history, failed attempts included
 * (R4's persisted history keeps them), and pi's context usage of the runtime transcript.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, AssistantMessage, Model, Usage } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { sessionStats } from "../../../src/main/session/state/session-stats.js";
import { emptyUsage } from "../../../src/shared/usage.js";
import { assistantMessage } from "../../fixtures/messages.js";
import { mockModel } from "../../fixtures/models.mjs";

const model = mockModel(1) as Model<Api>;

function usage(input: number, output: number, cacheRead = 0, cacheWrite = 0, cost = 0): Usage {
  const total = input + output + cacheRead + cacheWrite;
  return {
    ...emptyUsage(),
    input,
    output,
    cacheRead,
    cacheWrite,
    totalTokens: total,
    cost: { ...emptyUsage().cost, total: cost },
  };
}

function reply(stopReason: AssistantMessage["stopReason"], used: Usage, toolCalls = 0): AssistantMessage {
  const message = assistantMessage(stopReason, stopReason === "error" ? "503 overloaded" : undefined, "answer");
  for (let i = 0; i < toolCalls; i++) {
    message.content.push({ type: "toolCall", id: `call-${i}`, name: "read", arguments: { path: "a" } });
  }
  return { ...message, usage: used };
}

const user = (text: string): AgentMessage => ({ role: "user", content: [{ type: "text", text }], timestamp: 0 });
const toolResult = (id: string): AgentMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName: "read",
  content: [{ type: "text", text: "file text" }],
  isError: false,
  timestamp: 0,
});

describe("session statistics", () => {
  it("sums every attempt's reported usage and cost, the failed attempt a retry replaced included", () => {
    const failed = reply("error", usage(100, 1, 0, 0, 0.0003));
    const answer = reply("stop", usage(120, 30, 50, 10, 0.002), 2);
    const history = [
      user("hi"),
      failed,
      answer,
      toolResult("call-0"),
      toolResult("call-1"),
      reply("aborted", usage(7, 2)),
    ];
    const messages = [user("hi"), answer, toolResult("call-0"), toolResult("call-1")];
    const stats = sessionStats({ id: "s1", sessionFile: "/tmp/s1.jsonl", model, history, messages });
    expect(stats).toEqual({
      sessionFile: "/tmp/s1.jsonl",
      sessionId: "s1",
      userMessages: 1,
      assistantMessages: 3,
      toolCalls: 2,
      toolResults: 2,
      totalMessages: 6,
      tokens: { input: 227, output: 33, cacheRead: 50, cacheWrite: 10, total: 320 },
      cost: 0.0003 + 0.002,
      contextUsage: expect.any(Object),
    });
  });

  it("reports context usage as pi does: the last good reply's usage plus estimates of what came after", () => {
    const answer = reply("stop", usage(900, 100));
    const messages = [user("hi"), answer, user("x".repeat(400))];
    const stats = sessionStats({ id: "s", sessionFile: undefined, model, history: messages, messages });
    expect(stats.contextUsage).toEqual({ tokens: 1100, contextWindow: 128_000, percent: (1100 / 128_000) * 100 });
    expect(stats.sessionFile).toBeUndefined();
  });

  it("reports the context size as unknown after a compaction until a reply after the summary reports usage", () => {
    const summary: AgentMessage = {
      role: "compactionSummary",
      summary: "## Objective",
      tokensBefore: 5000,
      timestamp: 0,
    };
    const before = [summary, user("go on")];
    const unknown = sessionStats({ id: "s", sessionFile: undefined, model, history: before, messages: before });
    expect(unknown.contextUsage).toEqual({ tokens: null, contextWindow: 128_000, percent: null });
    const after = [...before, reply("stop", usage(300, 20))];
    const known = sessionStats({ id: "s", sessionFile: undefined, model, history: after, messages: after });
    expect(known.contextUsage?.tokens).toBe(320);
  });

  it("leaves contextUsage out for a model that states no context window", () => {
    const stats = sessionStats({
      id: "s",
      sessionFile: undefined,
      model: { ...model, contextWindow: 0 },
      history: [],
      messages: [],
    });
    expect("contextUsage" in stats).toBe(false);
    expect(stats.tokens).toEqual({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 });
  });
});
