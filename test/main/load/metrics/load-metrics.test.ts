/**
 * What `lifeline load` measures from session events (src/main/load/metrics/load-metrics.ts), with a
 * hand-driven clock: one record per model request (turn_start → assistant message_end), its
 * time to first token, its failure kind, retries and chain endings, and prompt outcomes.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { failureKind, LoadMetrics } from "../../../../src/main/load/metrics/load-metrics.js";
import type { SessionEvent } from "../../../../src/shared/events.js";
import { meteredFailure, meteredReply } from "../../../fixtures/messages.js";

const reply = meteredReply;
const failed = meteredFailure;

const delta = { type: "message_update", assistantMessageEvent: { type: "text_delta" } } as unknown as SessionEvent;
const end = (message: AssistantMessage) => ({ type: "message_end", message }) as SessionEvent;

function clocked() {
  let now = 0;
  const metrics = new LoadMetrics(() => now);
  return { metrics, at: (ms: number) => (now = ms) };
}

describe("requests", () => {
  it("a request runs from turn_start to the assistant's message_end; its TTFT is to the first token delta", () => {
    const { metrics, at } = clocked();
    metrics.promptStarted(0);
    at(100);
    metrics.onEvent(0, { type: "turn_start" } as SessionEvent);
    expect(metrics.counters.inFlightRequests).toBe(1);
    at(130);
    metrics.onEvent(0, delta);
    at(150);
    metrics.onEvent(0, delta);
    at(400);
    metrics.onEvent(0, end(reply()));
    expect(metrics.requests).toEqual([
      expect.objectContaining({
        session: 0,
        prompt: 0,
        attempt: 0,
        startMs: 100,
        ttftMs: 30,
        e2eMs: 300,
        outputTokens: 5,
      }),
    ]);
    expect(metrics.counters).toMatchObject({
      requests: 1,
      inFlightRequests: 0,
      outputTokens: 5,
      inputTokens: 10,
      costUsd: 0.003,
    });
  });

  it("X9: a reply with the worker's stamps is timed by them, not by when its batched events arrived", () => {
    // The run began at epoch 1_000_000 on the main thread's clock; the stamps are the worker's.
    let now = 0;
    const metrics = new LoadMetrics(() => now, 1_000_000);
    metrics.promptStarted(0);
    now = 50;
    metrics.onEvent(0, { type: "turn_start" } as SessionEvent);
    // Batched: the first delta and the end reach the main thread together, long after they happened.
    now = 400;
    metrics.onEvent(0, delta);
    const timing = {
      requestStartMs: 1_000_060.5,
      firstByteMs: 1_000_061.25,
      firstTokenMs: 1_000_063.5,
      endMs: 1_000_080.5,
      chunks: 4,
      chunkGapsMs: [2.5, 5, 9.5],
    };
    metrics.onEvent(0, { type: "message_end", message: reply(), timing } as SessionEvent);
    expect(metrics.requests[0]).toMatchObject({ startMs: 60.5, ttfbMs: 0.75, ttftMs: 3, e2eMs: 20 });
    expect(metrics.chunkGaps).toMatchObject({ count: 3, min: 2.5, max: 9.5, sum: 17 });
    expect(metrics.counters.inFlightRequests).toBe(0);
  });

  it("a failed reply's stamps time it, but its chunk gaps stay out of the successful requests' distribution", () => {
    const metrics = new LoadMetrics(() => 0, 0);
    metrics.onEvent(0, { type: "turn_start" } as SessionEvent);
    const timing = { requestStartMs: 10, firstByteMs: 12, endMs: 15, chunks: 2, chunkGapsMs: [1] };
    metrics.onEvent(0, {
      type: "message_end",
      message: failed({ status: 200, network: { phase: "body", message: "terminated" } }, "terminated"),
      timing,
    } as SessionEvent);
    expect(metrics.requests[0]).toMatchObject({ startMs: 10, ttfbMs: 2, ttftMs: null, e2eMs: 5 });
    expect(metrics.chunkGaps.count).toBe(0);
  });

  it("a reply without stamps has no TTFB and is timed on the main thread as before", () => {
    const { metrics, at } = clocked();
    at(10);
    metrics.onEvent(0, { type: "turn_start" } as SessionEvent);
    at(30);
    metrics.onEvent(0, end(reply()));
    expect(metrics.requests[0]).toMatchObject({ startMs: 10, ttftMs: null, ttfbMs: null, e2eMs: 20 });
  });

  it("a user message_end is not a request", () => {
    const { metrics } = clocked();
    metrics.onEvent(0, { type: "message_end", message: { role: "user", content: "x", timestamp: 0 } } as SessionEvent);
    expect(metrics.counters.requests).toBe(0);
  });

  it("retries are counted from auto_retry_start, and the retried request carries its attempt", () => {
    const { metrics } = clocked();
    metrics.promptStarted(3);
    metrics.onEvent(3, { type: "turn_start" } as SessionEvent);
    metrics.onEvent(3, end(failed({ status: 503 }, "503 overloaded")));
    metrics.onEvent(3, { type: "auto_retry_start", attempt: 1, maxAttempts: 3, delayMs: 5, errorMessage: "503" });
    metrics.onEvent(3, { type: "turn_start" } as SessionEvent);
    metrics.onEvent(3, end(reply()));
    metrics.onEvent(3, { type: "auto_retry_end", success: true, attempt: 1, reason: "success" });
    expect(metrics.requests.map((r) => [r.attempt, r.failure?.kind])).toEqual([
      [0, "http_503"],
      [1, undefined],
    ]);
    expect(metrics.counters).toMatchObject({
      retries: 1,
      failedRequests: 1,
      failuresByKind: { http_503: 1 },
      failuresByClass: { retryable: 1 },
      retryChains: { success: 1 },
    });
  });

  it("ended retry chains are counted by auto_retry_end.reason", () => {
    const { metrics } = clocked();
    metrics.onEvent(0, { type: "auto_retry_end", success: false, attempt: 0, reason: "budget_exhausted" });
    metrics.onEvent(0, { type: "auto_retry_end", success: false, attempt: 3, reason: "exhausted", finalError: "x" });
    expect(metrics.counters.retryChains).toEqual({ budget_exhausted: 1, exhausted: 1 });
  });

  it("provider_gate_wait events are counted with the waits they announce", () => {
    const { metrics } = clocked();
    metrics.onEvent(0, { type: "provider_gate_wait", provider: "p", before: "retry", waitMs: 1500 });
    metrics.onEvent(1, { type: "provider_gate_wait", provider: "p", before: "prompt", waitMs: 700 });
    expect(metrics.counters).toMatchObject({ gateWaits: 2, gateWaitMs: 2200 });
  });

  it("tool calls and session restores are counted", () => {
    const { metrics } = clocked();
    metrics.onEvent(0, { type: "tool_execution_start", toolCallId: "1", toolName: "t", args: {} } as SessionEvent);
    metrics.onEvent(0, { type: "session_restored", reason: "hung", restarts: 1 });
    expect(metrics.counters).toMatchObject({ toolCalls: 1, restores: { hung: 1 } });
  });
});

describe("failure kinds", () => {
  it.each([
    ["an error status", { status: 429 }, "http_429"],
    ["a reset before any response", { network: { phase: "request", message: "ECONNRESET" } }, "connection"],
    ["a stream that broke off", { status: 200, network: { phase: "body", message: "terminated" } }, "stream_cut"],
    [
      "a stream that went silent past the idle timeout",
      { status: 200, network: { phase: "body", code: "ERR_STREAM_IDLE", message: "Stream idle timeout" } },
      "stream_idle",
    ],
    ["an error event inside a 200 stream", { status: 200, inStream: true, errorType: "server_error" }, "stream_error"],
  ])("%s is %s", (_case, details, kind) => {
    expect(failureKind(failed(details, "failed"))).toBe(kind);
  });

  it("an aborted reply is aborted, and a failure with no record is other", () => {
    expect(failureKind(reply({ stopReason: "aborted" }))).toBe("aborted");
    expect(failureKind(reply({ stopReason: "error", errorMessage: "boom" }))).toBe("other");
  });
});

describe("prompts", () => {
  it("a prompt succeeds, fails or is cancelled (aborted by the run's end), and counts its requests", () => {
    const { metrics, at } = clocked();
    metrics.promptStarted(0);
    metrics.onEvent(0, { type: "turn_start" } as SessionEvent);
    metrics.onEvent(0, end(reply()));
    at(50);
    const ok = metrics.promptEnded(0, 0, { result: { stopReason: "stop", retries: 0 } });
    metrics.promptStarted(0);
    const bad = metrics.promptEnded(0, 50, { result: { stopReason: "error", errorMessage: "503", retries: 3 } });
    metrics.promptStarted(0);
    const cancelled = metrics.promptEnded(0, 50, { result: { stopReason: "aborted", retries: 0 } });
    metrics.promptStarted(0);
    const thrown = metrics.promptEnded(0, 50, { error: new Error("ERR_SESSION_CRASHED") });
    expect([ok, bad, cancelled, thrown].map((p) => [p.prompt, p.outcome, p.requests])).toEqual([
      [0, "succeeded", 1],
      [1, "failed", 0],
      [2, "cancelled", 0],
      [3, "failed", 0],
    ]);
    expect(ok.latencyMs).toBe(50);
    expect(metrics.counters).toMatchObject({
      promptsSent: 4,
      promptsSucceeded: 1,
      promptsFailed: 2,
      promptsCancelled: 1,
      inFlightPrompts: 0,
    });
  });

  it("a prompt whose retry chain the run's end cut short is cancelled, not failed; one that succeeded stays succeeded", () => {
    const { metrics } = clocked();
    metrics.promptStarted(0);
    // The run ended during a back-off: the prompt settles with the last failed reply's 429.
    const cut = metrics.promptEnded(0, 0, { result: { stopReason: "error", errorMessage: "429", retries: 1 } }, true);
    metrics.promptStarted(1);
    const done = metrics.promptEnded(1, 0, { result: { stopReason: "stop", retries: 0 } }, true);
    expect([cut.outcome, done.outcome]).toEqual(["cancelled", "succeeded"]);
    expect(metrics.counters).toMatchObject({ promptsFailed: 0, promptsCancelled: 1, promptsSucceeded: 1 });
  });

  it("a run that ends without an assistant reply does not leave a request in flight", () => {
    const { metrics } = clocked();
    metrics.promptStarted(0);
    metrics.onEvent(0, { type: "turn_start" } as SessionEvent);
    metrics.promptEnded(0, 0, { result: { stopReason: "error", errorMessage: "thrown", retries: 0 } });
    expect(metrics.counters).toMatchObject({ inFlightRequests: 0, requests: 0 });
  });
});
