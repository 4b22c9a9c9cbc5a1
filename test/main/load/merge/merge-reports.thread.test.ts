/**
 * `mergeReports()` on real runs: `runLoad` twice against the built-in mock (real worker threads,
 * from the built dist/: run `npm run build` first), then the merge of the two report folders.
 * The merged percentiles are checked against the exact nearest-rank percentiles of the union of
 * both records.jsonl, within the sketch's stated 1 %, and the counts against the sums.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type LoadResult, mergeReports, type RequestRecord, runLoad } from "../../../../dist/main/load/index.js";
import { tempDir } from "../../../fixtures/bounded.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const folders: string[] = [];
const runs: LoadResult[] = [];
const keep: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  for (const seed of [1, 2]) {
    const dir = tempDir(keep, "lifeline-merge-part-");
    folders.push(dir);
    runs.push(
      await runLoad({
        sessions: 3,
        prompts: 4,
        faults: [{ step: 503, probability: 0.2 }],
        seed,
        mock: { tokens: 6, tokenDelayMs: 1 },
        lifelineDir: false,
        settings: { retry: { baseDelayMs: 5 } },
        sampleIntervalMs: 100,
        outDir: dir,
      }),
    );
  }
  return () => {
    for (const cleanup of keep) cleanup();
  };
}, 60_000);

function records(dir: string): (RequestRecord | { type: "prompt"; outcome: string; latencyMs: number })[] {
  return readFileSync(join(dir, "records.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
}

/** The nearest-rank percentile of `values`, the exact reference. */
function nearestRank(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1] as number;
}

describe("mergeReports of two real runs", () => {
  it("gives p50, p90 and p99 within 1 % of the union of both runs' records, and counts that are the sums", async () => {
    const out = tempDir(cleanups, "lifeline-merged-");
    const { report, files, thresholdsPassed } = await mergeReports(folders, { outDir: out, csv: true });
    expect(thresholdsPassed).toBe(true);
    const all = folders.flatMap(records);
    const ok = all.filter((r): r is RequestRecord => r.type === "request" && r.failure === undefined);
    const e2e = ok.map((r) => r.e2eMs);
    const ttft = ok.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs]));
    expect(report.latency.e2eMs.count).toBe(e2e.length);
    expect(report.latency.ttftMs.count).toBe(ttft.length);
    for (const [summary, values] of [
      [report.latency.e2eMs, e2e],
      [report.latency.ttftMs, ttft],
    ] as const) {
      for (const p of [50, 90, 99] as const) {
        const exact = nearestRank(values, p);
        // 1 % of the sketch, plus report.json's rounding to 3 decimals.
        expect(Math.abs((summary[`p${p}`] as number) - exact), `p${p}`).toBeLessThanOrEqual(0.01 * exact + 0.0005);
      }
      expect(summary.max).toBe(Math.round(Math.max(...values) * 1000) / 1000);
    }
    const [a, b] = runs.map((run) => run.report) as [LoadResult["report"], LoadResult["report"]];
    expect(report.totals.requests.sent).toBe(a.totals.requests.sent + b.totals.requests.sent);
    expect(report.totals.prompts.sent).toBe(24);
    expect(report.totals.retries).toBe(a.totals.retries + b.totals.retries);
    expect(report.mock?.received).toBe((a.mock?.received ?? 0) + (b.mock?.received ?? 0));
    expect(report.config.sessions).toBe(6);
    expect(report.merged.from.map((part) => part.seed)).toEqual([1, 2]);
    expect(report.merged.configDifferences).toEqual(["seed"]);
    // The runs ran one after another: the merged duration is the sum of theirs.
    expect(report.durationMs).toBeGreaterThanOrEqual(a.durationMs + b.durationMs - 2);
    expect(report.durationMs).toBeLessThanOrEqual(a.durationMs + b.durationMs + 2);
    // records.jsonl: both parts' records, each tagged with its part.
    const merged = records(out) as { source?: number }[];
    expect(merged.length).toBe(all.length);
    expect(merged.filter((r) => r.source === 0).length).toBe(records(folders[0] as string).length);
    expect(merged.filter((r) => r.source === 1).length).toBe(records(folders[1] as string).length);
    expect(files?.recordsCsv !== undefined && existsSync(files.recordsCsv)).toBe(true);
    expect(files?.summaryCsv !== undefined && existsSync(files.summaryCsv)).toBe(true);
    expect(existsSync(join(out, "report.html"))).toBe(true);
  });

  it("writes nothing with outDir false, and a report merged again keeps where its parts came from", async () => {
    const first = tempDir(cleanups, "lifeline-merged-");
    await mergeReports(folders, { outDir: first });
    const third = tempDir(cleanups, "lifeline-merge-part-");
    await runLoad({
      sessions: 2,
      prompts: 2,
      mock: { tokens: 6, tokenDelayMs: 1 },
      faults: [{ step: 503, probability: 0.2 }],
      seed: 3,
      lifelineDir: false,
      settings: { retry: { baseDelayMs: 5 } },
      outDir: third,
    });
    const { report, files } = await mergeReports([first, third], { outDir: false });
    expect(files).toBeUndefined();
    expect(report.totals.prompts.sent).toBe(28);
    expect(report.merged.from[0]?.from?.map((part) => part.seed)).toEqual([1, 2]);
  }, 30_000);
});
