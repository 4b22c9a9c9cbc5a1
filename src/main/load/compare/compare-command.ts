/**
 * `lifeline load compare <a> <b>`'s run: two runs' reports set side by side (compare-reports.ts), the
 * table on stdout (or compare.json with `--json`), compare.json and compare.html in `--out`, and
 * the exit code as `lifeline load`'s: 0 every threshold held, 99 one failed, 2 bad usage (a report
 * that is missing, not JSON or of another schema; a bad flag), 1 the folder could not be written.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { ErrorCode } from "../../../shared/errors.js";
import { reportCliError } from "../../config/cli-errors.js";
import { readLoadReport } from "../merge/report-reader.js";
import { renderCompareHtml } from "./compare-html.js";
import { compareReports } from "./compare-reports.js";
import { formatComparison } from "./compare-table.js";

/** As `lifeline load`: a threshold failed. */
const EXIT_THRESHOLD_FAILED = 99;

const USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["ERR_INVALID_OPTIONS", "ERR_LOAD_REPORT"]);

/** What `lifeline load compare` runs. */
export interface CompareCommandRequest {
  /** Run A's report folder (or its report.json), and run B's. */
  a: string;
  b: string;
  /** `<metric>_ratio` or `<metric>_delta` expressions: exit 99 unless each holds. */
  thresholds: readonly string[];
  /** Folder for compare.json and compare.html. @default ./lifeline-compare-<timestamp> */
  outDir?: string;
  /** Print compare.json instead of the table. */
  json: boolean;
  /** Coverage of the intervals, in (0, 1). */
  confidence?: number;
  /** Seed of the bootstrap's resampling. */
  seed?: number;
  /** Noise floor, a share of A's figure in [0, 1). */
  noise?: number;
}

/** Runs the comparison; resolves to the exit code. Never throws. */
export async function runCompareCommand(request: CompareCommandRequest): Promise<number> {
  let comparison: ReturnType<typeof compareReports>;
  try {
    const options = {
      thresholds: [...request.thresholds],
      ...(request.confidence === undefined ? {} : { confidence: request.confidence }),
      ...(request.seed === undefined ? {} : { seed: request.seed }),
      ...(request.noise === undefined ? {} : { noise: request.noise }),
    };
    const [a, b] = await Promise.all([readLoadReport(request.a), readLoadReport(request.b)]);
    comparison = compareReports(a, b, options);
  } catch (error) {
    return reportCliError(error, USAGE_ERRORS);
  }
  const dir = resolve(request.outDir ?? defaultCompareDir(new Date()));
  const json = `${JSON.stringify(comparison, null, 2)}\n`;
  try {
    await mkdir(dir, { recursive: true });
    await Promise.all([
      writeFile(join(dir, "compare.json"), json),
      renderCompareHtml(comparison).then((html) => writeFile(join(dir, "compare.html"), html)),
    ]);
  } catch (error) {
    process.stdout.write(request.json ? json : formatComparison(comparison));
    // The file system's error names the path; not a usage error: exit 1.
    return reportCliError(error, USAGE_ERRORS);
  }
  process.stdout.write(request.json ? json : formatComparison(comparison, dir));
  return comparison.thresholdsPassed ? 0 : EXIT_THRESHOLD_FAILED;
}

/** `lifeline-compare-<UTC timestamp>` in the working directory. */
function defaultCompareDir(at: Date): string {
  const stamp = at
    .toISOString()
    .replace(/\.\d+Z$/, "Z")
    .replace(/[-:]/g, "");
  return `lifeline-compare-${stamp}`;
}
