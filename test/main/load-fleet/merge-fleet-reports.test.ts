/**
 * The merge of generators' final reports (src/main/load-fleet/merge-fleet-reports.ts): counters
 * add up, percentiles are the union's within the sketch's 1 %, and timelines line up by interval
 * on the common clock even though the generators started at different instants.
 */
import { describe, expect, it } from "vitest";
import type { LoadCounters, RequestRecord } from "../../../src/main/load/load-metrics.js";
import { buildReport, type LoadReport } from "../../../src/main/load/load-report.js";
import { percentile } from "../../../src/main/load/stats.js";
import type { TimelinePoint } from "../../../src/main/load/timeline.js";
import { mergeFinalReports, mergeTimelines } from "../../../src/main/load-fleet/merge-fleet-reports.js";

const config: LoadReport["config"] = {
  sessions: 1,
  promptsPerSession: 1,
  durationMs: null,
  target: "mock",
  model: "lifeline-mock/mock-1",
  faults: [],
  seed: 0,
  rampUpMs: 0,
  concurrency: 1,
  thinkTimeMs: 0,
  threads: null,
  promptTexts: 0,
  mock: null,
  settings: {},
};

function counters(requests: number, failed: number): LoadCounters {
  return {
    promptsSent: requests,
    promptsSucceeded: requests - failed,
    promptsFailed: failed,
    promptsCancelled: 0,
    inFlightPrompts: 0,
    inFlightRequests: 0,
    requests,
    failedRequests: failed,
    failuresByKind: failed === 0 ? {} : { http_503: failed },
    failuresByClass: failed === 0 ? {} : { retryable: failed },
    retries: 0,
    retryChains: {},
    gateWaits: 0,
    gateWaitMs: 0,
    toolCalls: 0,
    outputTokens: requests * 10,
    inputTokens: 0,
    costUsd: 0,
    restores: {},
  };
}

function point(tMs: number, requests: number): TimelinePoint {
  return {
    tMs,
    inFlightPrompts: 1,
    inFlightRequests: 1,
    requests,
    retries: 0,
    failures: {},
    outputTokens: requests * 10,
    loopDelayMeanMs: 1,
    loopDelayMaxMs: requests,
  };
}

/** A generator's report over requests of these latencies, `failed` of them failed. */
function reportOf(latencies: readonly number[], failed: number, points: TimelinePoint[]): LoadReport {
  const requests: RequestRecord[] = latencies.map((e2eMs, i) => ({
    type: "request",
    session: 0,
    prompt: i,
    attempt: 0,
    startMs: i,
    ttftMs: e2eMs / 2,
    e2eMs,
    outputTokens: 10,
    inputTokens: 0,
    costUsd: 0,
    stopReason: i < failed ? "error" : "stop",
    ...(i < failed ? { failure: { kind: "http_503", class: "retryable" as const, message: "503" } } : {}),
  }));
  return buildReport({
    status: "completed",
    startedAt: new Date(0),
    endedAt: new Date(1000),
    durationMs: 1000,
    config,
    counters: counters(latencies.length, failed),
    requests,
    prompts: [],
    timeline: { intervalMs: 1000, points },
    loopDelayMs: { mean: 1, p50: 1, p99: 2, max: 3 },
    watchdogTerminations: 0,
    thresholds: [],
    mock: null,
  });
}

const context = { status: "completed" as const, runStartMs: 10_000, runEndMs: 14_000, config, intervalMs: 1000 };

describe("mergeFinalReports", () => {
  it("adds the counters up and gives the union's percentiles within 1 %", () => {
    const a = Array.from({ length: 200 }, (_, i) => 100 + i * 3.7);
    const b = Array.from({ length: 50 }, (_, i) => 2000 + i * 41.3);
    const merged = mergeFinalReports(
      [
        { report: reportOf(a, 5, []), startedAtMs: 10_000 },
        { report: reportOf(b, 2, []), startedAtMs: 10_050 },
      ],
      context,
    );
    expect(merged.totals.requests).toMatchObject({ sent: 250, failed: 7, failuresByKind: { http_503: 7 } });
    expect(merged.totals.failureRate).toBe(Math.round((7 / 250) * 1000) / 1000);
    expect(merged.durationMs).toBe(4000);
    expect(merged.throughput.requestsPerSecond).toBe(62.5);
    const union = [...a.slice(5), ...b.slice(2)].sort((x, y) => x - y);
    expect(merged.latency.e2eMs.count).toBe(union.length);
    expect(merged.latency.e2eMs.min).toBe(Math.round((union[0] ?? 0) * 1000) / 1000);
    for (const p of [50, 90, 99]) {
      const exact = percentile(union, p) ?? Number.NaN;
      const key = `p${p}` as "p50" | "p90" | "p99";
      expect(Math.abs((merged.latency.e2eMs[key] ?? Number.NaN) - exact)).toBeLessThanOrEqual(exact * 0.01 + 0.001);
    }
  });
});

describe("mergeTimelines", () => {
  it("puts each generator's points on the run's intervals by its start on the common clock", () => {
    const early = reportOf([1], 0, [point(0, 0), point(1000, 4), point(2000, 6)]);
    // Started 2 s after the run's start (with 40 ms of jitter): its first interval is the run's third.
    const late = reportOf([1], 0, [point(0, 0), point(1000, 5)]);
    const points = mergeTimelines(
      [
        { report: early, startedAtMs: 10_000 },
        { report: late, startedAtMs: 12_040 },
      ],
      context,
    );
    expect(points.map((p) => [p.tMs, p.requests, p.inFlightPrompts, p.loopDelayMaxMs])).toEqual([
      [0, 0, 1, 0],
      [1000, 4, 1, 4],
      [2000, 6, 2, 6],
      [3000, 5, 1, 5],
    ]);
  });
});
