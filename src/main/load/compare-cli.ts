/**
 * `lifeline load compare <a> <b>`: two runs' reports set side by side (compare-reports.ts), the
 * table on stdout (or compare.json with `--json`), compare.json and compare.html in `--out`, and
 * the exit code as `lifeline load`'s: 0 every threshold held, 99 one failed, 2 bad usage (a report
 * that is missing, not JSON or of another schema; a bad flag), 1 the folder could not be written.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { type Command, Option } from "commander";
import { type ErrorCode, LifelineError } from "../../shared/errors.js";
import { reportCliError } from "../config/cli-errors.js";
import { renderCompareHtml } from "./compare-html.js";
import { compareReports } from "./compare-reports.js";
import { formatComparison } from "./compare-table.js";
import { readLoadReport } from "./report-reader.js";

/** As `lifeline load`: a threshold failed. */
const EXIT_THRESHOLD_FAILED = 99;

const USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["ERR_INVALID_OPTIONS", "ERR_LOAD_REPORT"]);

interface CompareFlags {
  threshold?: string[];
  out?: string;
  json?: boolean;
  confidence?: string;
  seed?: string;
  noise?: string;
}

/**
 * Adds `compare` under `load` (the command `addLoadCommand` made); the action reports its exit
 * code through `setExitCode`. Commander gives an option after `compare` that `load` also has
 * (`--out`, `--threshold`, `--seed`) to `load`, so the action takes those from `load`'s options
 * when its own are unset.
 */
export function addCompareCommand(load: Command, setExitCode: (code: number) => void): void {
  load
    .command("compare")
    .description("compare two runs: each headline figure of A and B, B − A, B / A, and a verdict with its interval")
    .argument("<a>", "run A: a report folder of lifeline load, or its report.json")
    .argument("<b>", "run B, compared with A")
    .addOption(
      new Option(
        "--threshold <expr>",
        'fail (exit 99) unless it holds: <metric>_ratio (B / A) or <metric>_delta (B − A), e.g. "p99_latency_ms_ratio<1.1"; repeatable',
      ).argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]),
    )
    .addOption(
      new Option("--out <dir>", "folder for compare.json and compare.html (default ./lifeline-compare-<timestamp>)"),
    )
    .addOption(new Option("--json", "print compare.json on stdout instead of the table"))
    .addOption(new Option("--confidence <level>", "coverage of the intervals: 0.95 or 95% (default 0.95)"))
    .addOption(new Option("--seed <n>", "seed of the bootstrap's resampling (default 1)"))
    .addOption(
      new Option(
        "--noise <fraction>",
        "noise floor: better or worse only beyond ± this share of A's figure, 0.05 or 5% (default 0)",
      ),
    )
    .action(async (a: string, b: string, own: CompareFlags) => {
      const shared = load.opts<Pick<CompareFlags, "out" | "threshold" | "seed">>();
      const flags: CompareFlags = { ...own };
      flags.threshold = [...(shared.threshold ?? []), ...(own.threshold ?? [])];
      if (flags.out === undefined && shared.out !== undefined) flags.out = shared.out;
      if (flags.seed === undefined && shared.seed !== undefined) flags.seed = shared.seed;
      setExitCode(await runCompareCommand(a, b, flags));
    });
}

/** Runs the comparison; resolves to the exit code. Never throws. */
async function runCompareCommand(pathA: string, pathB: string, flags: CompareFlags): Promise<number> {
  let comparison: ReturnType<typeof compareReports>;
  try {
    const options = {
      thresholds: flags.threshold ?? [],
      ...(flags.confidence === undefined ? {} : { confidence: parseConfidence(flags.confidence) }),
      ...(flags.seed === undefined ? {} : { seed: parseSeed(flags.seed) }),
      ...(flags.noise === undefined ? {} : { noise: parseNoise(flags.noise) }),
    };
    const [a, b] = await Promise.all([readLoadReport(pathA), readLoadReport(pathB)]);
    comparison = compareReports(a, b, options);
  } catch (error) {
    return reportCliError(error, USAGE_ERRORS);
  }
  const dir = resolve(flags.out ?? defaultCompareDir(new Date()));
  const json = `${JSON.stringify(comparison, null, 2)}\n`;
  try {
    await mkdir(dir, { recursive: true });
    await Promise.all([
      writeFile(join(dir, "compare.json"), json),
      renderCompareHtml(comparison).then((html) => writeFile(join(dir, "compare.html"), html)),
    ]);
  } catch (error) {
    process.stdout.write(flags.json === true ? json : formatComparison(comparison));
    // The file system's error names the path; not a usage error: exit 1.
    return reportCliError(error, USAGE_ERRORS);
  }
  process.stdout.write(flags.json === true ? json : formatComparison(comparison, dir));
  return comparison.thresholdsPassed ? 0 : EXIT_THRESHOLD_FAILED;
}

/** `0.95`, or a percentage such as `95%`. */
function parseConfidence(text: string): number {
  return parseShare(
    "--confidence",
    text,
    (level) => level > 0 && level < 1,
    "a level in (0, 1): give e.g. 0.95 or 95%",
  );
}

/** `--noise`: a share of A's figure in [0, 1), as a fraction or a percentage. @throws ERR_INVALID_OPTIONS */
function parseNoise(text: string): number {
  return parseShare("--noise", text, (share) => share >= 0 && share < 1, "a share in [0, 1): give e.g. 0.05 or 5%");
}

/** A fraction (`0.95`) or a percentage (`95%`) that `accept` allows. @throws ERR_INVALID_OPTIONS naming `flag` */
function parseShare(flag: string, text: string, accept: (value: number) => boolean, what: string): number {
  const percent = text.trim().endsWith("%");
  const value = Number(percent ? text.trim().slice(0, -1) : text);
  const share = percent ? value / 100 : value;
  if (text.trim() === "" || !accept(share)) {
    throw new LifelineError("ERR_INVALID_OPTIONS", `${flag} "${text}" is not ${what}`);
  }
  return share;
}

function parseSeed(text: string): number {
  const seed = Number(text);
  if (text.trim() === "" || !Number.isSafeInteger(seed)) {
    throw new LifelineError("ERR_INVALID_OPTIONS", `--seed "${text}" is not a whole number: give e.g. 1`);
  }
  return seed;
}

/** `lifeline-compare-<UTC timestamp>` in the working directory. */
function defaultCompareDir(at: Date): string {
  const stamp = at
    .toISOString()
    .replace(/\.\d+Z$/, "Z")
    .replace(/[-:]/g, "");
  return `lifeline-compare-${stamp}`;
}
