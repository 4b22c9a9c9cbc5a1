/**
 * The runs of distributed load's commands: `lifeline load-agent` (a generator; load-agent.ts) and
 * the coordinator that `lifeline load --generators K` runs ({@link runDistributedLoad}, plugged
 * into load/load-command.ts by the CLI's runtime). Exit codes of `load-agent`: 0 after `--once`'s run, 130 / 143 after
 * Ctrl+C / SIGTERM (a run in progress is aborted and its partial final sent first), 2 bad usage
 * (no fleet, bad settings, credentials Redis refuses), 1 its Redis cannot be reached.
 */
import type { ErrorCode } from "../../shared/errors.js";
import { reportCliError } from "../config/cli-errors.js";
import type { DistributedLoad } from "../load/load-command.js";
import type { FleetLoadReport } from "./fleet-load-report.js";
import { type LoadAgentOptions, runLoadAgent } from "./load-agent.js";
import { runFleetLoad } from "./run-fleet-load.js";

const AGENT_USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "ERR_INVALID_SETTINGS",
  "ERR_INVALID_OPTIONS",
  "ERR_FLEET_AUTH",
]);

/**
 * The coordinator behind `lifeline load --fleet <url> --generators K` (load/load-command.ts runs
 * it). A key never travels through Redis: each generator resolves its own, so `options` carries
 * none (the CLI refuses `--api-key` with `--generators`).
 * @throws what `runFleetLoad` throws.
 */
export const runDistributedLoad: DistributedLoad = async (options, run) => {
  const result = await runFleetLoad(options, {
    fleet: run.fleet,
    generators: run.generators,
    ...(run.generatorTimeoutMs === undefined ? {} : { generatorTimeoutMs: run.generatorTimeoutMs }),
    ...(run.onGeneratorLoss === undefined ? {} : { onGeneratorLoss: run.onGeneratorLoss }),
    onNotice: (line) => process.stderr.write(`lifeline load: ${line}\n`),
  });
  return { ...result, summaryTail: formatGenerators(result.report) };
};

/** The per-generator lines printed after the summary table. */
function formatGenerators(report: FleetLoadReport): string {
  const lines = report.generators.map((g) => {
    const f = g.figures;
    const lost =
      g.lostAtMs === undefined
        ? ""
        : `, lost at ${(g.lostAtMs / 1000).toFixed(1)} s with ${g.inFlightPrompts ?? 0} prompts in flight`;
    return `  ${g.id} (${g.host}, pid ${g.pid}): ${g.status}${lost}; ${g.sessions} sessions, ${f.requests} requests, p50 ${f.e2eMs.p50 ?? "-"} ms, p99 ${f.e2eMs.p99 ?? "-"} ms (${f.source.replace("_", " ")})`;
  });
  return `Generators (run ${report.fleet.runId}, clock error ≤ ${report.fleet.clockErrorMs.toFixed(3)} ms):\n${lines.join("\n")}\n`;
}

/** What `lifeline load-agent` runs: a generator's options but those the command itself provides. */
export type LoadAgentCommandRequest = Omit<LoadAgentOptions, "signal" | "onReady" | "log">;

/**
 * Runs `lifeline load-agent` until `--once`'s run ends or a signal stops it; resolves to the exit
 * code (see the file comment). Never throws.
 */
export async function runLoadAgentCommand(request: LoadAgentCommandRequest): Promise<number> {
  const { fleet } = request;
  const stop = new AbortController();
  let exitCode = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) process.exit(exitCode);
    exitCode = signal === "SIGTERM" ? 143 : 130;
    process.stderr.write("lifeline load-agent: stopping (a run in progress sends its partial figures first)…\n");
    stop.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    await runLoadAgent({
      ...request,
      signal: stop.signal,
      onReady: (agent) =>
        process.stderr.write(
          `lifeline load-agent: joined fleet "${fleet.name}" as ${agent.id} (lifeline ${agent.version}, clock offset ${agent.clockOffsetMs.toFixed(1)} ± ${agent.clockErrorMs.toFixed(1)} ms); waiting for runs\n`,
        ),
      log: (line) => process.stderr.write(`lifeline load-agent: ${line}\n`),
    });
    return exitCode;
  } catch (error) {
    return reportCliError(error, AGENT_USAGE_ERRORS);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}
