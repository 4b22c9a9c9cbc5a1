/**
 * The report as CSV for spreadsheets and notebooks (`--csv`): records.csv, every request and
 * prompt of records.jsonl as one table with a `type` column, and summary.csv, one row per figure
 * of report.json (`figure,value`), so a run reads as two columns and runs stack by appending.
 * See docs/load.md for the columns.
 */
import { type CsvCell, toCsv } from "./csv.js";
import type { LoadReport } from "./load-report.js";

/**
 * records.csv's leading columns, in order; request and prompt fields share a column where they
 * mean the same. A `failure` object is spread over failureKind, failureClass and failureMessage.
 */
const RECORD_COLUMNS = [
  "type",
  "source",
  "session",
  "prompt",
  "attempt",
  "turn",
  "startMs",
  "ttftMs",
  "ttfbMs",
  "e2eMs",
  "latencyMs",
  "outputTokens",
  "inputTokens",
  "costUsd",
  "stopReason",
  "requests",
  "retries",
  "turns",
  "toolCalls",
  "backoffMs",
  "outcome",
  "failureKind",
  "failureClass",
  "failureMessage",
  "error",
] as const;

/** Report parts summary.csv leaves out: per-bin and per-interval data, which are tables of their own. */
const NOT_FIGURES = new Set(["histogram", "sketch", "timeline"]);

/**
 * records.csv: one row per record, in the order given. Columns: {@link RECORD_COLUMNS} (a
 * `source` column only when some record has one, as a merged report's do), then any other field
 * the records carry, in order of first appearance; an object or array cell is its JSON text.
 */
export function recordsCsv(records: readonly object[]): string {
  const rows = records.map((record) => flattenRecord(record as Record<string, unknown>));
  const present = new Set(rows.flatMap((row) => Object.keys(row)));
  const known: readonly string[] = RECORD_COLUMNS;
  const header = [
    ...RECORD_COLUMNS.filter((column) => column !== "source" || present.has("source")),
    ...[...present].filter((column) => !known.includes(column)),
  ];
  return toCsv(
    header,
    rows.map((row) => header.map((column) => row[column])),
  );
}

/**
 * summary.csv: `figure,value`, one row for each number, string, boolean or null of `report`, named
 * by its path (`totals.prompts.sent`, `latency.e2eMs.p99`, `thresholds.0.passed`), in report
 * order. Histograms, sketches and the timeline are left out.
 */
export function summaryCsv(report: LoadReport): string {
  const rows: [string, CsvCell][] = [];
  const walk = (value: unknown, path: string): void => {
    if (value !== null && typeof value === "object") {
      for (const [key, child] of Object.entries(value)) {
        if (!NOT_FIGURES.has(key)) walk(child, path === "" ? key : `${path}.${key}`);
      }
    } else if (path !== "") rows.push([path, value as CsvCell]);
  };
  walk(report, "");
  return toCsv(["figure", "value"], rows);
}

function flattenRecord(record: Record<string, unknown>): Record<string, CsvCell> {
  const row: Record<string, CsvCell> = {};
  for (const [key, value] of Object.entries(record)) {
    if (key === "failure" && value !== null && typeof value === "object") {
      const failure = value as { kind?: unknown; class?: unknown; message?: unknown };
      row.failureKind = cell(failure.kind);
      row.failureClass = cell(failure.class);
      row.failureMessage = cell(failure.message);
    } else row[key] = cell(value);
  }
  return row;
}

function cell(value: unknown): CsvCell {
  if (value === null || value === undefined) return value;
  return typeof value === "object" ? JSON.stringify(value) : (value as CsvCell);
}
