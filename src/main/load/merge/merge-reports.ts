/**
 * `mergeReports()`: the library call behind `lifeline load merge`. It reads report folders
 * (report-reader.ts), merges them (report-merge.ts) and writes the merged folder: report.json
 * with `merged`, report.html, records.jsonl (every part's records, in the order of the parts,
 * each tagged with the index of its part as `source`) and, with `csv`, the CSV files.
 */
import { LifelineError } from "../../../shared/errors.js";
import { type ReportFolderFiles, writeReportFolder } from "../report/report-files.js";
import { parseThreshold } from "../verdicts/thresholds.js";
import { type MergedReport, mergeLoadReports } from "./report-merge.js";
import { readReportFolder } from "./report-reader.js";

/** Options of {@link mergeReports}. */
export interface MergeOptions {
  /** Folder for the merged report, created if missing; `false` writes nothing. */
  outDir: string | false;
  /** Also write records.csv and summary.csv. @default false */
  csv?: boolean;
  /**
   * Merge reports whose configurations differ in target, model, faults, mock or settings
   * (`merged.configDifferences` names them). @default false
   */
  force?: boolean;
  /** Threshold expressions checked on the merged figures besides the reports' own. @default none */
  thresholds?: readonly string[];
}

/** What {@link mergeReports} resolves with. */
export interface MergeResult {
  report: MergedReport;
  /** The files written; undefined with `outDir: false`. */
  files: ReportFolderFiles | undefined;
  /** True when every threshold held on the merged figures (also with none). */
  thresholdsPassed: boolean;
}

/**
 * Merges the load reports at `sources` (report folders or report.json paths, at least two) into
 * one; see docs/load.md, "Merging reports".
 * @throws ERR_INVALID_OPTIONS for a malformed threshold; ERR_LOAD_REPORT when a report cannot be
 *   read or is malformed, of another schema, the same run twice, or of another configuration
 *   without `force` (the message names the file and what is wrong); the file system's error when
 *   `outDir` cannot be written.
 */
export async function mergeReports(sources: readonly string[], options: MergeOptions): Promise<MergeResult> {
  const thresholds = (options.thresholds ?? []).map(parseThreshold);
  if (sources.length < 2) {
    throw new LifelineError("ERR_LOAD_REPORT", `Give at least two reports to merge, got ${sources.length}.`);
  }
  const folders = [];
  for (const source of sources) folders.push(await readReportFolder(source));
  const report = mergeLoadReports(
    folders.map((folder) => ({
      source: folder.source,
      report: folder.report,
      records: folder.records?.length ?? null,
    })),
    { force: options.force ?? false, thresholds },
  );
  const records = folders.some((folder) => folder.records !== undefined)
    ? folders.flatMap((folder, source) => (folder.records ?? []).map((record) => ({ ...record, source })))
    : undefined;
  const files =
    options.outDir === false
      ? undefined
      : await writeReportFolder(options.outDir, report, records, { csv: options.csv ?? false });
  return { report, files, thresholdsPassed: report.thresholds.every((threshold) => threshold.passed) };
}
