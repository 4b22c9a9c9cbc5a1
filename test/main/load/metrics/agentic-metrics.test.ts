/**
 * Turns and tools of a load run (src/main/load/metrics/agentic-metrics.ts through LoadMetrics, and
 * report.json's `agentic` from agentic-report.ts), with a hand-driven clock: a reply with tool
 * calls starts a new turn and a retry repeats one, so requests = turns + retries; tool latency is
 * the worker's start and end stamps on tool_execution_end (X9); failures are ends with isError; a session's
 * completion runs from its first prompt's start to its last prompt's settling.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { LoadMetrics, type PromptRecord } from "../../../../src/main/load/metrics/load-metrics.js";
import { agenticReport } from "../../../../src/main/load/report/agentic-report.js";
import type { SessionEvent } from "../../../../src/shared/events.js";

function reply(stopReason: AssistantMessage["stopReason"]): AssistantMessage {
  return {
    role: "assistant",
    content: [],
    api: "openai-completions",
    provider: "mock",
    model: "mock-1",
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason,
    ...(stopReason === "error" ? { errorMessage: "503 overloaded" } : {}),
    timestamp: 0,
  };
}

const turnStart = { type: "turn_start" } as SessionEvent;
const end = (stopReason: AssistantMessage["stopReason"]) =>
  ({ type: "message_end", message: reply(stopReason) }) as SessionEvent;
const toolStart = (id: string) =>
  ({ type: "tool_execution_start", toolCallId: id, toolName: "load_tool", args: {} }) as SessionEvent;
/** A tool's end as the worker sends it: with its start and end stamped there (X9). */
const toolEnd = (id: string, isError: boolean, timing?: { startMs: number; endMs: number }) =>
  ({
    type: "tool_execution_end",
    toolCallId: id,
    toolName: "load_tool",
    result: {},
    isError,
    ...(timing === undefined ? {} : { timing }),
  }) as SessionEvent;
const retry = (attempt: number) =>
  ({ type: "auto_retry_start", attempt, maxAttempts: 3, delayMs: 5, errorMessage: "503" }) as SessionEvent;

function clocked() {
  let now = 0;
  const metrics = new LoadMetrics(() => now);
  return { metrics, at: (ms: number) => (now = ms) };
}

describe("turns", () => {
  it("a reply with tool calls starts a new turn; a retry repeats its turn with the next attempt", () => {
    const { metrics, at } = clocked();
    metrics.promptStarted(0);
    // Turn 0: two tool calls. Turn 1: a 503, retried once, then two more calls. Turn 2: the answer.
    metrics.onEvent(0, turnStart);
    metrics.onEvent(0, end("toolUse"));
    at(10);
    metrics.onEvent(0, toolStart("a"));
    metrics.onEvent(0, toolStart("b"));
    at(25);
    metrics.onEvent(0, toolEnd("b", false, { startMs: 1000, endMs: 1015 }));
    at(40);
    metrics.onEvent(0, toolEnd("a", true, { startMs: 1000, endMs: 1030 }));
    metrics.onEvent(0, turnStart);
    metrics.onEvent(0, end("error"));
    metrics.onEvent(0, retry(1));
    metrics.onEvent(0, turnStart);
    metrics.onEvent(0, end("toolUse"));
    metrics.onEvent(0, toolStart("c"));
    at(50);
    metrics.onEvent(0, toolEnd("c", false, { startMs: 1040.5, endMs: 1050.75 }));
    metrics.onEvent(0, turnStart);
    metrics.onEvent(0, end("stop"));
    at(60);
    const prompt = metrics.promptEnded(0, 0, { result: { stopReason: "stop", retries: 1 } });
    expect(metrics.requests.map((r) => [r.turn, r.attempt, r.stopReason])).toEqual([
      [0, 0, "toolUse"],
      [1, 0, "error"],
      [1, 1, "toolUse"],
      [2, 0, "stop"],
    ]);
    expect(prompt).toMatchObject({ requests: 4, retries: 1, turns: 3, toolCalls: 3 });
    expect(prompt.requests).toBe(prompt.turns + prompt.retries);
    expect(metrics.agentic.figures).toEqual({ toolCalls: 3, toolFailures: 1, toolLatenciesMs: [15, 30, 10.25] });
    expect(metrics.counters.toolCalls).toBe(3);
  });

  it("the next prompt starts again at turn 0 with no tool calls; without tools a prompt has one turn", () => {
    const { metrics } = clocked();
    metrics.promptStarted(0);
    metrics.onEvent(0, turnStart);
    metrics.onEvent(0, end("toolUse"));
    metrics.onEvent(0, toolStart("a"));
    metrics.onEvent(0, toolEnd("a", false));
    metrics.onEvent(0, turnStart);
    metrics.onEvent(0, end("stop"));
    expect(metrics.promptEnded(0, 0, { result: { stopReason: "stop", retries: 0 } })).toMatchObject({
      turns: 2,
      toolCalls: 1,
    });
    metrics.promptStarted(0);
    metrics.onEvent(0, turnStart);
    metrics.onEvent(0, end("stop"));
    expect(metrics.promptEnded(0, 0, { result: { stopReason: "stop", retries: 0 } })).toMatchObject({
      turns: 1,
      toolCalls: 0,
    });
    expect(metrics.requests.at(-1)).toMatchObject({ prompt: 1, turn: 0, attempt: 0 });
  });

  it("a turn whose tools ran but whose request never started is not counted", () => {
    const { metrics } = clocked();
    metrics.promptStarted(0);
    metrics.onEvent(0, turnStart);
    metrics.onEvent(0, end("toolUse"));
    metrics.onEvent(0, toolStart("a"));
    const prompt = metrics.promptEnded(0, 0, { result: { stopReason: "aborted", retries: 0 } }, true);
    expect(prompt).toMatchObject({ turns: 1, toolCalls: 1, outcome: "cancelled" });
  });
});

describe("tool latency", () => {
  it("X9: is the worker's stamps' difference, not the time between the events' arrivals on the main thread", () => {
    const { metrics, at } = clocked();
    metrics.promptStarted(0);
    metrics.onEvent(0, turnStart);
    metrics.onEvent(0, end("toolUse"));
    // The main thread was busy: the start arrived late, the end 0.2 ms after it. The tool took 5 ms.
    at(100);
    metrics.onEvent(0, toolStart("a"));
    at(100.2);
    metrics.onEvent(0, toolEnd("a", false, { startMs: 1_700_000_000_090.125, endMs: 1_700_000_000_095.126 }));
    expect(metrics.agentic.figures.toolLatenciesMs).toEqual([5.001]);
  });

  it("an end without the worker's stamps is counted, failure included, but not timed", () => {
    const { metrics } = clocked();
    metrics.promptStarted(0);
    metrics.onEvent(0, toolStart("a"));
    metrics.onEvent(0, toolEnd("a", true));
    expect(metrics.agentic.figures).toEqual({ toolCalls: 1, toolFailures: 1, toolLatenciesMs: [] });
  });
});

describe("tools cut by the run's end", () => {
  it("an execution that ends after the run ended is neither a failure nor timed", () => {
    const { metrics, at } = clocked();
    metrics.promptStarted(0);
    metrics.onEvent(0, turnStart);
    metrics.onEvent(0, end("toolUse"));
    metrics.onEvent(0, toolStart("a"));
    metrics.onEvent(0, toolStart("b"));
    at(5);
    metrics.onEvent(0, toolEnd("a", true, { startMs: 0, endMs: 5 }));
    metrics.agentic.runEnded();
    at(9);
    metrics.onEvent(0, toolEnd("b", true, { startMs: 0, endMs: 9 }));
    expect(metrics.agentic.figures).toEqual({ toolCalls: 2, toolFailures: 1, toolLatenciesMs: [5] });
  });
});

describe("report.json agentic", () => {
  const prompt = (session: number, startMs: number, latencyMs: number, over: Partial<PromptRecord> = {}) =>
    ({
      type: "prompt",
      session,
      prompt: 0,
      startMs,
      latencyMs,
      requests: 2,
      retries: 0,
      turns: 2,
      toolCalls: 1,
      outcome: "succeeded",
      ...over,
    }) satisfies PromptRecord;

  it("turns per prompt over succeeded prompts; session completion over sessions with no cancelled prompt", () => {
    const report = agenticReport({ toolCalls: 4, toolFailures: 1, toolLatenciesMs: [5, 7] }, [
      prompt(0, 10, 100),
      prompt(0, 120, 30, { turns: 3 }),
      prompt(1, 12, 50, { turns: 1, outcome: "failed" }),
      prompt(1, 70, 200),
      prompt(2, 15, 40),
      prompt(2, 60, 900, { outcome: "cancelled" }),
    ]);
    expect(report).toMatchObject({
      toolCalls: 4,
      toolFailures: 1,
      turnsPerPrompt: { count: 4, min: 2, max: 3 },
      toolLatencyMs: { count: 2, min: 5, max: 7 },
      sessionCompletionMs: { count: 2, min: 140, max: 258 },
    });
  });
});
