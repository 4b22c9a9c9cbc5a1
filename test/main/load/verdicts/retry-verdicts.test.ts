/**
 * report.json `verdicts` (src/main/load/metrics/retry-ledger.ts, retry-verdicts.ts): a scripted sequence of
 * session events, as the retry controller emits them (R4, R14, B6, B8), fed to the run's
 * LoadMetrics and RetryLedger on a hand-driven clock; the verdicts, retry causes, back-off and
 * hint accounting are worked out by hand in the comments.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LoadMetrics, type PromptRecord } from "../../../../src/main/load/metrics/load-metrics.js";
import { RetryLedger } from "../../../../src/main/load/metrics/retry-ledger.js";
import { buildVerdicts } from "../../../../src/main/load/verdicts/retry-verdicts.js";
import type { AutoRetryEndReason, SessionEvent } from "../../../../src/shared/events.js";
import { meteredFailure, meteredReply } from "../../../fixtures/messages.js";

const reply = meteredReply;
const failed = meteredFailure;

const http503 = () => failed({ status: 503 }, "503 overloaded");
const http429 = (hintMs: number) =>
  failed({ status: 429, headers: { "retry-after-ms": String(hintMs) } }, "429 rate limited");

/** A run's metrics and ledger on one clock, fed as run-load.ts feeds them. */
function scripted() {
  let now = 0;
  const metrics = new LoadMetrics(() => now);
  const ledger = new RetryLedger(() => now);
  const feed = (session: number, event: SessionEvent) => {
    metrics.onEvent(session, event);
    ledger.onEvent(session, event);
  };
  return {
    metrics,
    ledger,
    at: (ms: number) => {
      now = ms;
    },
    start(session: number) {
      metrics.promptStarted(session);
      ledger.promptStarted(session);
    },
    request(session: number, message: AssistantMessage) {
      feed(session, { type: "turn_start" } as SessionEvent);
      feed(session, { type: "message_end", message } as SessionEvent);
    },
    retry(session: number, attempt: number, delayMs: number, model?: string, rotated = false) {
      feed(session, {
        type: "auto_retry_start",
        attempt,
        maxAttempts: 3,
        delayMs,
        errorMessage: "x",
        ...(model === undefined ? {} : { model }),
        ...(rotated ? { credentialRotated: true } : {}),
      });
    },
    chainEnd(session: number, reason: AutoRetryEndReason, attempt: number) {
      feed(session, { type: "auto_retry_end", success: reason === "success", attempt, reason });
    },
    gate(session: number, before: "retry" | "prompt", waitMs: number) {
      feed(session, { type: "provider_gate_wait", provider: "mock", before, waitMs });
    },
    end(session: number, stopReason: AssistantMessage["stopReason"], retries: number, runEnded = false) {
      const record = metrics.promptEnded(session, 0, { result: { stopReason, retries } }, runEnded);
      record.backoffMs = ledger.promptEnded(session);
      return record;
    },
  };
}

describe("verdicts from a scripted event sequence", () => {
  function run() {
    const s = scripted();
    // s0: answered at once → firstAttempt.
    s.start(0);
    s.request(0, reply());
    s.end(0, "stop", 0);
    // s1: a 503, a retry after 100 ms, answered → afterRetries; back-off 100.
    s.at(0);
    s.start(1);
    s.request(1, http503());
    s.retry(1, 1, 100);
    s.at(100);
    s.request(1, reply());
    s.chainEnd(1, "success", 1);
    s.end(1, "stop", 1);
    // s2: a 429 asking for 1000 ms (failed reply ends at 1000); the retry sleeps 1000 and starts at
    // 2005: slept 1005 − hint 1000 = +5, honoured. It fails at once with another 429 asking for
    // 1000; the next retry sleeps only 200 and starts at 2206: 201 − 1000 = −799, early. That one
    // is a 503, and the chain is exhausted → failedAfterRetries; back-off 1000 + 200 = 1200.
    s.start(2);
    s.at(1000);
    s.request(2, http429(1000));
    s.at(1001);
    s.retry(2, 1, 1000);
    s.at(2005);
    s.request(2, http429(1000));
    s.at(2006);
    s.retry(2, 2, 200);
    s.at(2206);
    s.request(2, http503());
    s.chainEnd(2, "exhausted", 2);
    s.end(2, "error", 2);
    // s3: a fatal 400, no retry → failedWithoutRetry.
    s.start(3);
    s.request(3, failed({ status: 400 }, "400 bad request"));
    s.end(3, "error", 0);
    // s4: a 503 whose retry the budget refused (a chain ended without a start) → failedWithoutRetry.
    s.start(4);
    s.request(4, http503());
    s.chainEnd(4, "budget_exhausted", 0);
    s.end(4, "error", 0);
    // s5: a 429 asking for 5000 ms, retried at once on a fallback model → afterRetries; the
    // fallback is not bound by the failed provider's hint, so no hint is judged; back-off 0.
    s.at(3000);
    s.start(5);
    s.request(5, http429(5000));
    s.retry(5, 1, 0, "other/model");
    s.request(5, reply());
    s.chainEnd(5, "success", 1);
    s.end(5, "stop", 1);
    // s6: a 503, a retry of 500 ms cut after 200 by the run's end → cancelled: no verdict;
    // its 200 ms count in the sum, not in the per-prompt figures.
    s.at(4000);
    s.start(6);
    s.request(6, http503());
    s.retry(6, 1, 500);
    s.at(4200);
    s.chainEnd(6, "cancelled", 1);
    s.end(6, "error", 1, true);
    // s7: waits 300 ms at the provider gate before its prompt, answered → firstAttempt.
    s.start(7);
    s.gate(7, "prompt", 300);
    s.request(7, reply());
    s.end(7, "stop", 0);
    return { ...s, verdicts: buildVerdicts(s.metrics.prompts, s.metrics.counters, s.ledger.totals) };
  }

  it("classifies each prompt by outcome and retries; cancelled prompts have no verdict", () => {
    const { verdicts } = run();
    expect(verdicts.prompts).toEqual({
      firstAttempt: 2,
      afterRetries: 2,
      failedAfterRetries: 1,
      failedWithoutRetry: 2,
    });
    // 7 prompts judged: 2/7, 2/7, 1/7, 2/7.
    expect(verdicts.shares).toEqual({
      firstAttempt: 0.285714,
      afterRetries: 0.285714,
      failedAfterRetries: 0.142857,
      failedWithoutRetry: 0.285714,
    });
  });

  it("requests per successful prompt: all 12 requests / 4 answered prompts = 3", () => {
    const { verdicts, metrics } = run();
    expect(metrics.counters.requests).toBe(12);
    expect(verdicts.requestsPerSuccessfulPrompt).toBe(3);
  });

  it("each retry is counted by the failure it answered, and the causes add up to the retries", () => {
    const { verdicts, metrics } = run();
    expect(verdicts.retriesByCause).toEqual({ http_503: 2, http_429: 3 });
    expect(Object.values(verdicts.retriesByCause).reduce((a, b) => a + b, 0)).toBe(metrics.counters.retries);
    expect(verdicts.chainsByEnd).toEqual({ success: 2, exhausted: 1, budget_exhausted: 1, cancelled: 1 });
    expect(verdicts.budgetRefusals).toBe(1);
    expect(verdicts.fallbackSwitches).toBe(1);
    expect(verdicts.credentialRotations).toBe(0);
  });

  it("back-off: 100 + 1000 + 200 + 0 + 200 (cut) = 1500 ms; per retried prompt 100, 1200 and 0", () => {
    const { verdicts, metrics } = run();
    expect(verdicts.backoff.sumMs).toBe(1500);
    expect(verdicts.backoff.perPromptMs).toMatchObject({ count: 3, min: 0, max: 1200 });
    // Percentiles come from the summary's sketch: within 1 % of the exact 100.
    expect(Math.abs((verdicts.backoff.perPromptMs.p50 ?? 0) - 100)).toBeLessThanOrEqual(1);
    expect(metrics.prompts.map((p: PromptRecord) => p.backoffMs)).toEqual([0, 100, 1200, 0, 0, 0, 200, 0]);
  });

  it("hints: of two hinted retries on the same model one waited the hint out (+5 ms), one went early (−799 ms)", () => {
    const { verdicts } = run();
    expect(verdicts.hints).toMatchObject({ total: 2, honoured: 1, early: 1, overCap: 0 });
    expect(verdicts.hints.sleptMinusHintMs).toMatchObject({ count: 2, min: -799, max: 5 });
  });

  it("provider gate waits are split by what waited", () => {
    const { verdicts } = run();
    expect(verdicts.providerGate).toEqual({ waits: 1, beforeRetry: 0, beforePrompt: 1, waitMs: 300 });
  });

  it("R4: retries on another key are counted, and the failed key's hint does not judge them", () => {
    const s = scripted();
    // A 429 asking for 5000 ms on key A; the storage moved the session to key B, retried at once.
    s.start(0);
    s.request(0, http429(5000));
    s.retry(0, 1, 0, undefined, true);
    s.request(0, reply());
    s.chainEnd(0, "success", 1);
    s.end(0, "stop", 1);
    // The same on a second session, whose rotated retry fails again and is rotated back.
    s.start(1);
    s.request(1, http429(5000));
    s.retry(1, 1, 0, undefined, true);
    s.request(1, http429(5000));
    s.retry(1, 2, 0, undefined, true);
    s.request(1, reply());
    s.chainEnd(1, "success", 2);
    s.end(1, "stop", 2);
    const verdicts = buildVerdicts(s.metrics.prompts, s.metrics.counters, s.ledger.totals);
    expect(verdicts.credentialRotations).toBe(3);
    expect(verdicts.fallbackSwitches).toBe(0);
    expect(verdicts.hints).toMatchObject({ total: 0, honoured: 0, early: 0 });
  });

  it("a gate wait before a retry ends its back-off: the sleep is not counted twice", () => {
    const s = scripted();
    s.start(0);
    s.request(0, http429(400));
    s.retry(0, 1, 400);
    s.at(400);
    s.gate(0, "retry", 600);
    s.at(1000);
    s.request(0, reply());
    s.chainEnd(0, "success", 1);
    s.end(0, "stop", 1);
    const verdicts = buildVerdicts(s.metrics.prompts, s.metrics.counters, s.ledger.totals);
    expect(verdicts.backoff.sumMs).toBe(400);
    expect(verdicts.providerGate).toMatchObject({ beforeRetry: 1, waitMs: 600 });
    // Slept from the failed reply's end (0) to the retry's start (1000), gate included: 1000 − 400.
    expect(verdicts.hints).toMatchObject({ total: 1, honoured: 1, early: 0 });
    expect(verdicts.hints.sleptMinusHintMs.max).toBe(600);
  });

  it("a chain that ended over the delay cap counts as a hint over the cap", () => {
    const s = scripted();
    s.start(0);
    s.request(0, http429(600_000));
    s.chainEnd(0, "over_cap", 0);
    s.end(0, "error", 0);
    expect(buildVerdicts(s.metrics.prompts, s.metrics.counters, s.ledger.totals).hints).toMatchObject({
      total: 0,
      overCap: 1,
    });
  });
});

describe("verdicts of any prompt records", () => {
  it("add up to the prompts that succeeded and failed, and their shares to 1", () => {
    const arbitraryPrompt = fc
      .record({
        outcome: fc.constantFrom("succeeded", "failed", "cancelled") as fc.Arbitrary<PromptRecord["outcome"]>,
        retries: fc.nat(4),
      })
      .map(
        ({ outcome, retries }, i = 0): PromptRecord => ({
          type: "prompt",
          session: i,
          prompt: 0,
          startMs: 0,
          latencyMs: 1,
          requests: retries + 1,
          retries,
          turns: 1,
          toolCalls: 0,
          outcome,
          backoffMs: retries * 10,
        }),
      );
    fc.assert(
      fc.property(fc.array(arbitraryPrompt, { maxLength: 50 }), (prompts) => {
        const metrics = new LoadMetrics(() => 0);
        const requests = prompts.reduce((sum, prompt) => sum + prompt.requests, 0);
        const counters = { ...metrics.counters, requests };
        const ledger = new RetryLedger(() => 0).totals;
        const { prompts: counts, shares, requestsPerSuccessfulPrompt } = buildVerdicts(prompts, counters, ledger);
        const succeeded = prompts.filter((p) => p.outcome === "succeeded").length;
        const failedCount = prompts.filter((p) => p.outcome === "failed").length;
        expect(counts.firstAttempt + counts.afterRetries).toBe(succeeded);
        expect(counts.failedAfterRetries + counts.failedWithoutRetry).toBe(failedCount);
        const sum = Object.values(shares).reduce((a: number, b) => a + (b ?? 0), 0);
        if (succeeded + failedCount > 0) expect(sum).toBeCloseTo(1, 5);
        else expect(shares.firstAttempt).toBeNull();
        expect(requestsPerSuccessfulPrompt).toBe(
          succeeded === 0 ? null : Math.round((requests / succeeded) * 1000) / 1000,
        );
      }),
    );
  });
});
