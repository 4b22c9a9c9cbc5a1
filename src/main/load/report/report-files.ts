/**
 * Writes a run's files into its report folder: report.json (the interface CI reads),
 * records.jsonl (one line per request and per prompt), report.html (charts, self-contained) and,
 * with `csv`, records.csv and summary.csv (report-csv.ts).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { PromptRecord, RequestRecord } from "../metrics/load-metrics.js";
import type { LoadReport } from "./load-report.js";
import { recordsCsv, summaryCsv } from "./report-csv.js";
import { renderHtmlReport } from "./report-html.js";

/** Paths of the files a run wrote. */
export interface ReportFiles {
  dir: string;
  json: string;
  html: string;
  records: string;
  /** records.csv and summary.csv, with `csv`. */
  recordsCsv?: string;
  summaryCsv?: string;
}

/** Paths of the files of a report folder whose records may be missing (a merge of reports without any). */
export interface ReportFolderFiles extends Omit<ReportFiles, "records"> {
  /** records.jsonl; undefined when there were no records to write, and then no records.csv either. */
  records: string | undefined;
}

/** What {@link writeReportFiles} writes besides report.json, report.html and records.jsonl. */
export interface ReportFileOptions {
  /** Also write records.csv and summary.csv. @default false */
  csv?: boolean;
}

/**
 * Creates `dir` if needed and writes the files (replacing files of the same names); the records
 * go in order of start.
 * @throws the file system's error when the folder cannot be written.
 */
export async function writeReportFiles(
  dir: string,
  report: LoadReport,
  requests: readonly RequestRecord[],
  prompts: readonly PromptRecord[],
  options: ReportFileOptions = {},
): Promise<ReportFiles> {
  const records = [...requests, ...prompts].sort((a, b) => a.startMs - b.startMs);
  const files = await writeReportFolder(dir, report, records, options);
  return { ...files, records: join(dir, "records.jsonl") };
}

/**
 * {@link writeReportFiles} for records already in their order, or none (`undefined`: no
 * records.jsonl or records.csv is written).
 * @throws the file system's error when the folder cannot be written.
 */
export async function writeReportFolder(
  dir: string,
  report: LoadReport,
  records: readonly object[] | undefined,
  options: ReportFileOptions = {},
): Promise<ReportFolderFiles> {
  await mkdir(dir, { recursive: true });
  const files: ReportFolderFiles = {
    dir,
    json: join(dir, "report.json"),
    html: join(dir, "report.html"),
    records: records === undefined ? undefined : join(dir, "records.jsonl"),
  };
  const writes = [
    writeFile(files.json, reportJson(report)),
    renderHtmlReport(report).then((html) => writeFile(files.html, html)),
  ];
  if (files.records !== undefined && records !== undefined) {
    writes.push(writeFile(files.records, records.map((record) => `${JSON.stringify(record)}\n`).join("")));
  }
  if (options.csv === true) {
    files.summaryCsv = join(dir, "summary.csv");
    writes.push(writeFile(files.summaryCsv, summaryCsv(report)));
    if (records !== undefined) {
      files.recordsCsv = join(dir, "records.csv");
      writes.push(writeFile(files.recordsCsv, recordsCsv(records)));
    }
  }
  await Promise.all(writes);
  return files;
}

/**
 * report.json's text: indented JSON, except that an array of numbers (or of arrays of numbers,
 * as a sketch's `[index, count]` buckets) stays on one line, so that a sketch of hundreds of
 * buckets is one line, not four per bucket. Still plain JSON: `JSON.parse` reads it as ever.
 */
export function reportJson(report: LoadReport): string {
  let text = JSON.stringify(report, null, 2);
  // Innermost first: [index, count] pairs, then the arrays of them. Each pattern starts and
  // ends at a line break, which JSON.stringify never leaves inside a string, so no text changes.
  const number = String.raw`-?\d+(?:\.\d+)?(?:e[+-]?\d+)?`;
  const numbers = new RegExp(String.raw`\[\n\s*(${number}(?:,\n\s*${number})*)\n\s*\]`, "g");
  const flat = String.raw`\[${number}(?:, ${number})*\]`;
  const pairs = new RegExp(String.raw`\[\n\s*(${flat}(?:,\n\s*${flat})*)\n\s*\]`, "g");
  text = text.replace(numbers, (_, inner: string) => `[${inner.replace(/,\n\s*/g, ", ")}]`);
  text = text.replace(pairs, (_, inner: string) => `[${inner.replace(/,\n\s*/g, ", ")}]`);
  return `${text}\n`;
}
