/**
 * The sweep's control (src/main/load/open/sweep.ts) and a step's figures (sweep-step.ts), without
 * time: a scripted step runner stands for a target whose capacity the test chooses, so the test
 * knows which step must saturate and why.
 */
import { describe, expect, it } from "vitest";
import type { PromptRecord, RequestRecord } from "../../../../src/main/load/metrics/load-metrics.js";
import type { ArrivalCounts, SweepStage } from "../../../../src/main/load/open/arrival-report.js";
import { emptyCounts } from "../../../../src/main/load/open/conversation-pool.js";
import {
  MIN_COMPLETION,
  MIN_HEADROOM,
  runSweep,
  type StepRunner,
  saturation,
  sweepRates,
  TTFT_GROWTH,
  TTFT_MIN_RISE_MS,
  TTFT_OVER_BASELINE,
} from "../../../../src/main/load/open/sweep.js";
import { stepResult } from "../../../../src/main/load/open/sweep-step.js";
import { parseSlo } from "../../../../src/main/load/verdicts/slo.js";

function request(startMs: number, ttftMs: number): RequestRecord {
  return {
    type: "request",
    session: 0,
    prompt: 0,
    attempt: 0,
    turn: 0,
    startMs,
    ttftMs,
    ttfbMs: null,
    e2eMs: ttftMs + 10,
    outputTokens: 4,
    inputTokens: 10,
    costUsd: 0,
    stopReason: "stop",
  };
}

/** A 10 s step that offered `offered` conversations and completed `completed`, with these TTFTs in start order. */
function step(
  kind: SweepStage["kind"],
  offeredRate: number | null,
  offered: number,
  completed: number,
  ttfts: number[],
) {
  const counts: ArrivalCounts = { ...emptyCounts(), offered, started: offered, completed };
  return stepResult({
    kind,
    offeredRate,
    startMs: 0,
    durationMs: 10_000,
    scheduleMs: 10_000,
    counts,
    requests: ttfts.map((ttft, i) => request(i, ttft)),
    prompts: [],
  });
}

/** A target that completes at most `capacity` conversations/s, with TTFT `ttftAt(rate)` (flat within a step). */
function target(capacity: number, probeRate: number, ttftAt: (rate: number) => number[] = () => [50, 50, 50, 50]) {
  const calls: string[] = [];
  const runner: StepRunner & { calls: string[] } = {
    calls,
    interrupted: false,
    async closed(kind, lanes) {
      calls.push(`${kind}×${lanes}`);
      const rate = kind === "baseline" ? 10 : probeRate;
      return step(kind, null, rate * 10, rate * 10, [50, 50, 50, 50]);
    },
    async open(rate) {
      calls.push(`rate ${rate}`);
      const offered = Math.round(rate * 10);
      return step("rate", rate, offered, Math.min(offered, capacity * 10), ttftAt(rate));
    },
  };
  return runner;
}

describe("sweep rates", () => {
  it("are k rates evenly spaced strictly between the baseline's and the probe's", () => {
    expect(sweepRates(10, 60, 4)).toEqual([20, 30, 40, 50]);
    expect(sweepRates(10, 20, 1)).toEqual([15]);
  });
});

describe("saturation", () => {
  const baseline = step("baseline", null, 100, 100, [50, 50, 50, 50]);

  it(`a step completing under ${MIN_COMPLETION * 100} % of what it offered saturates (completion); at it, it does not`, () => {
    expect(saturation(step("rate", 20, 200, 179, [50, 50, 50, 50]), baseline)).toBe("completion");
    expect(saturation(step("rate", 20, 200, 180, [50, 50, 50, 50]), baseline)).toBeNull();
  });

  it(`TTFT growing over ${TTFT_GROWTH}× within the step and over ${TTFT_OVER_BASELINE}× the baseline's saturates (ttft)`, () => {
    expect(saturation(step("rate", 20, 200, 200, [150, 150, 300, 400]), baseline)).toBe("ttft");
    // Growing, but still near the baseline's: not a queue yet.
    expect(saturation(step("rate", 20, 200, 200, [40, 40, 70, 70]), baseline)).toBeNull();
    // High but flat: a slower target, not one falling behind.
    expect(saturation(step("rate", 20, 200, 200, [400, 400, 400, 400]), baseline)).toBeNull();
  });

  it(`TTFT rising by less than ${TTFT_MIN_RISE_MS} ms is noise, whatever the ratios (a fast target's TTFT of a few ms)`, () => {
    // Regression: against the fast built-in mock the baseline's TTFT p50 was 0 ms (the first
    // delta in the same event batch as turn_start) and a step's 1 → 3 ms counted as saturation.
    const fast = step("baseline", null, 100, 100, [0, 0, 0, 0]);
    expect(saturation(step("rate", 30, 300, 300, [1, 1, 3, 90]), fast)).toBeNull();
    expect(saturation(step("rate", 30, 300, 300, [1, 1, 120, 130]), fast)).toBe("ttft");
  });

  it("a step's TTFT growth is its later half's p50 over its earlier half's, by start time", () => {
    expect(step("rate", 1, 1, 1, [10, 10, 30, 30])).toMatchObject({ ttftGrowth: 3, ttftRiseMs: 20 });
    expect(step("rate", 1, 1, 1, [10, 30]).ttftGrowth).toBeNull();
  });
});

describe("runSweep", () => {
  it("runs the baseline (1 lane), the probe (sessions lanes), then rates upward until one saturates, and says why", async () => {
    const runner = target(35, 60);
    const sweep = await runSweep(runner, { rates: 4, sessions: 8 });
    expect(runner.calls).toEqual(["baseline×1", "probe×8", "rate 20", "rate 30", "rate 40"]);
    expect(sweep.rates).toEqual([20, 30, 40, 50]);
    expect(sweep.stages.map((s) => [s.kind, s.offeredRate, s.saturated])).toEqual([
      ["baseline", null, null],
      ["probe", null, null],
      ["rate", 20, null],
      ["rate", 30, null],
      ["rate", 40, "completion"],
    ]);
    expect(sweep.stopReason).toBe("completion");
    expect(sweep.stages[4]?.achievedRate).toBe(35);
  });

  it("stops on growing TTFT when completions keep up but a queue builds", async () => {
    const runner = target(1000, 60, (rate) => (rate >= 30 ? [120, 120, 300, 300] : [50, 50, 50, 50]));
    const sweep = await runSweep(runner, { rates: 4, sessions: 8 });
    expect(sweep.stages.at(-1)).toMatchObject({ offeredRate: 30, saturated: "ttft" });
    expect(sweep.stopReason).toBe("ttft");
  });

  it("runs every rate when none saturates (stopReason null)", async () => {
    const sweep = await runSweep(target(1000, 60), { rates: 3, sessions: 8 });
    expect(sweep.stages).toHaveLength(5);
    expect(sweep.stopReason).toBeNull();
  });

  it(`ends after the probe when it is not ${MIN_HEADROOM}× faster than the baseline (no_headroom)`, async () => {
    const runner = target(1000, 10.4);
    const sweep = await runSweep(runner, { rates: 3, sessions: 8 });
    expect(runner.calls).toEqual(["baseline×1", "probe×8"]);
    expect(sweep).toMatchObject({ rates: [], stopReason: "no_headroom" });
  });

  it("an interrupt ends the sweep after the step it cut", async () => {
    const runner = target(1000, 60);
    const open = runner.open.bind(runner);
    runner.open = async (rate) => {
      const result = await open(rate);
      (runner as { interrupted: boolean }).interrupted = true;
      return result;
    };
    const sweep = await runSweep(runner, { rates: 3, sessions: 8 });
    expect(sweep.stages).toHaveLength(3);
    expect(sweep.stopReason).toBe("interrupted");
  });
});

describe("a sweep step's goodput", () => {
  it("is null without an SLO, and with one the step's conforming prompts per second of its schedule", () => {
    const requests = [request(0, 100), request(1, 900)];
    const prompt = (session: number, latencyMs: number): PromptRecord => ({
      type: "prompt",
      session,
      prompt: 0,
      startMs: session,
      latencyMs,
      requests: 1,
      retries: 0,
      turns: 1,
      toolCalls: 0,
      outcome: "succeeded",
    });
    const requestsOf = [
      { ...requests[0], session: 0 },
      { ...requests[1], session: 1 },
    ] as RequestRecord[];
    const input = {
      kind: "rate" as const,
      offeredRate: 1,
      startMs: 0,
      durationMs: 2000,
      scheduleMs: 2000,
      counts: { ...emptyCounts(), offered: 2, started: 2, completed: 2 },
      requests: requestsOf,
      prompts: [prompt(0, 110), prompt(1, 910)],
    };
    expect(stepResult(input).goodput).toBeNull();
    // TTFT ≤ 500 ms: session 0's prompt conforms (100 ms), session 1's does not (900 ms): 1 per 2 s.
    expect(stepResult({ ...input, slo: parseSlo("ttft<=500ms") }).goodput).toBe(0.5);
  });
});
