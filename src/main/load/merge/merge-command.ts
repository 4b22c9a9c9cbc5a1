/**
 * `lifeline load merge <report> <report> [more…] --out <dir>`'s run: merges report folders of one
 * configuration into one (merge-reports.ts), prints the merged summary, and exits 0, 99 when a
 * threshold fails on the merged figures, 2 for a report that cannot be merged (the message names
 * the file and what to do) or a bad flag, 1 when the folder cannot be written.
 */
import type { ErrorCode } from "../../../shared/errors.js";
import { reportCliError } from "../../config/cli-errors.js";
import { formatSummary } from "../report/summary-table.js";
import { mergeReports } from "./merge-reports.js";

/** Exit code of a merge whose re-checked thresholds did not all hold, as `lifeline load`'s. */
const EXIT_THRESHOLD_FAILED = 99;

/** Errors that mean "fix your command or the reports you named": exit 2. */
const USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["ERR_INVALID_OPTIONS", "ERR_LOAD_REPORT"]);

/** What `lifeline load merge` runs. */
export interface MergeCommandRequest {
  /** Report folders (or their report.json). */
  reports: readonly string[];
  /** The merged report's folder. */
  outDir: string;
  csv: boolean;
  force: boolean;
  /** Thresholds checked on the merged figures. */
  thresholds: readonly string[];
}

/** Runs `lifeline load merge`; resolves to the exit code. Never throws. */
export async function runMergeCommand(request: MergeCommandRequest): Promise<number> {
  const { reports, outDir } = request;
  try {
    const result = await mergeReports([...reports], {
      outDir,
      csv: request.csv,
      force: request.force,
      thresholds: request.thresholds,
    });
    const { merged } = result.report;
    process.stdout.write(`merged ${merged.from.length} reports: ${reports.join(", ")}\n`);
    if (merged.configDifferences.length > 0) {
      process.stdout.write(
        `config differs in: ${merged.configDifferences.join(", ")} (config shows the first report's)\n`,
      );
    }
    if (merged.unmergedFields.length > 0) {
      process.stdout.write(`left out (cannot be merged): ${merged.unmergedFields.join(", ")}\n`);
    }
    process.stdout.write(
      formatSummary(result.report, outDir, { records: result.files?.records !== undefined, csv: request.csv }),
    );
    return result.thresholdsPassed ? 0 : EXIT_THRESHOLD_FAILED;
  } catch (error) {
    return reportCliError(error, USAGE_ERRORS);
  }
}
