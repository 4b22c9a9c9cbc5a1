/**
 * `compareReports()` (src/main/load/compare/compare-reports.ts) on runs made up here from a seeded PRNG:
 * records.jsonl lines, and a report.json whose figures are computed from them as `lifeline load`
 * computes its own (stats.ts). An A/A pair is within noise, a pair with a real difference is
 * called better or worse the right way round, figures absent from a report are skipped, and the
 * comparison thresholds (`<metric>_ratio`, `<metric>_delta`) hold or fail.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { compareReports } from "../../../../src/main/load/compare/compare-reports.js";
import { type ComparedRun, readLoadReport } from "../../../../src/main/load/merge/report-reader.js";
import { summarize } from "../../../../src/main/load/metrics/stats.js";
import { REPORT_SCHEMA } from "../../../../src/main/load/report/load-report.js";
import type { LifelineError } from "../../../../src/shared/errors.js";
import { mulberry32 } from "../../../../src/shared/prng.js";

interface RunShape {
  seed: number;
  /** Median e2e latency of a request, ms. */
  medianMs: number;
  /** Probability that a request fails (and is retried, up to 3 times). */
  failP: number;
  prompts?: number;
}

/** A run of `prompts` (600: enough for a p99's interval) prompts, one after another, as records and report. */
function makeRun(shape: RunShape): ComparedRun {
  const random = mulberry32(shape.seed);
  const records: Record<string, unknown>[] = [];
  let clock = 0;
  let requests = 0;
  let failedRequests = 0;
  let succeeded = 0;
  let failed = 0;
  const e2e: number[] = [];
  const ttft: number[] = [];
  const itl: number[] = [];
  const promptMs: number[] = [];
  const perPrompt: number[] = [];
  for (let prompt = 0; prompt < (shape.prompts ?? 600); prompt++) {
    const start = clock;
    let attempt = 0;
    let ok = false;
    for (; attempt < 4 && !ok; attempt++) {
      requests++;
      const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
      const latency = shape.medianMs * Math.exp(0.3 * z);
      ok = random() >= shape.failP;
      const firstToken = latency / 4;
      records.push({
        type: "request",
        session: prompt % 10,
        prompt,
        attempt,
        startMs: clock,
        ttftMs: ok ? firstToken : null,
        e2eMs: ok ? latency : 3,
        outputTokens: ok ? 32 : 0,
        inputTokens: 100,
        costUsd: 0,
        stopReason: ok ? "stop" : "error",
        ...(ok ? {} : { failure: { kind: "http_503", class: "retryable", message: "503" } }),
      });
      if (ok) {
        e2e.push(latency);
        ttft.push(firstToken);
        itl.push((latency - firstToken) / 31);
      } else failedRequests++;
      clock += ok ? latency : 3;
    }
    if (ok) {
      succeeded++;
      promptMs.push(clock - start);
    } else failed++;
    perPrompt.push(attempt);
    records.push({
      type: "prompt",
      session: prompt % 10,
      prompt,
      startMs: start,
      latencyMs: clock - start,
      requests: attempt,
      retries: attempt - 1,
      outcome: ok ? "succeeded" : "failed",
    });
  }
  const prompts = shape.prompts ?? 600;
  const report = {
    schema: REPORT_SCHEMA,
    status: "completed",
    startedAt: "2026-12-01T00:00:00.000Z",
    config: { sessions: 10, seed: shape.seed, mock: { tokenDelayMs: shape.medianMs / 32 } },
    totals: {
      prompts: { sent: prompts, succeeded, failed, cancelled: 0 },
      requests: { sent: requests, failed: failedRequests },
      retries: requests - prompts,
      amplification: requests / prompts,
      failureRate: failed / (succeeded + failed),
      watchdogTerminations: 0,
    },
    latency: {
      e2eMs: summarize(e2e),
      ttftMs: summarize(ttft),
      itlMs: summarize(itl),
      promptMs: summarize(promptMs),
      requestsPerPrompt: summarize(perPrompt),
    },
    throughput: {
      requestsPerSecond: requests / (clock / 1000),
      outputTokensPerSecond: (32 * e2e.length) / (clock / 1000),
    },
    loopDelayMs: { mean: 0, p50: 0, p99: 0, max: 1 },
  };
  return { source: `run-${shape.seed}`, report, records };
}

const byId = (comparison: ReturnType<typeof compareReports>, id: string) => {
  const figure = comparison.figures.find((f) => f.id === id);
  if (figure === undefined) throw new Error(`no figure ${id}`);
  return figure;
};

const LATENCY = [
  "latency.e2eMs.p50",
  "latency.e2eMs.p90",
  "latency.e2eMs.p99",
  "latency.ttftMs.p50",
  "latency.ttftMs.p99",
  "latency.itlMs.p50",
  "latency.itlMs.p99",
];

describe("compareReports", () => {
  it("calls an A/A pair (same settings, other seeds) within noise on every tested figure", () => {
    const comparison = compareReports(
      makeRun({ seed: 1, medianMs: 200, failP: 0.2 }),
      makeRun({ seed: 2, medianMs: 200, failP: 0.2 }),
    );
    const tested = comparison.figures.filter((f) => f.interval !== null);
    expect(tested.map((f) => f.id)).toEqual(
      expect.arrayContaining([...LATENCY, "totals.amplification", "totals.failureRate"]),
    );
    expect(tested.filter((f) => f.verdict !== "within noise").map((f) => `${f.id}: ${f.verdict}`)).toEqual([]);
  });

  it("calls a slower B worse on latency and a B with fewer failures better on failures and amplification", () => {
    const a = makeRun({ seed: 3, medianMs: 200, failP: 0.5 });
    const b = makeRun({ seed: 4, medianMs: 300, failP: 0.1 });
    const comparison = compareReports(a, b);
    for (const id of LATENCY.filter((id) => id.startsWith("latency.e2eMs")))
      expect(byId(comparison, id).verdict, id).toBe("worse");
    expect(byId(comparison, "totals.failureRate").verdict).toBe("better");
    expect(byId(comparison, "totals.prompts.successRate").verdict).toBe("better");
    expect(byId(comparison, "totals.amplification").verdict).toBe("better");
    expect(byId(comparison, "totals.retries").verdict).toBe("better");
    const p50 = byId(comparison, "latency.e2eMs.p50");
    expect(p50.delta).toBeCloseTo((p50.b ?? 0) - (p50.a ?? 0), 3);
    expect(p50.ratio).toBeCloseTo((p50.b ?? 0) / (p50.a ?? 1), 3);
    expect(p50.interval?.low).toBeGreaterThan(0);
    // The same inputs and seed give the same comparison; the seed is what changes the intervals.
    expect(compareReports(a, b)).toEqual(comparison);
    expect(compareReports(a, b, { seed: 2 }).figures).not.toEqual(comparison.figures);
  });

  it("without records, gives no intervals for sample figures and says 'no samples' with the difference's direction", () => {
    const a = { ...makeRun({ seed: 5, medianMs: 200, failP: 0 }), records: null };
    const b = { ...makeRun({ seed: 6, medianMs: 400, failP: 0 }), records: null };
    const p99 = byId(compareReports(a, b), "latency.e2eMs.p99");
    expect(p99).toMatchObject({ verdict: "no samples", leaning: "worse", interval: null, test: "none" });
    expect(p99.note).toMatch(/records\.jsonl/);
    // Counts come from report.json: the rates keep their test.
    expect(byId(compareReports(a, b), "totals.failureRate").test).toBe("newcombe");
  });

  it("gives a p99 no interval below 500 samples a run, and a p50 one from 10", () => {
    const a = makeRun({ seed: 12, medianMs: 200, failP: 0, prompts: 60 });
    const b = makeRun({ seed: 13, medianMs: 400, failP: 0, prompts: 60 });
    const comparison = compareReports(a, b);
    expect(byId(comparison, "latency.e2eMs.p99")).toMatchObject({
      verdict: "no samples",
      leaning: "worse",
      interval: null,
    });
    expect(byId(comparison, "latency.e2eMs.p99").note).toMatch(/p99 needs 500 samples a run, A has 60/);
    expect(byId(comparison, "latency.e2eMs.p90").verdict).toBe("worse");
    expect(byId(comparison, "latency.e2eMs.p50").verdict).toBe("worse");
  });

  it("skips a figure absent from either report, and lists the settings that differ", () => {
    const a = makeRun({ seed: 7, medianMs: 200, failP: 0.1 });
    const b = makeRun({ seed: 8, medianMs: 250, failP: 0.1 });
    (b.report as { slo?: unknown }).slo = { requests: { attainment: 0.9, goodputPerSecond: 3 } };
    const comparison = compareReports(a, b);
    expect(byId(comparison, "slo.requests.attainment")).toMatchObject({ a: null, b: 0.9, verdict: null, delta: null });
    expect(comparison.configDifferences.map((d) => d.path)).toEqual(["mock.tokenDelayMs", "seed"]);
  });

  it("checks ratio and delta thresholds, and fails one on a figure a report lacks, saying so", () => {
    const a = makeRun({ seed: 9, medianMs: 200, failP: 0.3 });
    const b = makeRun({ seed: 10, medianMs: 300, failP: 0.3 });
    delete (b.report as { loopDelayMs: { max?: number } }).loopDelayMs.max;
    const comparison = compareReports(a, b, {
      thresholds: [
        "p99_latency_ms_ratio < 1.1",
        "p50_latency_ms_ratio>1.2",
        "failure_rate_delta<=0.2",
        "max_loop_delay_ms_delta<5",
      ],
    });
    expect(comparison.thresholds.map((t) => [t.metric, t.passed])).toEqual([
      ["p99_latency_ms_ratio", false],
      ["p50_latency_ms_ratio", true],
      ["failure_rate_delta", true],
      ["max_loop_delay_ms_delta", false],
    ]);
    expect(comparison.thresholds[3]?.note).toMatch(/absent from B/);
    expect(comparison.thresholdsPassed).toBe(false);
  });

  it("with a noise floor, calls B better or worse only when the whole interval lies beyond ± noise × A", () => {
    // B 8 % slower: its e2e p50 interval lies clear of 0.
    const a = makeRun({ seed: 3, medianMs: 200, failP: 0 });
    const b = makeRun({ seed: 4, medianMs: 216, failP: 0 });
    const plain = byId(compareReports(a, b), "latency.e2eMs.p50");
    expect(plain.verdict).toBe("worse");
    const low = plain.interval?.low ?? Number.NaN;
    const high = plain.interval?.high ?? Number.NaN;
    const a50 = plain.a ?? Number.NaN;
    // A floor under the interval's low end keeps the verdict; one above it makes it noise.
    expect(byId(compareReports(a, b, { noise: (low / a50) * 0.9 }), "latency.e2eMs.p50").verdict).toBe("worse");
    const floored = compareReports(a, b, { noise: (high / a50) * 1.1 });
    expect(byId(floored, "latency.e2eMs.p50")).toMatchObject({ verdict: "within noise", interval: plain.interval });
    expect(floored.noise).toBeCloseTo((high / a50) * 1.1, 10);
    expect(compareReports(a, b).noise).toBe(0);
  });

  it("refuses an unknown threshold metric, a confidence outside (0, 1) and a noise floor outside [0, 1) with ERR_INVALID_OPTIONS", () => {
    const a = makeRun({ seed: 11, medianMs: 200, failP: 0 });
    for (const options of [
      { thresholds: ["p99_latency_ms<1"] },
      { thresholds: ["nope_ratio<1"] },
      { confidence: 1 },
      { resamples: 5 },
      { noise: 1 },
      { noise: -0.1 },
    ]) {
      expect(() => compareReports(a, a, options), JSON.stringify(options)).toThrow(
        expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }),
      );
    }
  });
});

describe("readLoadReport", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const folder = () => {
    const dir = mkdtempSync(join(tmpdir(), "lifeline-compare-"));
    dirs.push(dir);
    return dir;
  };
  const code = async (path: string) =>
    (await readLoadReport(path).catch((error: LifelineError) => error)) as LifelineError;

  it("reads a folder's report.json and records.jsonl, or a report.json with records.jsonl beside it", async () => {
    const dir = folder();
    writeFileSync(join(dir, "report.json"), JSON.stringify({ schema: REPORT_SCHEMA, totals: {} }));
    writeFileSync(join(dir, "records.jsonl"), '{"type":"prompt"}\n{"type":"request"}\n');
    expect((await readLoadReport(dir)).records).toHaveLength(2);
    expect((await readLoadReport(join(dir, "report.json"))).records).toHaveLength(2);
    rmSync(join(dir, "records.jsonl"));
    expect((await readLoadReport(dir)).records).toBeNull();
  });

  it("refuses a missing path, a folder without report.json, bad JSON, another schema and a bad records line with ERR_LOAD_REPORT naming the file", async () => {
    const empty = folder();
    expect(await code(join(empty, "nothing"))).toMatchObject({ code: "ERR_LOAD_REPORT" });
    expect(await code(empty)).toMatchObject({
      code: "ERR_LOAD_REPORT",
      message: expect.stringContaining("report.json"),
    });
    const bad = folder();
    writeFileSync(join(bad, "report.json"), "{ not json");
    expect(await code(bad)).toMatchObject({ code: "ERR_LOAD_REPORT", message: expect.stringContaining(bad) });
    const other = folder();
    writeFileSync(join(other, "report.json"), JSON.stringify({ schema: "lifeline-load-report/0" }));
    expect(await code(other)).toMatchObject({ code: "ERR_LOAD_REPORT", message: expect.stringContaining("schema") });
    const lines = folder();
    writeFileSync(join(lines, "report.json"), JSON.stringify({ schema: REPORT_SCHEMA }));
    writeFileSync(join(lines, "records.jsonl"), '{"type":"prompt"}\nnot json\n');
    expect(await code(lines)).toMatchObject({
      code: "ERR_LOAD_REPORT",
      message: expect.stringContaining("records.jsonl:2"),
    });
  });
});
