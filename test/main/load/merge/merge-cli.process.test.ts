/**
 * `lifeline load merge` as users run it: real child processes of the built `dist/main/cli.js`
 * (run `npm run build` first) merging two report folders of real runs against the built-in mock.
 * Exit 0 with the merged folder, 99 when a threshold fails on the merged figures, 2 for a report
 * that cannot be merged (the message names the file).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type MergedReport, runLoad } from "../../../../dist/main/load/index.js";
import { tempDir } from "../../../fixtures/bounded.js";
import { type LoadRun, runLoadChild } from "../../../fixtures/load-child.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const folders: string[] = [];
const keep: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  for (const seed of [4, 5]) {
    const dir = tempDir(keep, "lifeline-merge-cli-part-");
    folders.push(dir);
    await runLoad({
      sessions: 2,
      prompts: 3,
      seed,
      mock: { tokens: 4, tokenDelayMs: 1 },
      lifelineDir: false,
      thresholds: ["failure_rate<=1"],
      outDir: dir,
    });
  }
  return () => {
    for (const cleanup of keep) cleanup();
  };
}, 60_000);

/** `lifeline load merge <args>` in a fresh working directory. */
function merge(...args: string[]): Promise<LoadRun> {
  return runLoadChild(cleanups, ["merge", ...args]);
}

describe("lifeline load merge", () => {
  it("writes the merged folder with CSV files, prints the merged summary, and exits 0", async () => {
    const run = await merge(...folders, "--out", "merged", "--csv");
    expect(run.code, run.stderr).toBe(0);
    const out = join(run.cwd, "merged");
    const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as MergedReport;
    expect(report.merged.from.map((part) => part.source)).toEqual(folders);
    expect(report.totals.prompts.sent).toBe(12);
    expect(report.thresholds.map((t) => [t.expression, t.passed])).toEqual([["failure_rate<=1", true]]);
    for (const file of ["report.html", "records.jsonl", "records.csv", "summary.csv"]) {
      expect(existsSync(join(out, file)), file).toBe(true);
    }
    expect(run.stdout).toContain("merged 2 reports");
    expect(run.stdout).toContain("prompts   12 sent");
    expect(run.stdout).toContain("(figures: report.json, records.jsonl, summary.csv, records.csv)");
  });

  it("exits 99 when a threshold fails on the merged figures, and the report says which", async () => {
    const run = await merge(...folders, "--out", "merged", "--threshold", "p50_latency_ms<0.001");
    expect(run.code, run.stderr).toBe(99);
    const report = JSON.parse(readFileSync(join(run.cwd, "merged", "report.json"), "utf8")) as MergedReport;
    expect(report.thresholds.find((t) => t.expression === "p50_latency_ms<0.001")?.passed).toBe(false);
    expect(run.stdout).toMatch(/FAIL p50_latency_ms<0.001/);
  });

  it("exits 2 naming the file for a report.json that is not JSON, and writes nothing", async () => {
    const bad = tempDir(cleanups, "lifeline-merge-bad-");
    writeFileSync(join(bad, "report.json"), "{ not json");
    const run = await merge(folders[0] as string, bad, "--out", "merged");
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`${join(bad, "report.json")} is not JSON`);
    expect(existsSync(join(run.cwd, "merged"))).toBe(false);
  });

  it("exits 2 for a report of another schema, and for a missing --out", async () => {
    const other = tempDir(cleanups, "lifeline-merge-other-");
    mkdirSync(join(other, "r"));
    writeFileSync(join(other, "r", "report.json"), JSON.stringify({ schema: "lifeline-load-report/2" }));
    const run = await merge(folders[0] as string, join(other, "r", "report.json"), "--out", "merged");
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/is not a lifeline load report of schema lifeline-load-report\/1/);
    const noOut = await merge(...folders);
    expect(noOut.code).toBe(2);
    expect(noOut.stderr).toContain("--out <dir> is required");
  });

  it("lifeline load --help lists merge", async () => {
    const run = await runLoadChild(cleanups, ["--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/merge \[options\] <reports\.\.\.>/);
  });
});
