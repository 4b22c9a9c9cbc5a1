/**
 * Writes a run's files into its report folder: report.json (the interface CI reads),
 * records.jsonl (one line per request and per prompt) and report.html (charts, self-contained).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { PromptRecord, RequestRecord } from "./load-metrics.js";
import type { LoadReport } from "./load-report.js";
import { renderHtmlReport } from "./report-html.js";

/** Paths of the files a run wrote. */
export interface ReportFiles {
  dir: string;
  json: string;
  html: string;
  records: string;
}

/**
 * Creates `dir` if needed and writes the three files (replacing files of the same names).
 * @throws the file system's error when the folder cannot be written.
 */
export async function writeReportFiles(
  dir: string,
  report: LoadReport,
  requests: readonly RequestRecord[],
  prompts: readonly PromptRecord[],
): Promise<ReportFiles> {
  await mkdir(dir, { recursive: true });
  const files: ReportFiles = {
    dir,
    json: join(dir, "report.json"),
    html: join(dir, "report.html"),
    records: join(dir, "records.jsonl"),
  };
  const records = [...requests, ...prompts]
    .sort((a, b) => a.startMs - b.startMs)
    .map((record) => `${JSON.stringify(record)}\n`)
    .join("");
  await Promise.all([
    writeFile(files.json, `${JSON.stringify(report, null, 2)}\n`),
    writeFile(files.records, records),
    renderHtmlReport(report).then((html) => writeFile(files.html, html)),
  ]);
  return files;
}
