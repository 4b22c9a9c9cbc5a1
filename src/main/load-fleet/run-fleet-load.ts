/**
 * `runFleetLoad()`: the coordinator of a distributed load run (`lifeline load --fleet <url>
 * --generators K`). Before anything starts it checks, and refuses with a typed error: the options
 * and their split (ERR_INVALID_OPTIONS), the fleet's Redis (ERR_FLEET_UNAVAILABLE), the fleet
 * name's run lock (ERR_LOAD_FLEET_BUSY), K idle generators within `generatorTimeoutMs`
 * (ERR_LOAD_FLEET_GENERATORS) and their lifeline version, report schema and wire
 * (ERR_LOAD_FLEET_MISMATCH). Then it hands each generator its share with one start instant on
 * Redis's clock, merges their snapshots into the live progress, watches their leases, and at the
 * end merges their final reports and records into one report folder (fleet-load-report.ts).
 *
 * A lost generator (lease lapsed: declared within the lease, 3 s, plus {@link LEASE_CHECK_MS} of
 * its last renewal) is reported through `onNotice` and in the report; with `onGeneratorLoss: "stop"`
 * the others are stopped too. Aborting `signal` stops every generator, waits up to
 * {@link STOP_WAIT_MS} for their partial finals, and writes the partial merged report.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { performance } from "node:perf_hooks";
import { LifelineError } from "../../shared/errors.js";
import { errorText } from "../../shared/failures/error-text.js";
import type { FleetSettings } from "../../shared/settings/settings.js";
import { withTimeout } from "../../shared/with-timeout.js";
import { lifelineVersion } from "../config/lifeline-version.js";
import type { LoadProgress } from "../load/metrics/load-metrics.js";
import { checkLoadOptions, type LoadOptions } from "../load/options/load-options.js";
import { REPORT_SCHEMA, thresholdFigures } from "../load/report/load-report.js";
import { type ReportFolderFiles, writeReportFolder } from "../load/report/report-files.js";
import { defaultOutDir } from "../load/run/run-load.js";
import { evaluateThresholds } from "../load/verdicts/thresholds.js";
import { connectFleet, type FleetConnection } from "../redis/fleet-connection.js";
import { listAgents } from "./agent-registry.js";
import { buildFleetReport, type FleetLoadReport } from "./fleet-load-report.js";
import { type AgentCommand, type AgentRegistration, LOAD_FLEET_PROTOCOL, loadKeys } from "./load-fleet-protocol.js";
import { measureClockOffset, redisNowMs } from "./redis-clock.js";
import { acquireRunLock } from "./run-lock.js";
import { RunWatch } from "./run-watch.js";
import { splitLoad } from "./split-load.js";

/** What a lost generator does to the run. */
export type GeneratorLossPolicy = "continue" | "stop";

/** The distributed side of {@link runFleetLoad}'s options. */
export interface FleetLoadOptions {
  /** The fleet (validated `fleet` settings): its Redis and name. */
  fleet: FleetSettings;
  /** Generators the run needs (`--generators`). */
  generators: number;
  /** How long to wait for them. @default 30000 */
  generatorTimeoutMs?: number;
  /** @default "continue": the others' figures are still worth having; the report says `degraded`. */
  onGeneratorLoss?: GeneratorLossPolicy;
  /** One line per event an operator should see (generators joined, one lost, stopping). */
  onNotice?: (line: string) => void;
}

/** What {@link runFleetLoad} resolves with. */
export interface FleetLoadResult {
  report: FleetLoadReport;
  files: ReportFolderFiles | undefined;
  thresholdsPassed: boolean;
  /** True when a lost generator stopped the run (`onGeneratorLoss: "stop"`). */
  stoppedByLoss: boolean;
}

/** Defaults of {@link FleetLoadOptions}. */
export const FLEET_LOAD_DEFAULTS = { generatorTimeoutMs: 30_000, onGeneratorLoss: "continue" } as const;

/**
 * Between the commands and the common start: time for every generator to read its command and
 * set its run up (its mock, its host's workers, its sessions) before the load begins.
 */
const START_LEAD_MS = 3000;
/** How often the coordinator looks at the generators' leases. */
const LEASE_CHECK_MS = 500;
/** Longest wait for the generators' finals after a stop. */
const STOP_WAIT_MS = 15_000;
/** A duration run's generators end by themselves; past this grace after the end they are stopped. */
const DURATION_GRACE_MS = 5000;
/** Longest the coordinator goes on without Redis mid-run before giving up (ERR_LOAD_FAILED). */
const REDIS_LOSS_LIMIT_MS = 30_000;
/** How long the run stream and commands outlive a run (a late generator's entries land in the void). */
const RUN_KEYS_TTL_MS = 60_000;

/**
 * Runs a distributed load test; see the file comment and docs/load.md ("Distributed runs").
 * `options` are runLoad's (`signal`, `onProgress`, `progressIntervalMs`, `outDir`, `csv` and
 * `thresholds` are the coordinator's; the rest is split among the generators).
 * @throws ERR_INVALID_OPTIONS, ERR_FLEET_UNAVAILABLE, ERR_INVALID_SETTINGS, ERR_LOAD_FLEET_BUSY,
 *   ERR_LOAD_FLEET_GENERATORS, ERR_LOAD_FLEET_MISMATCH before anything starts; ERR_ABORTED when
 *   `signal` aborts while waiting for generators; ERR_LOAD_FAILED when Redis stays away mid-run.
 */
export async function runFleetLoad(options: LoadOptions, fleet: FleetLoadOptions): Promise<FleetLoadResult> {
  const thresholds = checkLoadOptions(options);
  const shares = splitLoad(options, fleet.generators);
  const notice = fleet.onNotice ?? (() => {});
  const connection = await connectFleet(fleet.fleet);
  const keys = loadKeys((...parts) => connection.key(...parts));
  const runId = `${new Date().toISOString().replace(/[-:.]/g, "")}-${randomBytes(3).toString("hex")}`;
  const reader = connection.duplicate();
  try {
    const lock = await acquireRunLock(connection, {
      runId,
      host: hostname(),
      pid: process.pid,
      startedAt: new Date().toISOString(),
    });
    try {
      const agents = await waitForGenerators(connection, fleet, options.signal);
      notice(`${agents.length} generators joined: ${agents.map((a) => `${a.id}`).join(", ")}`);
      await withTimeout(reader.connect(), 3000, () => "the stream connection did not open within 3 s");
      const clock = await measureClockOffset(connection.redis);
      const startAtMs = Math.round(redisNowMs(clock)) + START_LEAD_MS;
      const watch = new RunWatch(
        connection,
        reader,
        keys.run(runId),
        runId,
        agents.map((agent, i) => ({ agent, share: shares[i] ?? { sessions: 0 } })),
      );
      const send = async (agent: AgentRegistration, command: AgentCommand) => {
        const list = keys.commands(agent.id);
        await connection.redis.multi().lpush(list, JSON.stringify(command)).pexpire(list, RUN_KEYS_TTL_MS).exec();
      };
      const cpuBefore = process.cpuUsage();
      const wallBefore = performance.now();
      for (const [index, agent] of agents.entries()) {
        const share = shares[index] ?? { sessions: 0 };
        await send(agent, {
          type: "run_start",
          runId,
          share: { index, generators: agents.length, startAtMs, options: share },
        });
      }
      const outcome = await drive(watch, {
        options,
        fleet,
        notice,
        now: () => redisNowMs(clock),
        startAtMs,
        stopAll: async (reason) => {
          for (const g of watch.active) await send(g.agent, { type: "run_stop", runId, reason }).catch(() => {});
        },
      });
      await connection.redis.pexpire(keys.run(runId), RUN_KEYS_TTL_MS).catch(() => {});
      const lost = watch.generators.some((g) => g.status !== "finished");
      const status = options.signal?.aborted === true ? "interrupted" : lost ? "degraded" : "completed";
      const { report, records } = buildFleetReport(watch.generators, {
        status,
        options,
        name: fleet.fleet.name,
        runId,
        onGeneratorLoss: fleet.onGeneratorLoss ?? FLEET_LOAD_DEFAULTS.onGeneratorLoss,
        plannedStartMs: startAtMs,
        nowMs: redisNowMs(clock),
        coordinatorCpuMs: cpuMs(process.cpuUsage(cpuBefore)),
        coordinatorWallMs: performance.now() - wallBefore,
      });
      report.thresholds = evaluateThresholds(thresholds, thresholdFigures(report));
      const files =
        options.outDir === false
          ? undefined
          : await writeReportFolder(
              options.outDir ?? defaultOutDir(options.cwd ?? process.cwd(), new Date(report.startedAt)),
              report,
              records,
              { csv: options.csv ?? false },
            );
      return {
        report,
        files,
        thresholdsPassed: report.thresholds.every((t) => t.passed),
        stoppedByLoss: outcome.stoppedByLoss,
      };
    } finally {
      await lock.release();
    }
  } finally {
    reader.disconnect();
    await connection.close();
  }
}

/** user + system CPU, ms. */
function cpuMs(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1000;
}

/**
 * Waits until `fleet.generators` idle generators have joined; the oldest are taken.
 * @throws ERR_LOAD_FLEET_MISMATCH as soon as a joined generator differs in version, schema or
 *   wire; ERR_LOAD_FLEET_GENERATORS at the timeout; ERR_ABORTED when `signal` aborts.
 */
async function waitForGenerators(
  connection: FleetConnection,
  fleet: FleetLoadOptions,
  signal: AbortSignal | undefined,
): Promise<AgentRegistration[]> {
  const timeoutMs = fleet.generatorTimeoutMs ?? FLEET_LOAD_DEFAULTS.generatorTimeoutMs;
  const deadline = Date.now() + timeoutMs;
  const version = lifelineVersion();
  for (;;) {
    const agents = await listAgents(connection);
    const odd = agents.filter(
      (a) => a.version !== version || a.schema !== REPORT_SCHEMA || a.protocol !== LOAD_FLEET_PROTOCOL,
    );
    if (odd.length > 0) {
      const named = odd.map(
        (a) => `${a.id} (host ${a.host}, pid ${a.pid}: lifeline ${a.version}, ${a.schema}, wire ${a.protocol})`,
      );
      throw new LifelineError(
        "ERR_LOAD_FLEET_MISMATCH",
        `Generators of another lifeline joined the fleet "${fleet.fleet.name}": ${named.join("; ")}. This coordinator is lifeline ${version}, ${REPORT_SCHEMA}, wire ${LOAD_FLEET_PROTOCOL}; run the same version on every machine.`,
      );
    }
    const idle = agents.filter((a) => a.state === "idle");
    if (idle.length >= fleet.generators) return idle.slice(0, fleet.generators);
    if (signal?.aborted === true) throw new LifelineError("ERR_ABORTED", "Interrupted while waiting for generators.");
    if (Date.now() >= deadline) {
      const busy = agents.length - idle.length;
      throw new LifelineError(
        "ERR_LOAD_FLEET_GENERATORS",
        `Only ${idle.length} of ${fleet.generators} generators joined the fleet "${fleet.fleet.name}" within ${timeoutMs / 1000} s${busy > 0 ? ` (${busy} more busy with another run)` : ""}. Start more with \`lifeline load-agent --fleet <url> --fleet-name ${fleet.fleet.name}\`, lower --generators, or raise --generator-timeout.`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

interface DriveContext {
  options: LoadOptions;
  fleet: FleetLoadOptions;
  notice: (line: string) => void;
  /** Now on Redis's clock. */
  now: () => number;
  startAtMs: number;
  stopAll: (reason: string) => Promise<void>;
}

/**
 * Reads the run until every generator has settled, or until the stop wait after a stop is over
 * (generators still silent then are marked lost).
 */
async function drive(watch: RunWatch, ctx: DriveContext): Promise<{ stoppedByLoss: boolean }> {
  const { options } = ctx;
  const policy = ctx.fleet.onGeneratorLoss ?? FLEET_LOAD_DEFAULTS.onGeneratorLoss;
  const plannedPrompts = options.prompts === undefined ? null : options.prompts * options.sessions;
  const progressEvery = options.progressIntervalMs ?? 1000;
  let stopDeadline: number | undefined;
  let stoppedByLoss = false;
  let lastLeaseCheck = 0;
  let lastProgress = 0;
  let redisLostSince: number | undefined;
  const stop = async (reason: string) => {
    if (stopDeadline !== undefined) return;
    stopDeadline = Date.now() + STOP_WAIT_MS;
    ctx.notice(`stopping every generator: ${reason}`);
    await ctx.stopAll(reason);
  };
  const endMs = options.durationMs === undefined ? undefined : ctx.startAtMs + options.durationMs + DURATION_GRACE_MS;
  const progress = (): LoadProgress =>
    watch.progress(Math.max(0, ctx.now() - ctx.startAtMs), plannedPrompts, options.durationMs ?? null);
  while (!watch.settled) {
    if (options.signal?.aborted === true) await stop("the coordinator was interrupted");
    if (endMs !== undefined && ctx.now() > endMs) await stop("the run's duration is over");
    if (stopDeadline !== undefined && Date.now() > stopDeadline) {
      for (const g of watch.active) {
        g.status = "lost";
        g.lostAtMs = ctx.now();
        g.inFlightPrompts = g.snapshot?.counters.inFlightPrompts ?? 0;
        ctx.notice(`generator ${g.agent.id} sent no final within ${STOP_WAIT_MS / 1000} s of the stop`);
      }
      break;
    }
    try {
      await watch.read(250);
      if (Date.now() - lastLeaseCheck >= LEASE_CHECK_MS) {
        lastLeaseCheck = Date.now();
        for (const g of await watch.checkLeases(ctx.now())) {
          // The instant itself, not ms since a start: the report counts `lostAtMs` from its
          // `startedAt` (the earliest generator's start), which is not known until the finals
          // come, and a figure from the planned start here would disagree with it.
          ctx.notice(
            `generator ${g.agent.id} (host ${g.agent.host}, pid ${g.agent.pid}) lost at ${new Date(Math.round(g.lostAtMs ?? 0)).toISOString()} (Redis's clock) with ${g.inFlightPrompts ?? 0} prompts in flight; its last snapshot is kept`,
          );
          if (policy === "stop" && watch.active.length > 0) {
            stoppedByLoss = true;
            await stop(`generator ${g.agent.id} was lost (--on-generator-loss stop)`);
          }
        }
      }
      redisLostSince = undefined;
    } catch (error) {
      if (error instanceof LifelineError) throw error;
      redisLostSince ??= Date.now();
      if (Date.now() - redisLostSince > REDIS_LOSS_LIMIT_MS) {
        throw new LifelineError(
          "ERR_LOAD_FAILED",
          `The coordinator lost the fleet's Redis for over ${REDIS_LOSS_LIMIT_MS / 1000} s: ${errorText(error)}.`,
          { cause: error },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    if (Date.now() - lastProgress >= progressEvery) {
      lastProgress = Date.now();
      options.onProgress?.(progress());
    }
  }
  options.onProgress?.(progress());
  return { stoppedByLoss };
}
