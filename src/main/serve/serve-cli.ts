/**
 * `lifeline serve` and `lifeline submit` (docs/fleet.md):
 *
 *   lifeline serve --fleet redis://… [--fleet-name N] [--concurrency N] [--worker-module F]
 *       serves the fleet's queue until SIGTERM or SIGINT: it then takes no more jobs, finishes the
 *       running ones and exits 0; a second signal exits at once (130/143), and the running jobs
 *       go to other hosts after the stall interval, as after a crash.
 *   lifeline submit --fleet redis://… [--session ID (the program's own flag)] [--job-id ID] [--model M] [--wait-ms N]
 *                   [--timeout MS] "text"
 *       submits a prompt, prints its events as JSON lines on stdout while they come, then one
 *       `{"type":"result", …}` line (or `{"type":"error", "code", "message"}`); exit 0 answered,
 *       1 the prompt failed or the fleet could not serve it, 2 bad usage or settings.
 */
import { hostname } from "node:os";
import { resolve } from "node:path";
import { type Command, Option } from "commander";
import { isFailedStop } from "../../shared/classify.js";
import { errorText } from "../../shared/error-text.js";
import { type ErrorCode, LifelineError } from "../../shared/errors.js";
import { parseSettings } from "../../shared/settings.js";
import { reportCliError } from "../config/cli-errors.js";
import { loadSettingsFiles, resolveLifelineDir } from "../config/settings-store.js";
import { type FleetFlags, fleetFromFlags } from "../fleet/fleet-flags.js";
import type { SessionHostOptions } from "../host/host-options.js";
import { type MetricsEndpoint, parseMetricsPort, startMetricsEndpoint } from "../telemetry/metrics-endpoint.js";
import { FleetClient } from "./fleet-client.js";
import { SERVE_DEFAULTS, serveFleet } from "./serve-fleet.js";

/** Errors that mean "fix your command or configuration": exit 2. */
const USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "ERR_INVALID_OPTIONS",
  "ERR_INVALID_SETTINGS",
  "ERR_EXTENSION_LOAD",
]);

/** What the commands need of the program: its host options (global flags) and where exit codes go. */
export interface FleetCommandsContext {
  /** The host options of the global flags (--fleet, --worker-entry, -e, …), or an exit code. */
  hostOptions(): Promise<SessionHostOptions | number>;
  /** The global flags, for `submit`'s fleet and a new session's `--model`. */
  globalFlags(): FleetFlags & { model?: string; session?: string | boolean };
  setExitCode(code: number): void;
}

/** Adds `serve` and `submit` to `program`. */
export function addFleetCommands(program: Command, context: FleetCommandsContext): void {
  program
    .command("serve")
    .description("serve the fleet's queue of prompts (needs --fleet or fleet.redis): run them in this host's workers")
    .addOption(
      new Option("--concurrency <n>", `prompt jobs run at once by this host (default ${SERVE_DEFAULTS.concurrency})`),
    )
    .addOption(new Option("--worker-module <file>", "a worker module giving every session its tools (setup())"))
    .addOption(
      new Option(
        "--metrics-port <n>",
        "serve OpenTelemetry metrics for Prometheus at http://<host>:<n>/metrics (needs the optional SDK packages)",
      ),
    )
    .action(async (flags: ServeFlags) => {
      context.setExitCode(await serve(flags, context));
    });
  program
    .command("submit")
    .description("submit a prompt to the fleet's queue; print its events as JSON lines, then its result")
    .argument("<text>", "the prompt")
    .addOption(
      new Option("--job-id <id>", "the job's id: a re-submit with the same id adds nothing and gets the same result"),
    )
    .addOption(new Option("--wait-ms <ms>", "while Redis is away, keep trying this long (default 0: fail at once)"))
    .addOption(new Option("--timeout <ms>", "longest wait for the result (default 600000)"))
    .addOption(new Option("--no-follow", "print only the result, not the events"))
    .action(async (text: string, flags: SubmitFlags) => {
      context.setExitCode(await submit(text, flags, context));
    });
}

interface ServeFlags {
  concurrency?: string;
  workerModule?: string;
  metricsPort?: string;
}

async function serve(flags: ServeFlags, context: FleetCommandsContext): Promise<number> {
  const concurrency = flags.concurrency === undefined ? undefined : Number(flags.concurrency);
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) {
    process.stderr.write(`Error: --concurrency must be a whole number of 1 or more, got "${flags.concurrency}".\n`);
    return 2;
  }
  const hostOptions = await context.hostOptions();
  if (typeof hostOptions === "number") return hostOptions;
  let server: Awaited<ReturnType<typeof serveFleet>>;
  let metrics: MetricsEndpoint | undefined;
  try {
    if (flags.metricsPort !== undefined) {
      // B9: the host and its fleet are the resource's attributes, never a metric's.
      const fleet = await fleetSettings(context.globalFlags());
      metrics = await startMetricsEndpoint({
        port: parseMetricsPort(flags.metricsPort),
        resource: { "service.instance.id": `${hostname()}/${process.pid}`, "lifeline.fleet.name": fleet.name },
      });
      hostOptions.telemetry = { meterProvider: metrics.meterProvider };
      process.stderr.write(`lifeline serve: metrics at http://127.0.0.1:${metrics.port}/metrics\n`);
    }
    server = await serveFleet(hostOptions, {
      ...(concurrency === undefined ? {} : { concurrency }),
      ...(flags.workerModule === undefined ? {} : { session: { workerModule: resolve(flags.workerModule) } }),
    });
  } catch (error) {
    await metrics?.close();
    return fail(error);
  }
  const settings = await server.host.settings();
  process.stderr.write(
    `lifeline serve: serving fleet "${settings.fleet?.name}" (${concurrency ?? SERVE_DEFAULTS.concurrency} prompts at once); SIGTERM or Ctrl+C stops taking prompts and finishes the running ones.\n`,
  );
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  // A second signal leaves at once: the running jobs stall and other hosts take them over.
  const again = (code: number) => () => process.exit(code);
  process.once("SIGINT", again(130));
  process.once("SIGTERM", again(143));
  process.stderr.write(`lifeline serve: ${signal}: finishing the running prompts…\n`);
  await server.close();
  await metrics?.close();
  return 0;
}

interface SubmitFlags {
  jobId?: string;
  waitMs?: string;
  timeout?: string;
  follow: boolean;
}

async function submit(text: string, flags: SubmitFlags, context: FleetCommandsContext): Promise<number> {
  const global = context.globalFlags();
  let client: FleetClient;
  try {
    const fleet = await fleetSettings(global);
    client = await FleetClient.connect({ fleet });
  } catch (error) {
    return fail(error);
  }
  // --session is the program's own option (pi's), read after the subcommand too.
  const session = typeof global.session === "string" ? global.session : undefined;
  try {
    const handle = await client.submit(text, {
      ...(session === undefined ? {} : { sessionId: session }),
      ...(flags.jobId === undefined ? {} : { jobId: flags.jobId }),
      ...(global.model === undefined ? {} : { model: global.model }),
      ...(flags.waitMs === undefined ? {} : { waitMs: Number(flags.waitMs) }),
    });
    const result = handle.result(flags.timeout === undefined ? {} : { timeoutMs: Number(flags.timeout) });
    if (flags.follow) {
      for await (const event of handle.events()) process.stdout.write(`${JSON.stringify(event)}\n`);
    }
    const outcome = await result;
    process.stdout.write(`${JSON.stringify({ type: "result", ...outcome })}\n`);
    return isFailedStop(outcome.stopReason) ? 1 : 0;
  } catch (error) {
    return fail(error);
  } finally {
    await client.close();
  }
}

/** The fleet group from the flags over the settings files, defaults applied. */
async function fleetSettings(flags: FleetFlags) {
  const cwd = process.cwd();
  const source = { lifelineDir: resolveLifelineDir(), cwd };
  const fleet = (await fleetFromFlags(flags, source)) ?? (await loadSettingsFiles(source.lifelineDir, cwd)).fleet;
  const parsed = parseSettings({ fleet }, "the command line and settings files").fleet;
  if (parsed === undefined) {
    throw new LifelineError(
      "ERR_INVALID_SETTINGS",
      "fleet.redis: lifeline submit needs a fleet; give --fleet redis://… or set fleet.redis in a settings file.",
    );
  }
  return parsed;
}

/** Writes the error (stderr, and a JSON line on stdout for scripts); 2 for what the user must fix, else 1. */
function fail(error: unknown): number {
  const code = error instanceof LifelineError ? error.code : "ERR_RUN_FAILED";
  process.stdout.write(`${JSON.stringify({ type: "error", code, message: errorText(error) })}\n`);
  return reportCliError(error, USAGE_ERRORS);
}
