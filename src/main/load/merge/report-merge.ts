/**
 * Merges load reports of one configuration into one report, as if their runs had been one run:
 * counters add up, distributions merge through their sketches (so percentiles are those of all
 * the samples, within 1 %), rates are recomputed from the merged counts and the merged duration,
 * timelines merge on the wall clock (merge-timeline.ts), and thresholds are checked again on the
 * merged figures. A field it does not know is merged only where that cannot be wrong (a Summary,
 * found by its sketch, or an object of them); any other is left out and named in
 * `merged.unmergedFields`. Pure: reading and writing the folders is merge-reports.ts's.
 */
import { LifelineError } from "../../../shared/errors.js";
import { round3 } from "../metrics/stats.js";
import { type LoadReport, REPORT_SCHEMA, thresholdFigures } from "../report/load-report.js";
import { evaluateThresholds, parseThreshold, type Threshold } from "../verdicts/thresholds.js";
import { isPlainObject, mergeObject, mergeUnknown } from "./merge-fields.js";
import { addCounts, mergeAgentic, mergeArrivals, mergeFailures, mergeSlo, mergeVerdicts } from "./merge-figures.js";
import { mergeTimelines } from "./merge-timeline.js";

/** One report a merged report was made of (report.json `merged.from[]`). */
export interface MergedPart {
  /** The report folder or report.json as given. */
  source: string;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  status: LoadReport["status"];
  sessions: number;
  seed: number;
  /** Lines of its records.jsonl; null when it had none. */
  records: number | null;
  /** When the part was itself a merged report: the reports it was made of. */
  from?: MergedPart[];
}

/** report.json `merged`: where a merged report came from and what it could not merge. */
export interface MergeInfo {
  from: MergedPart[];
  /**
   * Config keys whose values differ among the parts (`seed`, `sessions`, …). `config` shows the
   * first part's value of each, except `sessions` and `concurrency`, which add up.
   */
  configDifferences: string[];
  /** Fields of the parts that were left out because the merge cannot combine them correctly. */
  unmergedFields: string[];
}

/** A merged report: report.json with `merged`. */
export type MergedReport = LoadReport & { merged: MergeInfo };

/** One report to merge, as merge-reports.ts read it. */
export interface MergeInput {
  source: string;
  /** The report, its known fields checked (report-reader.ts); other fields as they were. */
  report: LoadReport & { merged?: MergeInfo };
  /** Lines of its records.jsonl; null when it had none. */
  records: number | null;
}

/** Config keys that must be equal for a merge to mean anything, unless forced. */
const MUST_MATCH = ["target", "model", "faults", "mock", "settings"] as const;
/** Config keys that add up: the merged run had all the parts' sessions. */
const ADDED_CONFIG = new Set(["sessions", "concurrency"]);
/** report.json's fields this merge knows. */
const KNOWN_FIELDS = new Set([
  "schema",
  "status",
  "startedAt",
  "endedAt",
  "durationMs",
  "config",
  "totals",
  "latency",
  "throughput",
  "loopDelayMs",
  "timeline",
  "thresholds",
  "mock",
  "merged",
  "slo",
  "verdicts",
  "failures",
  "agentic",
  "sweep",
]);
const KNOWN_TOTALS = new Set([
  "prompts",
  "requests",
  "retries",
  "retryChains",
  "providerGate",
  "amplification",
  "failureRate",
  "toolCalls",
  "inputTokens",
  "outputTokens",
  "costUsd",
  "sessionRestores",
  "watchdogTerminations",
  "arrivals",
]);

/**
 * Merges `parts` (at least two) into one report; see the file comment and docs/load.md.
 * `thresholds` are checked besides the parts' own (the same expression once).
 * @throws ERR_LOAD_REPORT when fewer than two parts are given, two parts are the same run, or the
 *   parts' configurations differ in a key of {@link MUST_MATCH} and `force` is not set (the
 *   message names the key and each part's value), or a sketch is malformed (naming its field).
 */
export function mergeLoadReports(
  parts: readonly MergeInput[],
  options: { force?: boolean; thresholds?: readonly Threshold[] } = {},
): MergedReport {
  if (parts.length < 2) fail(`Give at least two reports to merge, got ${parts.length}`);
  checkDistinctRuns(parts);
  const unmerged = new Set<string>();
  const reports = parts.map((part) => part.report);
  const config = mergeConfig(parts, options.force === true);
  const intervals = parts.flatMap((part) => runIntervals(part.report));
  const origin = Math.min(...intervals.map(([start]) => start));
  const end = Math.max(...reports.map((report) => Date.parse(report.endedAt)));
  const busyMs = busyTime(intervals);
  const totals = mergeTotals(reports, parts, unmerged);
  const sources = parts.map((part) => part.source);
  const latency = mergeObject(
    parts.map((part) => part.report.latency),
    sources,
    "latency",
    unmerged,
  ) as LoadReport["latency"];
  const timeline = mergeTimelines(
    reports.map((report) => ({ offsetMs: Date.parse(report.startedAt) - origin, timeline: report.timeline })),
  );
  for (const field of timeline.unmerged) unmerged.add(field);
  const seconds = busyMs / 1000;
  if (reports.some((r) => r.sweep !== null)) unmerged.add("sweep");
  // Parts judged against different SLOs (or some against none) have no merged SLO figures.
  if (
    reports.some((r) => r.slo !== null) &&
    mergeSlo({ values: reports.map((r) => r.slo), sources }, busyMs) === null
  ) {
    unmerged.add("slo");
  }
  const report: MergedReport = {
    schema: REPORT_SCHEMA,
    status: reports.some((r) => r.status === "interrupted") ? "interrupted" : "completed",
    startedAt: new Date(origin).toISOString(),
    endedAt: new Date(end).toISOString(),
    durationMs: Math.round(busyMs),
    config,
    totals,
    latency,
    throughput: {
      requestsPerSecond: seconds > 0 ? round3(totals.requests.sent / seconds) : 0,
      outputTokensPerSecond: seconds > 0 ? round3(totals.outputTokens / seconds) : 0,
    },
    loopDelayMs: {
      mean: round3(weightedMean(reports.map((r) => [r.loopDelayMs.mean, r.durationMs]))),
      p50: Math.max(...reports.map((r) => r.loopDelayMs.p50)),
      p99: Math.max(...reports.map((r) => r.loopDelayMs.p99)),
      max: Math.max(...reports.map((r) => r.loopDelayMs.max)),
    },
    timeline: timeline.timeline,
    thresholds: [],
    mock: mergeMock(reports, unmerged),
    slo: mergeSlo({ values: reports.map((r) => r.slo), sources }, busyMs),
    verdicts: mergeVerdicts({ values: reports.map((r) => r.verdicts), sources }, totals),
    failures: mergeFailures(reports.map((r) => r.failures)),
    agentic: mergeAgentic({ values: reports.map((r) => r.agentic), sources }),
    // A sweep's steps are one run's rates over its own clock: two sweeps do not add up.
    sweep: null,
    merged: { from: [], configDifferences: [], unmergedFields: [] },
  };
  const extra = report as unknown as Record<string, unknown>;
  const keys = [...new Set(parts.flatMap((part) => Object.keys(part.report)))].filter((key) => !KNOWN_FIELDS.has(key));
  for (const key of keys) {
    const value = mergeUnknown(
      parts.map((part) => (part.report as unknown as Record<string, unknown>)[key]),
      sources,
      key,
      unmerged,
    );
    if (value !== undefined) extra[key] = value;
  }
  for (const part of reports) for (const field of part.merged?.unmergedFields ?? []) unmerged.add(field);
  // `merged` goes last, after any field merged from the parts.
  const { merged: _, ...rest } = report;
  const result: MergedReport = {
    ...rest,
    merged: {
      from: parts.map(describePart),
      configDifferences: configDifferences(parts),
      unmergedFields: [...unmerged].sort(),
    },
  };
  result.thresholds = evaluateThresholds(mergedThresholds(parts, options.thresholds ?? []), thresholdFigures(result));
  return result;
}

/** The thresholds of the parts (each expression once, in order of first appearance) and `extra`. */
function mergedThresholds(parts: readonly MergeInput[], extra: readonly Threshold[]): Threshold[] {
  const byExpression = new Map<string, Threshold>();
  for (const part of parts) {
    for (const [i, result] of part.report.thresholds.entries()) {
      try {
        const threshold = parseThreshold(result.expression);
        if (!byExpression.has(threshold.expression)) byExpression.set(threshold.expression, threshold);
      } catch (error) {
        fail(`${part.source}: thresholds[${i}].expression: ${(error as Error).message}`, error);
      }
    }
  }
  for (const threshold of extra)
    if (!byExpression.has(threshold.expression)) byExpression.set(threshold.expression, threshold);
  return [...byExpression.values()];
}

function checkDistinctRuns(parts: readonly MergeInput[]): void {
  const seen = new Map<string, string>();
  for (const { report, source } of parts) {
    const key = `${report.startedAt} ${report.endedAt} ${report.durationMs}`;
    const other = seen.get(key);
    if (other !== undefined) {
      fail(`${source} and ${other} are the same run (same start, end and duration); give each run once`);
    }
    seen.set(key, source);
  }
}

/** The first part's config, with `sessions` and `concurrency` added up; refuses differences in {@link MUST_MATCH}. */
function mergeConfig(parts: readonly MergeInput[], force: boolean): LoadReport["config"] {
  const [first] = parts as [MergeInput, ...MergeInput[]];
  if (!force) {
    for (const key of MUST_MATCH) {
      const values = parts.map((part) => canonical(part.report.config[key]));
      if (new Set(values).size > 1) {
        const each = parts.map((part, i) => `${part.source} has ${values[i]}`).join(", ");
        fail(
          `The reports are of different configurations: config.${key} differs (${each}); merge reports of one configuration, or pass --force (force: true) to merge them anyway`,
        );
      }
    }
  }
  return {
    ...first.report.config,
    sessions: parts.reduce((sum, part) => sum + part.report.config.sessions, 0),
    concurrency: parts.reduce((sum, part) => sum + part.report.config.concurrency, 0),
  };
}

function configDifferences(parts: readonly MergeInput[]): string[] {
  const configs = parts.map((part) => part.report.config as unknown as Record<string, unknown>);
  const keys = [...new Set(configs.flatMap((config) => Object.keys(config)))];
  return keys.filter(
    (key) => !ADDED_CONFIG.has(key) && new Set(configs.map((config) => canonical(config[key]))).size > 1,
  );
}

function mergeTotals(
  reports: readonly LoadReport[],
  parts: readonly MergeInput[],
  unmerged: Set<string>,
): LoadReport["totals"] {
  const t = reports.map((report) => report.totals);
  const sum = (read: (totals: LoadReport["totals"]) => number) => t.reduce((total, x) => total + read(x), 0);
  const prompts = {
    sent: sum((x) => x.prompts.sent),
    succeeded: sum((x) => x.prompts.succeeded),
    failed: sum((x) => x.prompts.failed),
    cancelled: sum((x) => x.prompts.cancelled),
  };
  const requests = {
    sent: sum((x) => x.requests.sent),
    failed: sum((x) => x.requests.failed),
    failuresByKind: addCounts(t.map((x) => x.requests.failuresByKind)),
    failuresByClass: addCounts(t.map((x) => x.requests.failuresByClass)),
  };
  const finished = prompts.succeeded + prompts.failed;
  const totals: LoadReport["totals"] = {
    prompts,
    requests,
    retries: sum((x) => x.retries),
    retryChains: addCounts(t.map((x) => x.retryChains)),
    providerGate: { waits: sum((x) => x.providerGate.waits), waitMs: sum((x) => x.providerGate.waitMs) },
    amplification: prompts.sent === 0 ? null : round3(requests.sent / prompts.sent),
    failureRate: finished === 0 ? null : round3(prompts.failed / finished),
    toolCalls: sum((x) => x.toolCalls),
    inputTokens: sum((x) => x.inputTokens),
    outputTokens: sum((x) => x.outputTokens),
    costUsd: Math.round(sum((x) => x.costUsd) * 1e6) / 1e6,
    sessionRestores: addCounts(t.map((x) => x.sessionRestores)),
    watchdogTerminations: sum((x) => x.watchdogTerminations),
    arrivals: null,
  };
  const arrivals = mergeArrivals({ values: t.map((x) => x.arrivals), sources: parts.map((part) => part.source) });
  if (arrivals === undefined) unmerged.add("totals.arrivals");
  else totals.arrivals = arrivals;
  const extra = totals as unknown as Record<string, unknown>;
  const keys = [...new Set(t.flatMap((x) => Object.keys(x)))].filter((key) => !KNOWN_TOTALS.has(key));
  for (const key of keys) {
    const value = mergeUnknown(
      t.map((x) => (x as unknown as Record<string, unknown>)[key]),
      parts.map((part) => part.source),
      `totals.${key}`,
      unmerged,
    );
    if (value !== undefined) extra[key] = value;
  }
  return totals;
}

function mergeMock(reports: readonly LoadReport[], unmerged: Set<string>): LoadReport["mock"] {
  const mocks = reports.map((report) => report.mock);
  if (mocks.every((mock) => mock === null)) return null;
  const present = mocks.filter((mock) => mock !== null);
  if (present.length < mocks.length) {
    unmerged.add("mock");
    return null;
  }
  return {
    received: present.reduce((sum, mock) => sum + mock.received, 0),
    invalid: present.reduce((sum, mock) => sum + mock.invalid, 0),
    outcomes: addCounts(present.map((mock) => mock.outcomes)),
    steps: addCounts(present.map((mock) => mock.steps)),
    // Each part had its own mock: the largest one's, not a sum of peaks that need not coincide.
    maxConcurrentRequests: Math.max(...present.map((mock) => mock.maxConcurrentRequests)),
    toolCalls: present.reduce((sum, mock) => sum + mock.toolCalls, 0),
  };
}

function describePart(part: MergeInput): MergedPart {
  const { report } = part;
  const described: MergedPart = {
    source: part.source,
    startedAt: report.startedAt,
    endedAt: report.endedAt,
    durationMs: report.durationMs,
    status: report.status,
    sessions: report.config.sessions,
    seed: report.config.seed,
    records: part.records,
  };
  if (report.merged !== undefined) described.from = report.merged.from;
  return described;
}

/** When a report's run(s) ran, as [start, end] in epoch ms: a merged report's, each of its parts'. */
function runIntervals(report: LoadReport & { merged?: MergeInfo }): [number, number][] {
  const leaves = (from: readonly MergedPart[]): [number, number][] =>
    from.flatMap((part) => (part.from === undefined ? [interval(part)] : leaves(part.from)));
  return report.merged === undefined ? [interval(report)] : leaves(report.merged.from);
}

function interval(run: { startedAt: string; durationMs: number }): [number, number] {
  const start = Date.parse(run.startedAt);
  return [start, start + run.durationMs];
}

/** The time during which at least one of `intervals` was running: the length of their union. */
function busyTime(intervals: readonly [number, number][]): number {
  let total = 0;
  let current: [number, number] | undefined;
  for (const [start, end] of [...intervals].sort(([a], [b]) => a - b)) {
    if (current !== undefined && start <= current[1]) current[1] = Math.max(current[1], end);
    else {
      if (current !== undefined) total += current[1] - current[0];
      current = [start, end];
    }
  }
  return total + (current === undefined ? 0 : current[1] - current[0]);
}

function weightedMean(pairs: readonly [number, number][]): number {
  const weight = pairs.reduce((sum, [, w]) => sum + w, 0);
  if (weight === 0) return Math.max(...pairs.map(([value]) => value));
  return pairs.reduce((sum, [value, w]) => sum + value * w, 0) / weight;
}

/** JSON with sorted keys, so equal objects compare equal whatever their key order. */
function canonical(value: unknown): string {
  return (
    JSON.stringify(value, (_, v: unknown) =>
      isPlainObject(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))) : v,
    ) ?? "undefined"
  );
}

function fail(message: string, cause?: unknown): never {
  throw new LifelineError("ERR_LOAD_REPORT", `${message}.`, cause === undefined ? {} : { cause });
}
