/**
 * The runs of `lifeline serve` and `lifeline submit` (docs/fleet.md), once their flags are
 * resolved (cli/commands/):
 *
 * - `serve` serves the fleet's queue until SIGTERM or SIGINT: it then takes no more jobs, finishes
 *   the running ones and exits 0; a second signal exits at once (130/143), and the running jobs
 *   go to other hosts after the stall interval, as after a crash. Exit 2 for bad usage or
 *   settings (a `--metrics-port` without the optional SDK included), 1 when its Redis cannot be
 *   reached.
 * - `submit` submits a prompt, prints its events as JSON lines on stdout while they come, then one
 *   `{"type":"result", …}` line (or `{"type":"error", "code", "message"}`); exit 0 answered, 1 the
 *   prompt failed or the fleet could not serve it, 2 bad usage or settings.
 */
import { hostname } from "node:os";
import { type ErrorCode, LifelineError } from "../../shared/errors.js";
import { isFailedStop } from "../../shared/failures/classify.js";
import { cliErrorText, reportCliError } from "../config/cli-errors.js";
import type { SessionHostOptions } from "../host/host-options.js";
import { type MetricsEndpoint, startMetricsEndpoint } from "../telemetry/metrics-endpoint.js";
import { FleetClient, type FleetClientOptions, type ResultOptions, type SubmitOptions } from "./fleet-client.js";
import { serveFleet } from "./serve-fleet.js";
import { SERVE_DEFAULTS, type ServeOptions } from "./serve-options.js";

/** Errors that mean "fix your command or configuration": exit 2. */
const USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "ERR_INVALID_OPTIONS",
  "ERR_INVALID_SETTINGS",
  "ERR_EXTENSION_LOAD",
  "ERR_INVALID_MODELS",
  "ERR_UNKNOWN_MODEL",
  "ERR_TELEMETRY_UNAVAILABLE",
  "ERR_FLEET_AUTH",
]);

/** What `lifeline serve` runs. */
export interface ServeCommandRequest {
  /** The host's options; its `settings.fleet` names the fleet. */
  host: SessionHostOptions;
  /** The fleet's name, for the banner and the metrics' resource. */
  fleetName: string;
  serve: ServeOptions;
  /** `--metrics-port` (B9): serve `/metrics` on this port while serving. */
  metricsPort?: number;
}

/** Runs `lifeline serve` until a signal ends it; resolves to the exit code. Never throws. */
export async function runServeCommand(request: ServeCommandRequest): Promise<number> {
  const hostOptions = { ...request.host };
  let server: Awaited<ReturnType<typeof serveFleet>>;
  let metrics: MetricsEndpoint | undefined;
  try {
    if (request.metricsPort !== undefined) {
      // B9: the host and its fleet are the resource's attributes, never a metric's.
      metrics = await startMetricsEndpoint({
        port: request.metricsPort,
        resource: { "service.instance.id": `${hostname()}/${process.pid}`, "lifeline.fleet.name": request.fleetName },
      });
      hostOptions.telemetry = { meterProvider: metrics.meterProvider };
      process.stderr.write(`lifeline serve: metrics at http://127.0.0.1:${metrics.port}/metrics\n`);
    }
    server = await serveFleet(hostOptions, request.serve);
  } catch (error) {
    await metrics?.close();
    return reportCliError(error, USAGE_ERRORS);
  }
  const concurrency = request.serve.concurrency ?? SERVE_DEFAULTS.concurrency;
  process.stderr.write(
    `lifeline serve: serving fleet "${request.fleetName}" (${concurrency} prompts at once); SIGTERM or Ctrl+C stops taking prompts and finishes the running ones.\n`,
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

/** What `lifeline submit` runs. */
export interface SubmitCommandRequest {
  /** The fleet's Redis, and how long connecting may take (`--wait-ms`: the same wait as the submit's). */
  client: FleetClientOptions;
  text: string;
  submit: SubmitOptions;
  result: ResultOptions;
  /** Print the prompt's events as they come (`--no-follow`: only the result). */
  follow: boolean;
}

/** Runs `lifeline submit`; resolves to the exit code. Never throws. */
export async function runSubmitCommand(request: SubmitCommandRequest): Promise<number> {
  let client: FleetClient;
  try {
    client = await FleetClient.connect(request.client);
  } catch (error) {
    return fail(error);
  }
  try {
    const handle = await client.submit(request.text, request.submit);
    const result = handle.result(request.result);
    if (request.follow) {
      // The events end with the job; a result that fails first (the timeout: the job goes on)
      // ends them, and is reported below rather than left unhandled while they are read.
      const failed = new AbortController();
      result.catch(() => failed.abort());
      for await (const event of handle.events({ signal: failed.signal })) {
        process.stdout.write(`${JSON.stringify(event)}\n`);
      }
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

/** Writes the error (a JSON line on stdout for scripts, and stderr); 2 for what the user must fix, else 1. */
function fail(error: unknown): number {
  const code = error instanceof LifelineError ? error.code : "ERR_RUN_FAILED";
  process.stdout.write(`${JSON.stringify({ type: "error", code, message: cliErrorText(error) })}\n`);
  return reportCliError(error, USAGE_ERRORS);
}
