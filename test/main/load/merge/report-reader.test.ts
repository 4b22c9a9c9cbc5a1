/**
 * Reading a report folder back for a merge (src/main/load/merge/report-reader.ts): report.json and
 * records.jsonl from a folder or beside a report.json, and refusals that name the file and the
 * field or line (ERR_LOAD_REPORT).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readReportFolder } from "../../../../src/main/load/merge/report-reader.js";
import type { LoadReport } from "../../../../src/main/load/report/load-report.js";
import { tempDir } from "../../../fixtures/bounded.js";
import { reportOf } from "../../../fixtures/load-report.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A folder holding `report` as report.json and, when given, `records` as records.jsonl. */
function folder(report: unknown, records?: string): string {
  const dir = tempDir(cleanups, "lifeline-report-reader-");
  writeFileSync(join(dir, "report.json"), typeof report === "string" ? report : JSON.stringify(report));
  if (records !== undefined) writeFileSync(join(dir, "records.jsonl"), records);
  return dir;
}

async function refusal(path: string): Promise<Error & { code?: string }> {
  return readReportFolder(path).then(
    () => {
      throw new Error("expected a refusal");
    },
    (error: Error & { code?: string }) => error,
  );
}

describe("reading a report folder", () => {
  it("reads report.json and records.jsonl from the folder, or beside a report.json", async () => {
    const report = reportOf([10, 20]);
    const dir = folder(report, '{"type":"prompt","session":0}\n\n{"type":"request","session":1}\n');
    for (const path of [dir, join(dir, "report.json")]) {
      const read = await readReportFolder(path);
      expect(read.source).toBe(path);
      expect(read.report).toEqual(JSON.parse(JSON.stringify(report)));
      expect(read.records).toEqual([
        { type: "prompt", session: 0 },
        { type: "request", session: 1 },
      ]);
    }
  });

  it("a folder without records.jsonl has no records", async () => {
    expect((await readReportFolder(folder(reportOf([10])))).records).toBeUndefined();
  });

  it("refuses a summary without its sketch, naming the file and the field", async () => {
    const report = reportOf([10]) as LoadReport & { latency: Record<string, unknown> };
    const { sketch: _, ...old } = report.latency.e2eMs;
    const dir = folder({ ...report, latency: { ...report.latency, e2eMs: old } });
    const error = await refusal(dir);
    expect(error.code).toBe("ERR_LOAD_REPORT");
    expect(error.message).toContain(join(dir, "report.json"));
    expect(error.message).toMatch(
      /latency\.e2eMs\.sketch: missing: the report was written before summaries had sketches/,
    );
  });

  it("refuses a counter of the wrong type, naming its field", async () => {
    const report = reportOf([10]);
    const error = await refusal(folder({ ...report, totals: { ...report.totals, retries: "3" } }));
    expect(error.code).toBe("ERR_LOAD_REPORT");
    expect(error.message).toMatch(/totals\.retries: /);
  });

  it("refuses a records.jsonl line that is not a record, naming the file and line", async () => {
    const dir = folder(reportOf([10]), '{"type":"prompt"}\n[1, 2]\n');
    const error = await refusal(dir);
    expect(error.code).toBe("ERR_LOAD_REPORT");
    expect(error.message).toContain(`${join(dir, "records.jsonl")}:2 is not a record`);
  });

  it("refuses a missing folder and another schema, saying what to give", async () => {
    const missing = tempDir(cleanups, "lifeline-report-reader-");
    mkdirSync(join(missing, "empty"));
    expect((await refusal(join(missing, "empty"))).message).toMatch(
      /cannot be read .*give a report folder .*report\.json/,
    );
    const other = folder({ schema: "something-else/1" });
    expect((await refusal(other)).message).toMatch(
      /its schema is "something-else\/1"\); use reports written by this version/,
    );
  });
});
