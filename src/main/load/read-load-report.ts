/**
 * Reads a run's report for `lifeline load compare` and `compareReports()`: a report folder (its
 * report.json, and records.jsonl when it is there) or a report.json file (records.jsonl beside it).
 */
import { readFile, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { LifelineError } from "../../shared/errors.js";
import { REPORT_SCHEMA } from "./load-report.js";

/** A run as a comparison takes it. */
export interface ComparedRun {
  /** Where it was read from (a folder or a file), for the comparison's output. */
  source: string;
  /**
   * report.json, parsed (or a `LoadReport` from `runLoad()`). Read by path: figures a report
   * lacks are null in the comparison.
   */
  report: object;
  /** records.jsonl's lines, parsed; null when the run has none (figures then get no interval). */
  records: unknown[] | null;
}

/**
 * Reads `path`: a folder with report.json, or a report.json file.
 * @throws LifelineError ERR_INVALID_REPORT naming the file and what to do: the path does not
 * exist, report.json is missing or not JSON, its `schema` is not this version's
 * (`lifeline-load-report/1`), or a line of records.jsonl is not JSON.
 */
export async function readLoadReport(path: string): Promise<ComparedRun> {
  const info = await stat(path).catch(() => null);
  if (info === null) throw invalid(`${path} does not exist: give a report folder of lifeline load, or its report.json`);
  const json = info.isDirectory() ? join(path, "report.json") : path;
  const text = await readFile(json, "utf8").catch(() => null);
  if (text === null) {
    throw invalid(`${json} cannot be read: give a report folder of lifeline load (it holds report.json), or the file`);
  }
  let report: unknown;
  try {
    report = JSON.parse(text);
  } catch (error) {
    throw invalid(`${json} is not JSON (${(error as Error).message}): give the report.json lifeline load wrote`);
  }
  if (typeof report !== "object" || report === null || Array.isArray(report)) {
    throw invalid(`${json} is not a JSON object: give the report.json lifeline load wrote`);
  }
  const schema = (report as Record<string, unknown>).schema;
  if (schema !== REPORT_SCHEMA) {
    throw invalid(
      `${json} has schema ${JSON.stringify(schema ?? null)}, not "${REPORT_SCHEMA}": compare reports written by this version of lifeline load (run both again with it)`,
    );
  }
  const recordsPath = join(dirname(json), "records.jsonl");
  const recordsText = basename(json) === "report.json" ? await readFile(recordsPath, "utf8").catch(() => null) : null;
  return {
    source: path,
    report,
    records: recordsText === null ? null : parseRecords(recordsPath, recordsText),
  };
}

function parseRecords(file: string, text: string): unknown[] {
  const records: unknown[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]?.trim() ?? "";
    if (line === "") continue;
    try {
      records.push(JSON.parse(line));
    } catch {
      throw invalid(
        `${file}:${i + 1} is not a JSON line: restore the records.jsonl lifeline load wrote, or remove it (the comparison then has no samples)`,
      );
    }
  }
  return records;
}

function invalid(message: string): LifelineError {
  return new LifelineError("ERR_INVALID_REPORT", message);
}
