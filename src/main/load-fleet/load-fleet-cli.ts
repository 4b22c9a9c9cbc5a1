/**
 * The CLI of distributed load runs: `lifeline load-agent` (a generator; load-agent.ts) and the
 * coordinator that `lifeline load --generators K` runs ({@link runDistributedLoad}, plugged into
 * load/load-cli.ts by cli.ts). Exit codes of `load-agent`: 0 after `--once`'s run, 130 / 143 after
 * Ctrl+C / SIGTERM (a run in progress is aborted and its partial final sent first), 2 bad usage
 * (no fleet, bad settings), 1 its Redis cannot be reached.
 */
import type { Command } from "commander";
import { Option } from "commander";
import type { ErrorCode } from "../../shared/errors.js";
import { LifelineError } from "../../shared/errors.js";
import { parseSettings } from "../../shared/settings.js";
import { reportCliError } from "../config/cli-errors.js";
import { loadSettingsFiles, resolveLifelineDir } from "../config/settings-store.js";
import { type FleetFlags, fleetFromFlags } from "../fleet/fleet-flags.js";
import type { DistributedLoad } from "../load/load-cli.js";
import { parseDuration } from "../load/load-flags.js";
import type { FleetLoadReport } from "./fleet-load-report.js";
import { runLoadAgent } from "./load-agent.js";
import { type GeneratorLossPolicy, runFleetLoad } from "./run-fleet-load.js";

const AGENT_USAGE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["ERR_INVALID_SETTINGS", "ERR_INVALID_OPTIONS"]);

/**
 * The coordinator behind `lifeline load --fleet <url> --generators K` (see load-cli.ts).
 * @throws ERR_INVALID_OPTIONS for a bad --generators, --generator-timeout or --on-generator-loss,
 *   ERR_INVALID_SETTINGS for a bad fleet group, and what `runFleetLoad` throws.
 */
export const runDistributedLoad: DistributedLoad = async (options, fleetInput, flags) => {
  const generators = Number(flags.generators);
  if (!Number.isInteger(generators) || generators < 1 || generators > 1000) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `--generators must be a whole number from 1 to 1000, got "${flags.generators}".`,
    );
  }
  const fleet = parseSettings({ fleet: fleetInput }, "the command line (--fleet, --fleet-name)").fleet;
  if (options.apiKey !== undefined) {
    // A key never travels through Redis: each generator resolves its own.
    process.stderr.write(
      "lifeline load: --api-key (or LIFELINE_API_KEY) stays with the coordinator; each generator uses its own (its --api-key, LIFELINE_API_KEY, models.json or the provider's variable).\n",
    );
    delete options.apiKey;
  }
  if (fleet === undefined) throw new LifelineError("ERR_INVALID_OPTIONS", "--generators needs --fleet <redis-url>.");
  const result = await runFleetLoad(options, {
    fleet,
    generators,
    ...(flags.generatorTimeout === undefined
      ? {}
      : { generatorTimeoutMs: parseDuration("--generator-timeout", flags.generatorTimeout, 1) }),
    ...(flags.onGeneratorLoss === undefined ? {} : { onGeneratorLoss: flags.onGeneratorLoss as GeneratorLossPolicy }),
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

/** Adds `load-agent` to `program`; `fleetFlags` reads the global --fleet/--fleet-name and --worker-entry. */
export function addLoadAgentCommand(
  program: Command,
  setExitCode: (code: number) => void,
  globalFlags: () => FleetFlags & { workerEntry?: string; apiKey?: string },
): void {
  program
    .command("load-agent")
    .description("a generator of distributed load runs (needs --fleet): waits for `lifeline load --generators K` runs")
    .addOption(new Option("--once", "exit after one run"))
    .action(async (flags: { once?: boolean }) => {
      setExitCode(await loadAgent(flags.once === true, globalFlags()));
    });
}

async function loadAgent(
  once: boolean,
  global: FleetFlags & { workerEntry?: string; apiKey?: string },
): Promise<number> {
  const cwd = process.cwd();
  const lifelineDir = resolveLifelineDir();
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
    const input =
      (await fleetFromFlags(global, { lifelineDir, cwd })) ?? (await loadSettingsFiles(lifelineDir, cwd)).fleet;
    const fleet = parseSettings({ fleet: input }, "the command line and settings files").fleet;
    if (fleet === undefined) {
      throw new LifelineError(
        "ERR_INVALID_SETTINGS",
        "fleet.redis: lifeline load-agent needs --fleet redis://… (or fleet.redis in a settings file).",
      );
    }
    await runLoadAgent({
      fleet,
      once,
      cwd,
      signal: stop.signal,
      ...(global.workerEntry === undefined || global.workerEntry === "" ? {} : { workerEntry: global.workerEntry }),
      ...(global.apiKey === undefined || global.apiKey === "" ? {} : { apiKey: global.apiKey }),
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
