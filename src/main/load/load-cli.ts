/**
 * `lifeline load`: the subcommand's flags (commander) and its run: flags → options, live
 * progress on stderr, the summary on stdout, the report folder, and the exit code:
 * 0 the run completed (whatever the prompts' outcomes), 99 a threshold failed, 2 bad usage,
 * 1 the run could not complete, 130 interrupted by Ctrl+C (143 by SIGTERM); a partial report is
 * still written then. Its `merge` subcommand is merge-cli.ts's.
 *
 * With `--generators K` (and `--fleet`) this process is the coordinator of a distributed run: the
 * run itself is the {@link DistributedLoad} that cli.ts plugs in (load-fleet/ sits above this
 * layer); the flags, the progress view, the summary and the exit codes stay the ones here. Its
 * refusals before the start (no Redis, the fleet's run lock held, too few generators, generators
 * of another version) exit 2 too.
 */
import { type Command, Option } from "commander";
import { type ErrorCode, LifelineError } from "../../shared/errors.js";
import type { SettingsInput } from "../../shared/settings.js";
import { reportCliError } from "../config/cli-errors.js";
import { resolveLifelineDir } from "../config/settings-store.js";
import { type FleetFlags, fleetFromFlags } from "../fleet/fleet-flags.js";
import { type MetricsEndpoint, parseMetricsPort, startMetricsEndpoint } from "../telemetry/metrics-endpoint.js";
import { addCompareCommand } from "./compare-cli.js";
import { type LoadFlags, loadOptionsFromFlags } from "./load-flags.js";
import type { LoadOptions } from "./load-options.js";
import type { LoadReport } from "./load-report.js";
import { addMergeCommand } from "./merge-cli.js";
import { describeOpenModel } from "./open-summary.js";
import { createProgressView } from "./progress.js";
import { defaultOutDir, runLoad } from "./run-load.js";
import { formatSummary } from "./summary-table.js";

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
]);

/** A coordinator cannot start without its Redis: bad usage too (exit 2), as the issue asks. */
const DISTRIBUTED_USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([...USAGE_ERRORS, "ERR_FLEET_UNAVAILABLE"]);

/** The flags of a distributed run, as commander parses them (load-fleet/ reads them). */
interface DistributedFlags {
  generators: string;
  generatorTimeout?: string;
  onGeneratorLoss?: string;
}

/**
 * A distributed run's coordinator (load-fleet/'s `runDistributedLoad`): runs `options` across the
 * generators of `fleet`, writes the merged report folder. Resolves with the merged report, or
 * throws as `runLoad` does (and ERR_LOAD_FLEET_* / ERR_FLEET_UNAVAILABLE before the start).
 */
export type DistributedLoad = (
  options: LoadOptions,
  fleet: NonNullable<SettingsInput["fleet"]>,
  flags: DistributedFlags,
) => Promise<{
  report: LoadReport;
  files: { dir: string } | undefined;
  thresholdsPassed: boolean;
  /** A lost generator stopped the run (exit 1). */
  stoppedByLoss: boolean;
  /** Printed after the summary: the per-generator breakdown. */
  summaryTail: string;
}>;

/**
 * Adds `load` to `program`; the action reports its exit code through `setExitCode`.
 * `program`'s own `--model`, `--api-key`, `--worker-entry`, `--fleet` and `--fleet-name` are
 * recognised after the subcommand too (commander's default), so they reach `load` through
 * `program.opts()`.
 */
export function addLoadCommand(
  program: Command,
  setExitCode: (code: number) => void,
  distributed?: DistributedLoad,
): void {
  const load = program
    .command("load")
    .description("load-test: N concurrent sessions × M prompts against the built-in mock server or a real model")
    .addOption(new Option("--sessions <n>", "concurrent sessions (required)"))
    .addOption(new Option("--prompts <n>", "prompts each session sends"))
    .addOption(new Option("--duration <time>", "run for this long, e.g. 60s; with --prompts, whichever ends first"))
    .addOption(
      new Option(
        "--model <provider/id>",
        "a real model, resolved through models.json and env keys (default: the built-in mock)",
      ),
    )
    .addOption(new Option("--api-key <key>", "API key for --model's provider").env("LIFELINE_API_KEY"))
    .addOption(
      new Option("--faults <list>", "mock faults with probabilities, e.g. 503:0.1,429:0.05,reset:0.02,stall:0.01"),
    )
    .addOption(new Option("--seed <n>", "seed of the mock's fault PRNG (default 0)"))
    .addOption(
      new Option(
        "--threshold <expr>",
        'fail (exit 99) unless it holds, e.g. "p99_latency_ms<8000"; repeatable',
      ).argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]),
    )
    .addOption(
      new Option(
        "--slo <spec>",
        'service-level objective per request, prompt and session, e.g. "ttft<=500ms,itl<=50ms,e2e<=10s"',
      ),
    )
    .addOption(new Option("--out <dir>", "report folder (default ./lifeline-load-<timestamp>)"))
    .addOption(new Option("--csv", "also write records.csv and summary.csv into the report folder"))
    .addOption(new Option("--ramp-up <time>", "start the sessions spread evenly over this time (default 0s)"))
    .addOption(new Option("--concurrency <n>", "most prompts in flight at once (default: --sessions)"))
    .addOption(
      new Option(
        "--prompts-file <file>",
        'JSONL: {"prompt": "…"} lines used round-robin, or {"turns": ["…", …]} lines, one conversation per session',
      ),
    )
    .addOption(new Option("--think-time <time>", "pause of a session between its prompts (default 0s)"))
    .addOption(new Option("--threads <n>", "worker threads of the host"))
    .addOption(
      new Option("--retry-budget <spec>", "retry.budget: off, on, or ratio[,minPerSecond[,window]] e.g. 0.2,10,10s"),
    )
    .addOption(new Option("--coordinate", "retry.coordinate: one provider gate for all sessions"))
    .addOption(new Option("--no-coordinate", "retry.coordinate off"))
    .addOption(new Option("--max-concurrent <n>", "retry.maxConcurrentRequests per provider"))
    .addOption(
      new Option(
        "--idle-timeout <time>",
        "retry.provider.idleTimeoutMs: a stream silent this long fails and is retried (mock default: max(5s, 50 × token delay))",
      ),
    )
    .addOption(new Option("--mock-tokens <n>", "word tokens of each mock answer (default 32)"))
    .addOption(new Option("--mock-token-delay <time>", "pause between the mock's tokens (default 5ms)"))
    .addOption(
      new Option(
        "--mock-rate-limit <n/time>",
        "the mock answers at most n requests per window (e.g. 50/1s), the others a 429 with the time left",
      ),
    )
    .addOption(new Option("--rate <r>", "open model: new conversations per second, e.g. 50/s (with --duration)"))
    .addOption(
      new Option("--stage <time:rate>", "open model: ramp to a rate over a time, e.g. 30s:10/s; repeatable").argParser(
        (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
      ),
    )
    .addOption(new Option("--arrival <process>", "open model: constant (default) or poisson (seeded by --seed)"))
    .addOption(new Option("--on-cap <what>", "open model: an arrival over --sessions open: drop (default) or delay"))
    .addOption(new Option("--sweep [k]", "baseline, throughput probe, then k rates between (default 5)"))
    .addOption(new Option("--sweep-step <time>", "length of each sweep step (default 20s)"))
    .addOption(
      new Option(
        "--tool-calls <p[:calls]>",
        "the mock answers a turn with tool calls of load_tool with probability p, calls per answer (default 1), e.g. 0.3:2",
      ),
    )
    .addOption(new Option("--tool-turns <n>", "most tool-call answers per prompt (default 1)"))
    .addOption(new Option("--tool-latency <time>", "each load_tool call waits this long in its worker (default 0ms)"))
    .addOption(new Option("--tool-cpu <time>", "each load_tool call keeps its worker busy this long (default 0ms)"))
    .addOption(new Option("--tool-failure <p>", "probability that a load_tool call fails, seeded (default 0)"))
    .addOption(
      new Option(
        "--metrics-port <n>",
        "serve OpenTelemetry metrics for Prometheus at http://<host>:<n>/metrics while the run lasts (needs the optional SDK packages)",
      ),
    )
    .addOption(
      new Option(
        "--generators <k>",
        "with --fleet: coordinate a distributed run over K `lifeline load-agent` generators (docs/load.md)",
      ),
    )
    .addOption(new Option("--generator-timeout <time>", "how long to wait for the generators to join (default 30s)"))
    .addOption(
      new Option(
        "--on-generator-loss <policy>",
        "a lost generator: continue with the others, or stop them all",
      ).choices(["continue", "stop"]),
    )
    .action(async (flags: LoadFlags & Partial<DistributedFlags>) => {
      const global = program.opts<{ model?: string; apiKey?: string; workerEntry?: string } & FleetFlags>();
      const merged: LoadFlags = { ...flags };
      if (merged.model === undefined && global.model !== undefined) merged.model = global.model;
      if (merged.apiKey === undefined && global.apiKey !== undefined) merged.apiKey = global.apiKey;
      setExitCode(await runLoadCommand(merged, global.workerEntry, global, distributedOf(flags, distributed)));
    });
  addMergeCommand(load, setExitCode);
  // `lifeline load compare A B` (compare-cli.ts).
  addCompareCommand(load, setExitCode);
}

/** The coordinator and its flags when `--generators` is given. */
interface Distributed {
  run: DistributedLoad;
  flags: DistributedFlags;
}

function distributedOf(
  flags: Partial<DistributedFlags>,
  run: DistributedLoad | undefined,
): Distributed | "unsupported" | undefined {
  if (flags.generators === undefined) return undefined;
  if (run === undefined) return "unsupported";
  const picked: DistributedFlags = { generators: flags.generators };
  if (flags.generatorTimeout !== undefined) picked.generatorTimeout = flags.generatorTimeout;
  if (flags.onGeneratorLoss !== undefined) picked.onGeneratorLoss = flags.onGeneratorLoss;
  return { run, flags: picked };
}

/** Runs `lifeline load` with parsed flags; resolves to the exit code. Never throws. */
async function runLoadCommand(
  flags: LoadFlags,
  workerEntry: string | undefined,
  fleetFlags: FleetFlags,
  distributed: Distributed | "unsupported" | undefined,
): Promise<number> {
  const cwd = process.cwd();
  let options: LoadOptions;
  let fleet: NonNullable<SettingsInput["fleet"]> | undefined;
  try {
    options = await loadOptionsFromFlags(flags, cwd);
    // --fleet/--fleet-name: the load host joins the fleet (fleet/fleet-flags.ts).
    fleet = await fleetFromFlags(fleetFlags, { lifelineDir: options.lifelineDir ?? resolveLifelineDir(), cwd });
    if (distributed !== undefined) checkDistributed(distributed, fleet, flags);
    else if (fleet !== undefined) options.settings = { ...options.settings, fleet };
  } catch (error) {
    return fail(error);
  }
  let metrics: MetricsEndpoint | undefined;
  if (flags.metricsPort !== undefined) {
    try {
      metrics = await startMetricsEndpoint({ port: parseMetricsPort(flags.metricsPort) });
    } catch (error) {
      return fail(error);
    }
    options.telemetry = { meterProvider: metrics.meterProvider };
    process.stderr.write(`lifeline load: metrics at http://127.0.0.1:${metrics.port}/metrics\n`);
  }
  options.outDir ??= defaultOutDir(cwd, new Date());
  if (workerEntry !== undefined && workerEntry !== "") options.workerEntry = workerEntry;
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
  process.stderr.write(`${banner(options, typeof distributed === "object" ? distributed : undefined)}\n`);
  try {
    const result =
      distributed === undefined || distributed === "unsupported" || fleet === undefined
        ? { ...(await runLoad(options)), stoppedByLoss: false, summaryTail: "" }
        : await distributed.run(options, fleet, distributed.flags);
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

/**
 * Refuses what a distributed run cannot take.
 * @throws ERR_INVALID_OPTIONS naming the flag.
 */
function checkDistributed(
  distributed: Distributed | "unsupported",
  fleet: NonNullable<SettingsInput["fleet"]> | undefined,
  flags: LoadFlags,
): void {
  const refuse = (message: string): never => {
    throw new LifelineError("ERR_INVALID_OPTIONS", message);
  };
  if (distributed === "unsupported") refuse("--generators is not available in this program (no coordinator).");
  if (fleet === undefined) refuse("--generators needs --fleet <redis-url>: the generators meet on the fleet's Redis.");
  if (flags.metricsPort !== undefined) {
    refuse("--metrics-port is not available with --generators: the coordinator runs no sessions.");
  }
}

function banner(options: LoadOptions, distributed?: Distributed): string {
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
  const across = distributed === undefined ? "" : ` across ${distributed.flags.generators} generators`;
  return `lifeline load: ${options.sessions} sessions${across}, ${bound}, against ${target}; report in ${options.outDir}`;
}

/** Writes the error to stderr; 2 for what the user must fix, else 1. */
function fail(error: unknown, distributed = false): number {
  return reportCliError(error, distributed ? DISTRIBUTED_USAGE_ERRORS : USAGE_ERRORS);
}
