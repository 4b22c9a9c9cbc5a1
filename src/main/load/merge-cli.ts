/**
 * `lifeline load merge <report> <report> [more…] --out <dir>`: merges report folders of one
 * configuration into one (merge-reports.ts), prints the merged summary, and exits 0, 99 when a
 * threshold fails on the merged figures, 2 for a report that cannot be merged (the message names
 * the file and what to do) or a bad flag, 1 when the folder cannot be written.
 */
import { resolve } from "node:path";
import { type Command, Option } from "commander";
import type { ErrorCode } from "../../shared/errors.js";
import { reportCliError } from "../config/cli-errors.js";
import { mergeReports } from "./merge-reports.js";
import { formatSummary } from "./summary-table.js";

/** Exit code of a merge whose re-checked thresholds did not all hold, as `lifeline load`'s. */
const EXIT_THRESHOLD_FAILED = 99;

/** Errors that mean "fix your command or the reports you named": exit 2. */
const USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["ERR_INVALID_OPTIONS", "ERR_LOAD_REPORT"]);

interface MergeFlags {
  out?: string;
  csv?: boolean;
  force?: boolean;
  threshold?: string[];
}

/** Adds `merge` under `load`; the action reports its exit code through `setExitCode`. */
export function addMergeCommand(load: Command, setExitCode: (code: number) => void): void {
  load
    .command("merge")
    .description("merge load reports of one configuration into one, with percentiles of all their samples")
    .argument("<reports...>", "report folders (or their report.json), at least two")
    .addOption(new Option("--out <dir>", "folder for the merged report (required)"))
    .addOption(new Option("--csv", "also write records.csv and summary.csv"))
    .addOption(new Option("--force", "merge reports whose target, model, faults, mock or settings differ"))
    .addOption(
      new Option(
        "--threshold <expr>",
        "also check this on the merged figures (exit 99 unless it holds); repeatable",
      ).argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]),
    )
    .action(async (reports: string[], own: MergeFlags) => {
      // commander parses `load`'s options wherever they stand, so `--out`, `--csv` and
      // `--threshold` after `merge` land on `load` (same names, same meaning): read them there too.
      const parent = load.opts<MergeFlags>();
      const flags: MergeFlags = { ...own };
      if (flags.out === undefined && parent.out !== undefined) flags.out = parent.out;
      if (parent.csv === true) flags.csv = true;
      if (parent.threshold !== undefined) flags.threshold = [...(own.threshold ?? []), ...parent.threshold];
      setExitCode(await runMergeCommand(reports, flags));
    });
}

/** Runs `lifeline load merge`; resolves to the exit code. Never throws. */
async function runMergeCommand(reports: readonly string[], flags: MergeFlags): Promise<number> {
  if (flags.out === undefined) {
    process.stderr.write("Error: --out <dir> is required: the folder for the merged report.\n");
    return 2;
  }
  const cwd = process.cwd();
  const outDir = resolve(cwd, flags.out);
  try {
    const result = await mergeReports(
      reports.map((report) => resolve(cwd, report)),
      {
        outDir,
        csv: flags.csv === true,
        force: flags.force === true,
        thresholds: flags.threshold ?? [],
      },
    );
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
      formatSummary(result.report, outDir, { records: result.files?.records !== undefined, csv: flags.csv === true }),
    );
    return result.thresholdsPassed ? 0 : EXIT_THRESHOLD_FAILED;
  } catch (error) {
    return reportCliError(error, USAGE_ERRORS);
  }
}
