/**
 * RunEvents as a unit: link items in, session events and calls on its prompt runner out. The
 * runner, transcript, steering queue and retry controller are fakes that log what reaches them.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import type { RetryDecision } from "../../../src/main/retry/retry-controller.js";
import { type AfterRun, RunEvents, type RunEventsTarget } from "../../../src/main/session/runs/run-events.js";
import type { ActiveRun } from "../../../src/main/supervision/session-restore.js";
import type { SessionEvent } from "../../../src/shared/events.js";
import type { BatchItem } from "../../../src/shared/wire/protocol.js";
import { assistantMessage } from "../../fixtures/messages.js";

const user: AgentMessage = { role: "user", content: [{ type: "text", text: "hi" }], timestamp: 1 };

function event(e: Extract<BatchItem, { type: "event" }>["event"]): BatchItem {
  return { type: "event", sessionId: "s1", event: e };
}

/** RunEvents over fakes; `decide` is what the fake controller answers at agent_end (and may emit meanwhile). */
function harness(
  decide: (events: RunEvents) => RetryDecision<AssistantMessage> = () => ({ kind: "none", failure: "no_message" }),
) {
  const log: string[] = [];
  const emitted: SessionEvent[] = [];
  const transcript: AgentMessage[] = [];
  let closed = false;
  let afterRun: AfterRun | undefined;
  const run: ActiveRun = { input: { kind: "continue" }, started: false, userSeen: false, aborted: false };
  const target: RunEventsTarget = {
    isClosed: () => closed,
    activeRunId: 7,
    activeRun: run,
    noteReply: (message) => log.push(`noteReply ${message.stopReason}`),
    countRetry: () => log.push("countRetry"),
    decided: (decided) => {
      afterRun = decided;
      log.push(`decided ${decided.decision.kind}`);
    },
    summaryEnded: () => log.push("summaryEnded"),
    runEnded: (runError) => log.push(`runEnded ${runError ?? "-"} after ${transcript.length} messages`),
  };
  const events: RunEvents = new RunEvents(target, {
    events: { emit: (e) => emitted.push(e) },
    mirror: { messages: transcript, append: (message) => void transcript.push(message) },
    queued: { starting: () => log.push("starting"), delivered: () => log.push("delivered") },
    retry: {
      onMessageEnd: (message) => void log.push(`onMessageEnd ${message.stopReason}`),
      onAgentEnd: () => decide(events),
    },
  });
  return {
    events,
    emitted,
    log,
    run,
    transcript,
    types: () => emitted.map((e) => e.type),
    afterRun: () => afterRun,
    close: () => {
      closed = true;
    },
  };
}

describe("RunEvents", () => {
  it("P4: a message's start, end and transcript entry are one compact copy when one batch carried it", () => {
    const h = harness();
    const original = structuredClone(user);
    h.events.route(event({ type: "message_start", message: original }));
    h.events.route(event({ type: "message_end", message: original }));
    const [start, end] = h.emitted as Extract<SessionEvent, { type: "message_start" | "message_end" }>[];
    expect(start?.message).toBe(end?.message);
    expect(h.transcript[0]).toBe(end?.message);
    expect(end?.message).not.toBe(original);
    expect(end?.message).toStrictEqual(original);
  });

  it("turn_end and agent_end name their run's message_ends by index: listeners get the same copies, whole messages pass", () => {
    const h = harness();
    const reply = structuredClone(assistantMessage("error", "503"));
    const unseen = assistantMessage("error", "504");
    h.events.route(event({ type: "agent_start" }));
    h.events.route(event({ type: "message_start", message: structuredClone(user) }));
    h.events.route(event({ type: "message_end", message: structuredClone(user) }));
    h.events.route(event({ type: "message_end", message: reply }));
    h.events.route(event({ type: "turn_end", message: 1, toolResults: [] }));
    h.events.route(event({ type: "agent_end", messages: [0, 1, unseen] }));
    const ends = h.emitted.filter((e) => e.type === "message_end").map((e) => e.message);
    const turnEnd = h.emitted.find((e) => e.type === "turn_end") as Extract<SessionEvent, { type: "turn_end" }>;
    const agentEnd = h.emitted.find((e) => e.type === "agent_end") as Extract<SessionEvent, { type: "agent_end" }>;
    expect(turnEnd.message).toBe(ends[1]);
    expect(turnEnd.message).toStrictEqual(reply);
    expect(agentEnd.messages[0]).toBe(ends[0]);
    expect(agentEnd.messages[1]).toBe(h.transcript[1]);
    expect(agentEnd.messages[2]).toBe(unseen);
  });

  it("a run's indexes start again at its agent_start, and one past its message_ends is a protocol error", () => {
    const h = harness();
    h.events.route(event({ type: "agent_start" }));
    h.events.route(event({ type: "message_end", message: structuredClone(assistantMessage("error", "503")) }));
    h.events.route(event({ type: "agent_end", messages: [0] }));
    h.events.route(event({ type: "agent_start" }));
    h.events.route(event({ type: "message_end", message: structuredClone(assistantMessage("stop", "done")) }));
    h.events.route(event({ type: "turn_end", message: 0, toolResults: [] }));
    const turnEnd = h.emitted.find((e) => e.type === "turn_end") as Extract<SessionEvent, { type: "turn_end" }>;
    expect(turnEnd.message).toBe(h.transcript[1]);
    expect(() => h.events.route(event({ type: "agent_end", messages: [0, 1] }))).toThrow(
      "a run event refers to message_end 1 of 1 in its run",
    );
  });

  it("listeners see agent_end before the retry events its decision emits, and the decision waits for run_end", () => {
    const h = harness((events) => {
      events.retryEvent({ type: "auto_retry_end", success: false, attempt: 2, reason: "exhausted", finalError: "x" });
      return { kind: "none", failure: "exhausted" };
    });
    const failed = assistantMessage("error", "503");
    h.events.route(event({ type: "agent_end", messages: [failed] }));
    expect(h.types()).toEqual(["agent_end", "auto_retry_end"]);
    expect(h.log).toEqual(["noteReply error", "decided none"]);
    expect(h.afterRun()?.last).toBe(failed);
  });

  it("agent_end says willRetry when the controller decides to retry; the auto_retry_start alone counts no retry", () => {
    const failed = assistantMessage("error", "503");
    const retry: RetryDecision<AssistantMessage> = {
      kind: "retry",
      chainId: 1,
      attempt: 1,
      maxAttempts: 3,
      delayMs: 10,
      message: failed,
      usageLimit: false,
    };
    const h = harness(() => retry);
    h.events.route(event({ type: "agent_end", messages: [failed] }));
    h.events.retryEvent({ type: "auto_retry_start", attempt: 1, maxAttempts: 3, delayMs: 10, errorMessage: "503" });
    expect(h.emitted[0]).toMatchObject({ type: "agent_end", willRetry: true });
    expect(h.types()).toEqual(["agent_end", "auto_retry_start"]);
    expect(h.log).toEqual(["noteReply error", "decided retry"]);
  });

  const timing = { requestStartMs: 1, endMs: 2, chunks: 0, chunkGapsMs: [] };

  it("a retried run counts one retry when its first reply says its request went out; its later turns are not retries", () => {
    const h = harness();
    h.run.retry = true;
    h.events.route(event({ type: "agent_start" }));
    h.events.route(event({ type: "message_end", message: assistantMessage("toolUse"), timing }));
    h.events.route(event({ type: "message_end", message: assistantMessage("stop"), timing }));
    expect(h.log.filter((line) => line === "countRetry")).toHaveLength(1);
  });

  it("a retried run's reply without the worker's request timing (made for a dead worker's run) counts no retry; a first attempt's reply none either", () => {
    const h = harness();
    h.run.retry = true;
    h.events.route(event({ type: "message_end", message: assistantMessage("error", "worker exited") }));
    const first = harness();
    first.events.route(event({ type: "message_end", message: assistantMessage("stop"), timing }));
    expect([...h.log, ...first.log]).not.toContain("countRetry");
  });

  it("a run_end appends the run's tail to the transcript before the run's decision is carried out", () => {
    const h = harness();
    const tail = assistantMessage("error", "thrown");
    h.events.route({
      type: "run_end",
      sessionId: "s1",
      runId: 7,
      tail: [tail],
      error: { code: "ERR_PROTOCOL", message: "boom" },
    });
    expect(h.transcript).toEqual([tail]);
    expect(h.log).toEqual(["runEnded boom after 1 messages"]);
  });

  it("a run_end of a run that is not the active one is ignored", () => {
    const h = harness();
    h.events.route({ type: "run_end", sessionId: "s1", runId: 6, tail: [assistantMessage("stop")] });
    expect(h.transcript).toEqual([]);
    expect(h.log).toEqual([]);
  });

  it("a run_end of a summary run ends its compaction and leaves the transcript alone", () => {
    const h = harness();
    h.run.input = { kind: "summarize", request: { messages: [] } };
    h.events.route({ type: "run_end", sessionId: "s1", runId: 7, tail: [], summary: "short" });
    expect(h.log).toEqual(["summaryEnded"]);
  });

  it("message_end marks the run's user message seen, delivers queued steering and gives replies to the controller", () => {
    const h = harness();
    h.events.route(event({ type: "agent_start" }));
    h.events.route(event({ type: "message_end", message: user }));
    h.events.route(event({ type: "message_end", message: assistantMessage("stop") }));
    expect(h.run).toMatchObject({ started: true, userSeen: true });
    expect(h.transcript.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(h.log).toEqual(["delivered", "noteReply stop", "onMessageEnd stop"]);
    expect(h.types()).toEqual(["agent_start", "message_end", "message_end"]);
  });

  it("items that arrive after the session closed are dropped", () => {
    const h = harness();
    h.close();
    h.events.route(event({ type: "agent_start" }));
    h.events.route({ type: "run_end", sessionId: "s1", runId: 7, tail: [] });
    expect(h.types()).toEqual([]);
    expect(h.log).toEqual([]);
  });

  it("a run whose worker died ends with the reply it was streaming, failed, and its decision", () => {
    const h = harness();
    const partial = assistantMessage("stop");
    h.events.route(event({ type: "message_start", message: partial }));
    const afterRun = h.events.interrupted(h.run, "crash", {
      id: "m",
      name: "m",
      api: "openai-completions",
      provider: "p",
      baseUrl: "http://localhost",
      reasoning: false,
      input: ["text"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 1000,
      maxTokens: 100,
    });
    expect(afterRun.last?.stopReason).toBe("error");
    expect(h.types()).toEqual(["message_start", "agent_start", "message_end", "agent_end"]);
    expect(h.log).toEqual(["noteReply error", "onMessageEnd error", "noteReply error"]);
  });
});
