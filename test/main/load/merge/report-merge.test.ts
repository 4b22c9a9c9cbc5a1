/**
 * The merge of load reports (src/main/load/merge/report-merge.ts) on reports built from generated
 * records: counters add up, percentiles are those of the union within 1 %, rates are recomputed
 * over the time any part ran, timelines add on the wall clock, thresholds are checked again, and
 * what the merge does not know is listed instead of guessed. The real-run test is
 * merge-reports.thread.test.ts; the command's is merge-cli.process.test.ts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type MergedReport, type MergeInput, mergeLoadReports } from "../../../../src/main/load/merge/report-merge.js";
import { percentile, summarize } from "../../../../src/main/load/metrics/stats.js";
import type { LoadReport } from "../../../../src/main/load/report/load-report.js";
import { parseThreshold } from "../../../../src/main/load/verdicts/thresholds.js";
import { point, reportOf } from "../../../fixtures/load-report.js";

function input(report: LoadReport, source: string): MergeInput {
  return { source, report, records: null };
}

const latencies = fc.array(fc.double({ min: 0.01, max: 60_000, noNaN: true }), { minLength: 1, maxLength: 100 });

describe("merging reports", () => {
  it("gives the percentiles of the union of the records within 1 %, and the exact count, min, max and mean", () => {
    fc.assert(
      fc.property(latencies, latencies, (a, b) => {
        const merged = mergeLoadReports([input(reportOf(a), "a"), input(reportOf(b, { startMs: 5000 }), "b")]);
        const union = [...a, ...b].sort((x, y) => x - y);
        const e2e = merged.latency.e2eMs;
        for (const p of [50, 90, 95, 99] as const) {
          const exact = percentile(union, p) as number;
          expect(Math.abs((e2e[`p${p}`] as number) - exact)).toBeLessThanOrEqual(0.01 * exact + 0.0005 + 1e-9);
        }
        const direct = summarize(union);
        expect([e2e.count, e2e.min, e2e.max]).toEqual([direct.count, direct.min, direct.max]);
        expect(e2e.mean).toBeCloseTo(direct.mean as number, 2);
        expect(e2e.sketch.buckets).toEqual(direct.sketch.buckets);
      }),
    );
  });

  it("adds the counters and recomputes amplification and failure rate from the sums", () => {
    const a = reportOf([10, 20], { failures: 2 });
    const b = reportOf([30, 40, 50], { startMs: 5000 });
    const merged = mergeLoadReports([input(a, "a"), input(b, "b")]);
    expect(merged.totals.prompts).toEqual({ sent: 5, succeeded: 5, failed: 0, cancelled: 0 });
    expect(merged.totals.requests).toEqual({
      sent: 7,
      failed: 2,
      failuresByKind: { http_503: 2 },
      failuresByClass: { retryable: 2 },
    });
    expect(merged.totals.amplification).toBe(1.4);
    expect(merged.totals.costUsd).toBe(0.007);
    expect(merged.config.sessions).toBe(4);
    expect(merged.config.concurrency).toBe(4);
    expect(merged.mock).toEqual({
      received: 7,
      invalid: 0,
      outcomes: { completed: 5, fault: 0, client_closed: 0, invalid: 0 },
      steps: { ok: 5 },
      maxConcurrentRequests: 2,
      toolCalls: 0,
    });
  });

  it("adds up the judged figures and recomputes their shares and rates: slo, verdicts, failures, agentic", () => {
    // a: 3 requests, 1 failed; b: 2 requests, 1 failed; runs one after another, 1 s each.
    const a = reportOf([10, 20], { failures: 1 });
    const b = reportOf([30], { startMs: 5000, failures: 1 });
    a.slo = {
      spec: "e2e<=25ms",
      requests: { total: 3, conforming: 2, attainment: 0.666667, goodputPerSecond: 2 },
      prompts: { total: 2, conforming: 2, attainment: 1, goodputPerSecond: 2 },
      sessions: null,
    };
    b.slo = {
      spec: "e2e<=25ms",
      requests: { total: 2, conforming: 0, attainment: 0, goodputPerSecond: 0 },
      prompts: { total: 1, conforming: 0, attainment: 0, goodputPerSecond: 0 },
      sessions: null,
    };
    a.failures = [{ label: "http_503", count: 1, example: "503 from a" }];
    b.failures = [
      { label: "connection", count: 3, example: "reset" },
      { label: "http_503", count: 1, example: "503 from b" },
    ];
    const merged = mergeLoadReports([input(a, "a"), input(b, "b")]);
    // 2 s of run time: goodput = conforming / 2 s.
    expect(merged.slo).toEqual({
      spec: "e2e<=25ms",
      requests: { total: 5, conforming: 2, attainment: 0.4, goodputPerSecond: 1 },
      prompts: { total: 3, conforming: 2, attainment: 0.666667, goodputPerSecond: 1 },
      sessions: null,
    });
    // 3 prompts succeeded on the first attempt; 5 requests / 3 answered prompts.
    expect(merged.verdicts.prompts).toEqual({
      firstAttempt: 3,
      afterRetries: 0,
      failedAfterRetries: 0,
      failedWithoutRetry: 0,
    });
    expect(merged.verdicts.shares.firstAttempt).toBe(1);
    expect(merged.verdicts.requestsPerSuccessfulPrompt).toBe(1.667);
    expect(merged.failures).toEqual([
      { label: "connection", count: 3, example: "reset" },
      { label: "http_503", count: 2, example: "503 from a" },
    ]);
    expect(merged.agentic.toolCalls).toBe(0);
    expect(merged.merged.unmergedFields).toEqual([]);
  });

  it("leaves out the SLO figures of parts judged against different SLOs, and says so", () => {
    const a = reportOf([10]);
    const b = reportOf([10], { startMs: 5000 });
    const judged = { total: 1, conforming: 1, attainment: 1, goodputPerSecond: 1 };
    a.slo = { spec: "e2e<=25ms", requests: judged, prompts: judged, sessions: null };
    b.slo = { spec: "e2e<=50ms", requests: judged, prompts: judged, sessions: null };
    const merged = mergeLoadReports([input(a, "a"), input(b, "b")]);
    expect(merged.slo).toBeNull();
    expect(merged.merged.unmergedFields).toEqual(["slo"]);
  });

  it("divides by the time any part ran: the sum for runs one after another, the longest for runs side by side", () => {
    const after = mergeLoadReports([
      input(reportOf([10], { durationMs: 1000 }), "a"),
      input(reportOf([10], { startMs: 5000, durationMs: 3000 }), "b"),
    ]);
    expect(after.durationMs).toBe(4000);
    expect(after.throughput.requestsPerSecond).toBe(0.5);
    expect(after.startedAt).toBe(new Date(0).toISOString());
    expect(after.endedAt).toBe(new Date(8000).toISOString());
    const beside = mergeLoadReports([
      input(reportOf([10], { durationMs: 1000 }), "a"),
      input(reportOf([10], { startMs: 500, durationMs: 2000 }), "b"),
    ]);
    expect(beside.durationMs).toBe(2500);
    expect(beside.throughput.requestsPerSecond).toBe(0.8);
  });

  it("lays the timelines on the wall clock: side by side their counts and gauges add, one after another they follow", () => {
    const beside = mergeLoadReports([input(reportOf([10, 20]), "a"), input(reportOf([30], { startMs: 10 }), "b")]);
    expect(beside.timeline.points).toEqual([
      { ...point(10, 0, 0), loopDelayMaxMs: 2 },
      { ...point(1010, 4, 3), outputTokens: 24 },
    ]);
    const after = mergeLoadReports([input(reportOf([10, 20]), "a"), input(reportOf([30], { startMs: 3000 }), "b")]);
    expect(after.timeline.points.map((p) => [p.tMs, p.requests, p.inFlightPrompts])).toEqual([
      [0, 0, 0],
      [1000, 2, 2],
      [3000, 0, 0],
      [4000, 1, 2],
    ]);
  });

  it("checks the parts' thresholds and the extra ones again, on the merged figures", () => {
    const merged = mergeLoadReports(
      [input(reportOf([10, 900]), "a"), input(reportOf([1500, 1600, 1700], { startMs: 5000 }), "b")],
      { thresholds: [parseThreshold("amplification<=1"), parseThreshold("p99_latency_ms<1000")] },
    );
    expect(merged.thresholds.map((t) => [t.expression, t.passed])).toEqual([
      ["p99_latency_ms<1000", false],
      ["amplification<=1", true],
    ]);
  });

  it("refuses reports of another model, naming the key and each value, unless forced", () => {
    const a = input(reportOf([10]), "a");
    const b = input(reportOf([10], { startMs: 5000, config: { model: "openai/gpt-4o-mini", target: "model" } }), "b");
    expect(() => mergeLoadReports([a, b])).toThrow(
      expect.objectContaining({
        code: "ERR_LOAD_REPORT",
        message: expect.stringMatching(/config.target differs \(a has "mock", b has "model"\)/),
      }),
    );
    const forced = mergeLoadReports([a, b], { force: true });
    expect(forced.merged.configDifferences).toEqual(["target", "model"]);
  });

  it("merges reports that differ in seed and session count, and says so", () => {
    const merged = mergeLoadReports([
      input(reportOf([10]), "a"),
      input(reportOf([10], { startMs: 5000, config: { seed: 9, sessions: 5 } }), "b"),
    ]);
    expect(merged.merged.configDifferences).toEqual(["seed"]);
    expect(merged.config.sessions).toBe(7);
    expect(merged.merged.from.map((part) => [part.source, part.seed, part.sessions])).toEqual([
      ["a", 0, 2],
      ["b", 9, 5],
    ]);
  });

  it("a part with no successful request adds nothing to the distributions, and two such parts have none", () => {
    const merged = mergeLoadReports([input(reportOf([10, 20]), "a"), input(reportOf([], { startMs: 5000 }), "b")]);
    expect(merged.latency.e2eMs).toMatchObject({ count: 2, min: 10, max: 20 });
    const empty = mergeLoadReports([input(reportOf([]), "a"), input(reportOf([], { startMs: 5000 }), "b")]);
    expect(empty.latency.e2eMs).toMatchObject({ count: 0, min: null, p99: null, histogram: { edges: [], counts: [] } });
    expect(empty.thresholds).toEqual([expect.objectContaining({ expression: "p99_latency_ms<1000", passed: false })]);
  });

  it("refuses the same run twice", () => {
    const a = reportOf([10]);
    expect(() => mergeLoadReports([input(a, "a"), input(a, "copy of a")])).toThrow(
      expect.objectContaining({ code: "ERR_LOAD_REPORT", message: expect.stringMatching(/same run/) }),
    );
  });

  it("merges a summary it does not know by its sketch, and lists any other unknown field instead of guessing", () => {
    const withExtras = (report: LoadReport, queued: number[], goodput: number) =>
      Object.assign(report, {
        arrivals: { gapMs: summarize(queued), rate: 3 },
        probe: { goodput },
      }) as LoadReport;
    const merged = mergeLoadReports([
      input(withExtras(reportOf([10]), [1, 2, 3], 0.9), "a"),
      input(withExtras(reportOf([10], { startMs: 5000 }), [4, 5], 0.8), "b"),
    ]) as MergedReport & { arrivals?: { gapMs: { count: number; max: number } }; probe?: unknown };
    expect(merged.arrivals?.gapMs).toMatchObject({ count: 5, max: 5 });
    expect(merged.probe).toBeUndefined();
    expect(merged.merged.unmergedFields).toEqual(["arrivals.rate", "probe.goodput"]);
  });

  it("names a malformed sketch by its report and field", () => {
    const a = reportOf([10]);
    const b = reportOf([10], { startMs: 5000 });
    b.latency.e2eMs.sketch = { ...b.latency.e2eMs.sketch, relativeAccuracy: 0.05 };
    expect(() => mergeLoadReports([input(a, "a"), input(b, "b")])).toThrow(
      expect.objectContaining({
        code: "ERR_LOAD_REPORT",
        message: expect.stringMatching(/^b: latency.e2eMs.sketch.relativeAccuracy must be 0.01/),
      }),
    );
  });
});
