/**
 * `lifeline load`'s run, once its flags are resolved (the CLI's cli/commands/load-commands.ts
 * builds the request): live progress on stderr, the summary on stdout, the report folder, and the exit code:
 * 0 the run completed (whatever the prompts' outcomes), 99 a threshold failed, 2 bad usage,
 * 1 the run could not complete, 130 interrupted by Ctrl+C (143 by SIGTERM); a partial report is
 * still written then.
 *
 * With `distributed` this process is the coordinator of a distributed run: the run itself is the
 * {@link DistributedLoad} the CLI plugs in (load-fleet/ sits above this layer); the progress
 * view, the summary and the exit codes stay the ones here. Its refusals before the start (no
 * Redis, the fleet's run lock held, too few generators, generators of another version) exit 2 too.
 */
import type { ErrorCode } from "../../shared/errors.js";
import { LifelineError } from "../../shared/errors.js";
import type { FleetSettings } from "../../shared/settings/settings.js";
import { reportCliError } from "../config/cli-errors.js";
import { type MetricsEndpoint, startMetricsEndpoint } from "../telemetry/metrics-endpoint.js";
import type { LoadOptions } from "./options/load-options.js";
import type { LoadReport } from "./report/load-report.js";
import { describeOpenModel } from "./report/open-summary.js";
import { formatSummary } from "./report/summary-table.js";
import { createProgressView } from "./run/progress.js";
import { defaultOutDir, runLoad } from "./run/run-load.js";

/** Exit code of a run whose thresholds did not all hold (k6's). */
const EXIT_THRESHOLD_FAILED = 99;
/** Exit codes after Ctrl+C and SIGTERM, as the rest of the CLI. */
const EXIT_INTERRUPTED = 130;
const EXIT_TERMINATED = 143;

/** Errors that mean "fix your command or configuration": exit 2. */
const USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "ERR_INVALID_OPTIONS",
  "ERR_INVALID_SETTINGS",
  "ERR_INVALID_MODELS",
  "ERR_UNKNOWN_MODEL",
  "ERR_MISSING_API_KEY",
  "ERR_LOAD_FLEET_BUSY",
  "ERR_LOAD_FLEET_GENERATORS",
  "ERR_LOAD_FLEET_MISMATCH",
  "ERR_TELEMETRY_UNAVAILABLE",
  "ERR_FLEET_AUTH",
]);

/** A coordinator cannot start without its Redis: bad usage too (exit 2). */
const DISTRIBUTED_USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([...USAGE_ERRORS, "ERR_FLEET_UNAVAILABLE"]);

/** A distributed run's coordination: where its generators meet and how it treats them. */
interface DistributedRun {
  fleet: FleetSettings;
  /** How many generators the run waits for. */
  generators: number;
  /** How long to wait for them to join. @default 30000 */
  generatorTimeoutMs?: number;
  /** A lost generator: the run goes on with the others, or stops. @default "continue" */
  onGeneratorLoss?: "continue" | "stop";
}

/**
 * A distributed run's coordinator (load-fleet/'s `runDistributedLoad`): runs `options` across the
 * generators of `run.fleet`, writes the merged report folder. Resolves with the merged report, or
 * throws as `runLoad` does (and ERR_LOAD_FLEET_* / ERR_FLEET_UNAVAILABLE before the start).
 */
export type DistributedLoad = (
  options: LoadOptions,
  run: DistributedRun,
) => Promise<{
  report: LoadReport;
  files: { dir: string } | undefined;
  thresholdsPassed: boolean;
  /** A lost generator stopped the run (exit 1). */
  stoppedByLoss: boolean;
  /** Printed after the summary: the per-generator breakdown. */
  summaryTail: string;
}>;

/** What `lifeline load` runs: the run's options, and what the command adds around the run. */
export interface LoadCommandRequest {
  options: LoadOptions;
  /** `--metrics-port` (B9): serve `/metrics` while the run lasts (not with `distributed`). */
  metricsPort?: number;
  /** `--generators` with `--fleet`: coordinate a distributed run instead of running the load here. */
  distributed?: DistributedRun;
}

/**
 * Runs `lifeline load`; resolves to the exit code. Never throws.
 * @param coordinate the coordinator of a distributed run, required with `request.distributed`.
 */
export async function runLoadCommand(request: LoadCommandRequest, coordinate?: DistributedLoad): Promise<number> {
  const { distributed } = request;
  const options: LoadOptions = { ...request.options };
  if (distributed !== undefined && coordinate === undefined) {
    return fail(
      new LifelineError("ERR_INVALID_OPTIONS", "--generators is not available in this program (no coordinator)."),
    );
  }
  let metrics: MetricsEndpoint | undefined;
  if (request.metricsPort !== undefined) {
    try {
      metrics = await startMetricsEndpoint({ port: request.metricsPort });
    } catch (error) {
      return fail(error);
    }
    options.telemetry = { meterProvider: metrics.meterProvider };
    process.stderr.write(`lifeline load: metrics at http://127.0.0.1:${metrics.port}/metrics\n`);
  }
  options.outDir ??= defaultOutDir(options.cwd ?? process.cwd(), new Date());
  const stop = new AbortController();
  options.signal = stop.signal;
  const tty = process.stderr.isTTY === true;
  const view = createProgressView(process.stderr, tty);
  // The first Ctrl+C (or SIGTERM) ends the run and writes a partial report; a second one leaves at once.
  let interruptCode = EXIT_INTERRUPTED;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      view.stop(); // gives the terminal its cursor back
      process.exit(interruptCode);
    }
    interruptCode = signal === "SIGTERM" ? EXIT_TERMINATED : EXIT_INTERRUPTED;
    // The bar ends its line first: text written under a live bar breaks its redraw.
    view.stop();
    process.stderr.write(
      "Stopping: aborting the prompts in flight, then writing a partial report (Ctrl+C again to quit now)…\n",
    );
    stop.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  options.onProgress = (progress) => view.update(progress);
  options.progressIntervalMs = tty ? 250 : 2000;
  process.stderr.write(`${banner(options, distributed)}\n`);
  try {
    const result =
      distributed === undefined || coordinate === undefined
        ? { ...(await runLoad(options)), stoppedByLoss: false, summaryTail: "" }
        : await coordinate(options, distributed);
    view.stop();
    process.stdout.write(
      formatSummary(result.report, result.files?.dir, { csv: options.csv === true }) + result.summaryTail,
    );
    if (result.report.status === "interrupted") return interruptCode;
    if (result.stoppedByLoss) return 1;
    return result.thresholdsPassed ? 0 : EXIT_THRESHOLD_FAILED;
  } catch (error) {
    view.stop();
    if (stop.signal.aborted && error instanceof LifelineError && error.code === "ERR_ABORTED") return interruptCode;
    return fail(error, distributed !== undefined);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await metrics?.close();
  }
}

function banner(options: LoadOptions, distributed: DistributedRun | undefined): string {
  const bound =
    describeOpenModel(options) ??
    [
      options.prompts === undefined ? undefined : `${options.prompts} prompts each`,
      options.durationMs === undefined ? undefined : `for ${options.durationMs / 1000} s`,
    ]
      .filter((part) => part !== undefined)
      .join(", or ");
  const faults = (options.faults ?? [])
    .map((f) => `${f.step}${f.retryAfterMs === undefined ? "" : `@${f.retryAfterMs}ms`}:${f.probability}`)
    .join(",");
  const target =
    options.model === undefined
      ? `the built-in mock${faults === "" ? "" : ` with faults ${faults} (seed ${options.seed ?? 0})`}`
      : options.model;
  const across = distributed === undefined ? "" : ` across ${distributed.generators} generators`;
  return `lifeline load: ${options.sessions} sessions${across}, ${bound}, against ${target}; report in ${options.outDir}`;
}

/** Writes the error to stderr; 2 for what the user must fix, else 1. */
function fail(error: unknown, distributed = false): number {
  return reportCliError(error, distributed ? DISTRIBUTED_USAGE_ERRORS : USAGE_ERRORS);
}
