/**
 * report.json of a distributed run: the generators' final reports merged as `lifeline load merge`
 * merges reports (load/merge/report-merge.ts: counters add up, distributions merge through their
 * sketches, rates are recomputed, timelines merge by interval), each first moved onto Redis's
 * clock, plus what only a distributed run has: `fleet` (the run, its clock and its Redis traffic) and `generators`, the
 * per-generator breakdown. Also the merged records: every generator's records.jsonl lines, each
 * with a `generator` field and its `startMs` moved onto the run's common clock.
 */

import { type MergeInfo, type MergeInput, mergeLoadReports } from "../load/merge/report-merge.js";
import { LoadMetrics } from "../load/metrics/load-metrics.js";
import { Sketch, type SketchJson } from "../load/metrics/sketch.js";
import { round3, summarizeSketch } from "../load/metrics/stats.js";
import { LOAD_DEFAULTS, type LoadOptions } from "../load/options/load-options.js";
import type { ArrivalOptions } from "../load/options/open-options.js";
import { buildReport, type LoadReport } from "../load/report/load-report.js";
import { reportConfig } from "../load/report/report-config.js";
import type { RunEntry } from "./load-fleet-protocol.js";
import type { GeneratorState, GeneratorStatus } from "./run-watch.js";

type Entry<T extends RunEntry["type"]> = Extract<RunEntry, { type: T }>;

/** A generator's figures: from its final report, else its last snapshot (`source`). */
export interface GeneratorFigures {
  source: "final" | "last_snapshot" | "none";
  promptsSent: number;
  promptsSucceeded: number;
  promptsFailed: number;
  promptsCancelled: number;
  requests: number;
  failedRequests: number;
  retries: number;
  outputTokens: number;
  /** End-to-end latency of its requests that succeeded (from its sketch). */
  e2eMs: { count: number; p50: number | null; p90: number | null; p99: number | null };
}

/** One entry of report.json `generators`. */
export interface GeneratorSummary {
  id: string;
  host: string;
  pid: number;
  /** 0-based position in the run; its mock's seed is the run's seed + index. */
  index: number;
  sessions: number;
  seed: number;
  /**
   * The open model: its share of the schedule as it played it (every rate ÷ k, its phase i ÷ k;
   * split-load.ts). Absent in the closed model.
   */
  arrival?: ArrivalOptions;
  /** `finished` (its final report came), `failed` (its run threw: `error`), `lost` (its lease lapsed). */
  status: Exclude<GeneratorStatus, "starting" | "running"> | "unresponsive";
  error?: { code: string; message: string };
  /**
   * When it was declared lost, ms since the report's `startedAt` (the earliest generator's start,
   * the clock of the merged records and timeline; 0 if it was lost before that), and its prompts
   * in flight at its last snapshot. The coordinator's notice at the time prints the same instant.
   */
  lostAtMs?: number;
  inFlightPrompts?: number;
  /** Its clock's offset to Redis's and the estimate's error bound, ms. */
  clockOffsetMs: number;
  clockErrorMs: number;
  /** What it sent to the run's stream: snapshot entries and bytes, and records + final bytes. */
  traffic: { snapshots: number; snapshotBytes: number; finalBytes: number };
  figures: GeneratorFigures;
}

/** report.json of a distributed run. */
export interface FleetLoadReport extends LoadReport {
  fleet: {
    name: string;
    runId: string;
    /** `--generators`. */
    generators: number;
    onGeneratorLoss: "continue" | "stop";
    /** The largest clock-offset error bound among the generators, ms: the timelines' alignment error. */
    clockErrorMs: number;
    /** Snapshot bytes per second, averaged over the generators and the run. */
    snapshotBytesPerSecondPerGenerator: number;
    /**
     * The coordinator's own CPU (user + system) from the start command to the merged report, ms,
     * and as a share of one core over that time: what bounds how many generators it can serve.
     */
    coordinatorCpuMs: number;
    coordinatorCpuPercent: number;
  };
  generators: GeneratorSummary[];
  /** With two finals or more: where the merge came from (load/merge/report-merge.ts; `source` is a generator's id). */
  merged?: MergeInfo;
}

/** What {@link buildFleetReport} needs besides the generators. */
export interface FleetReportInput {
  status: LoadReport["status"];
  options: LoadOptions;
  name: string;
  runId: string;
  onGeneratorLoss: "continue" | "stop";
  /** The coordinator's CPU and wall time over the run, ms (`process.cpuUsage`, `performance.now`). */
  coordinatorCpuMs: number;
  coordinatorWallMs: number;
  /** The planned common start, and now, ms on Redis's clock. */
  plannedStartMs: number;
  nowMs: number;
}

/**
 * The merged report (thresholds not yet evaluated) and the merged records.
 * @throws ERR_LOAD_REPORT when a generator's report lacks a readable sketch.
 */
export function buildFleetReport(
  generators: readonly GeneratorState[],
  input: FleetReportInput,
): { report: FleetLoadReport; records: object[] } {
  const finals = generators.flatMap((g) => (g.final === undefined ? [] : [{ g, final: g.final }]));
  const runStartMs =
    finals.length === 0 ? input.plannedStartMs : Math.min(...finals.map(({ final }) => final.startedAtMs));
  // The generators' hosts joined the fleet; its URL (maybe with a password) stays out of the report.
  const { fleet: _fleet, ...settings } = finals[0]?.final.report.config.settings ?? input.options.settings ?? {};
  const config = reportConfig(input.options, settings);
  const merged = mergeFinals(
    finals.map(({ g, final }) => ({ source: g.agent.id, report: onRedisClock(final), records: final.chunks })),
    input,
    config,
  );
  const seconds = Math.max(0.001, merged.durationMs / 1000);
  const summaries = generators.map((g) => generatorSummary(g, runStartMs));
  const totalSnapshotBytes = summaries.reduce((t, s) => t + s.traffic.snapshotBytes, 0);
  const report: FleetLoadReport = {
    ...merged,
    status: input.status,
    config,
    fleet: {
      name: input.name,
      runId: input.runId,
      generators: generators.length,
      onGeneratorLoss: input.onGeneratorLoss,
      clockErrorMs: Math.max(0, ...generators.map((g) => g.agent.clockErrorMs)),
      snapshotBytesPerSecondPerGenerator: Math.round(totalSnapshotBytes / Math.max(1, generators.length) / seconds),
      coordinatorCpuMs: Math.round(input.coordinatorCpuMs),
      coordinatorCpuPercent:
        input.coordinatorWallMs > 0 ? round3((100 * input.coordinatorCpuMs) / input.coordinatorWallMs) : 0,
    },
    generators: summaries,
  };
  const records: object[] = [];
  for (const { g, final } of finals) {
    const shift = final.startedAtMs - runStartMs;
    for (const chunk of g.records) {
      for (const line of chunk.split("\n")) {
        if (line === "") continue;
        const record = JSON.parse(line) as { startMs: number };
        records.push({ ...record, startMs: round3(record.startMs + shift), generator: g.agent.id });
      }
    }
  }
  records.sort((a, b) => (a as { startMs: number }).startMs - (b as { startMs: number }).startMs);
  return { report, records };
}

/**
 * A generator's final report with its times on Redis's clock: `startedAt` and `endedAt` moved by
 * the generator's offset, so that the merge lines the timelines up by interval on one clock.
 */
export function onRedisClock(final: Pick<Entry<"run_final">, "report" | "startedAtMs">): LoadReport {
  const offsetMs = final.startedAtMs - Date.parse(final.report.startedAt);
  return {
    ...final.report,
    startedAt: new Date(final.startedAtMs).toISOString(),
    endedAt: new Date(Date.parse(final.report.endedAt) + offsetMs).toISOString(),
  };
}

/**
 * The generators' finals merged by load/merge/report-merge.ts (two or more), the one final as it is,
 * or, with none, a report of nothing from the run's planned start to now.
 */
function mergeFinals(parts: MergeInput[], input: FleetReportInput, config: LoadReport["config"]): LoadReport {
  if (parts.length >= 2) {
    // report-merge.ts refuses two parts with the same start, end and duration as one run given
    // twice; two generators of one run can start and end in the same millisecond. Such a part
    // gets its end 1 ms later (the merged end moves by at most that).
    const seen = new Set<string>();
    for (const part of parts) {
      let key = `${part.report.startedAt} ${part.report.endedAt} ${part.report.durationMs}`;
      while (seen.has(key)) {
        part.report = { ...part.report, endedAt: new Date(Date.parse(part.report.endedAt) + 1).toISOString() };
        key = `${part.report.startedAt} ${part.report.endedAt} ${part.report.durationMs}`;
      }
      seen.add(key);
    }
    // force: the generators' configurations differ by design (seed, sessions); any other
    // difference is named in `merged.configDifferences`.
    return mergeLoadReports(parts, { force: true });
  }
  const [only] = parts;
  if (only !== undefined) return only.report;
  const intervalMs = input.options.sampleIntervalMs ?? LOAD_DEFAULTS.sampleIntervalMs;
  return buildReport({
    status: input.status,
    startedAt: new Date(input.plannedStartMs),
    endedAt: new Date(Math.max(input.plannedStartMs, input.nowMs)),
    durationMs: Math.max(0, input.nowMs - input.plannedStartMs),
    config,
    counters: new LoadMetrics(() => 0).counters,
    requests: [],
    prompts: [],
    timeline: { intervalMs, points: [] },
    loopDelayMs: { mean: 0, p50: 0, p99: 0, max: 0 },
    watchdogTerminations: 0,
    thresholds: [],
    mock: null,
    tools: { toolCalls: 0, toolFailures: 0, toolLatenciesMs: [] },
  });
}

function generatorSummary(g: GeneratorState, runStartMs: number): GeneratorSummary {
  const summary: GeneratorSummary = {
    id: g.agent.id,
    host: g.agent.host,
    pid: g.agent.pid,
    index: g.index,
    sessions: g.share.sessions,
    seed: g.share.seed ?? 0,
    status: g.status === "starting" || g.status === "running" ? "unresponsive" : g.status,
    clockOffsetMs: g.agent.clockOffsetMs,
    clockErrorMs: g.agent.clockErrorMs,
    traffic: { snapshots: g.snapshots, snapshotBytes: g.snapshotBytes, finalBytes: g.finalBytes },
    figures: figuresOf(g),
  };
  if (g.share.arrival !== undefined) summary.arrival = g.share.arrival;
  if (g.failure !== undefined) summary.error = g.failure;
  if (g.lostAtMs !== undefined) summary.lostAtMs = Math.max(0, Math.round(g.lostAtMs - runStartMs));
  if (g.inFlightPrompts !== undefined) summary.inFlightPrompts = g.inFlightPrompts;
  return summary;
}

function figuresOf(g: GeneratorState): GeneratorFigures {
  const report = g.final?.report;
  if (report !== undefined) {
    const { totals, latency } = report;
    return {
      source: "final",
      promptsSent: totals.prompts.sent,
      promptsSucceeded: totals.prompts.succeeded,
      promptsFailed: totals.prompts.failed,
      promptsCancelled: totals.prompts.cancelled,
      requests: totals.requests.sent,
      failedRequests: totals.requests.failed,
      retries: totals.retries,
      outputTokens: totals.outputTokens,
      e2eMs: { count: latency.e2eMs.count, p50: latency.e2eMs.p50, p90: latency.e2eMs.p90, p99: latency.e2eMs.p99 },
    };
  }
  const snapshot = g.snapshot;
  const c = snapshot?.counters;
  const e2e = snapshot === undefined ? undefined : snapshotSummary(snapshot.sketches.e2eMs);
  return {
    source: snapshot === undefined ? "none" : "last_snapshot",
    promptsSent: c?.promptsSent ?? 0,
    promptsSucceeded: c?.promptsSucceeded ?? 0,
    promptsFailed: c?.promptsFailed ?? 0,
    promptsCancelled: c?.promptsCancelled ?? 0,
    requests: c?.requests ?? 0,
    failedRequests: c?.failedRequests ?? 0,
    retries: c?.retries ?? 0,
    outputTokens: c?.outputTokens ?? 0,
    e2eMs: e2e ?? { count: 0, p50: null, p90: null, p99: null },
  };
}

/** Count and percentiles of a snapshot's sketch; undefined for one that cannot be read. */
function snapshotSummary(json: SketchJson): GeneratorFigures["e2eMs"] | undefined {
  try {
    const summary = summarizeSketch(Sketch.fromJSON(json, "snapshot.sketches.e2eMs"));
    return { count: summary.count, p50: summary.p50, p90: summary.p90, p99: summary.p99 };
  } catch {
    return undefined;
  }
}
