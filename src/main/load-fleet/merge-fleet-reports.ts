/**
 * The merged report of a distributed run: the final reports of its generators added up into one
 * report.json of the usual schema. Pure; no I/O.
 *
 * - Counters (prompts, requests, failures by kind and class, retries, tokens, cost, restores) are
 *   summed; ratios (amplification, failure rate, throughput) are computed again from the sums.
 * - Distributions are merged through their sketches (load/sketch.ts): the merged percentiles are
 *   those of the union of every generator's samples, within the sketch's 1 % relative error;
 *   count, min, max and mean are exact.
 * - The timeline is merged by interval on Redis's clock: a generator's point at `tMs` falls in the
 *   run's interval `round((startedAtMs + tMs − runStartMs) / intervalMs)`, where `startedAtMs` is
 *   when that generator began, on Redis's clock. Counts of an interval are summed, gauges
 *   (in-flight) too, the loop delay is the worst generator's.
 * - Loop delay is per process: the merged figures are the worst generator's (a threshold on
 *   `max_loop_delay_ms` holds on every generator).
 * - The mocks' counters (one mock per generator) are summed; `maxConcurrentRequests` is the sum of
 *   each mock's peak, an upper bound of the load's peak.
 */

import type { LoadReport } from "../load/load-report.js";
import { Sketch } from "../load/sketch.js";
import { round3, summarizeSketch } from "../load/stats.js";
import type { TimelinePoint } from "../load/timeline.js";

/** One generator's final report and when its run began on Redis's clock. */
export interface FinalPart {
  report: LoadReport;
  startedAtMs: number;
}

/** What the merge needs besides the parts. */
export interface MergeContext {
  status: LoadReport["status"];
  /** The run's start and end on Redis's clock. */
  runStartMs: number;
  runEndMs: number;
  config: LoadReport["config"];
  intervalMs: number;
}

type LatencyKey = keyof LoadReport["latency"];
const LATENCY_KEYS: readonly LatencyKey[] = [
  "ttftMs",
  "itlMs",
  "e2eMs",
  "outputTokensPerSecond",
  "promptMs",
  "requestsPerPrompt",
];

/**
 * Merges the parts (see the file comment); `thresholds` is left empty for the caller.
 * @throws ERR_LOAD_REPORT when a part's summary lacks a readable sketch.
 */
export function mergeFinalReports(parts: readonly FinalPart[], context: MergeContext): LoadReport {
  const reports = parts.map((part) => part.report);
  const sum = (pick: (report: LoadReport) => number) => reports.reduce((total, r) => total + pick(r), 0);
  const prompts = {
    sent: sum((r) => r.totals.prompts.sent),
    succeeded: sum((r) => r.totals.prompts.succeeded),
    failed: sum((r) => r.totals.prompts.failed),
    cancelled: sum((r) => r.totals.prompts.cancelled),
  };
  const requestsSent = sum((r) => r.totals.requests.sent);
  const outputTokens = sum((r) => r.totals.outputTokens);
  const finished = prompts.succeeded + prompts.failed;
  const durationMs = Math.max(0, context.runEndMs - context.runStartMs);
  const seconds = durationMs / 1000;
  const latency = Object.fromEntries(
    LATENCY_KEYS.map((key) => {
      const merged = new Sketch();
      for (const report of reports) merged.merge(Sketch.fromJSON(report.latency[key].sketch, `latency.${key}.sketch`));
      return [key, summarizeSketch(merged)];
    }),
  ) as LoadReport["latency"];
  const mocks = reports.map((r) => r.mock).filter((m): m is NonNullable<LoadReport["mock"]> => m !== null);
  return {
    schema: reports[0]?.schema ?? "lifeline-load-report/1",
    status: context.status,
    startedAt: new Date(context.runStartMs).toISOString(),
    endedAt: new Date(context.runEndMs).toISOString(),
    durationMs: Math.round(durationMs),
    config: context.config,
    totals: {
      prompts,
      requests: {
        sent: requestsSent,
        failed: sum((r) => r.totals.requests.failed),
        failuresByKind: addMaps(reports.map((r) => r.totals.requests.failuresByKind)),
        failuresByClass: addMaps(reports.map((r) => r.totals.requests.failuresByClass)),
      },
      retries: sum((r) => r.totals.retries),
      retryChains: addMaps(reports.map((r) => r.totals.retryChains)),
      providerGate: {
        waits: sum((r) => r.totals.providerGate.waits),
        waitMs: sum((r) => r.totals.providerGate.waitMs),
      },
      amplification: prompts.sent === 0 ? null : round3(requestsSent / prompts.sent),
      failureRate: finished === 0 ? null : round3(prompts.failed / finished),
      toolCalls: sum((r) => r.totals.toolCalls),
      inputTokens: sum((r) => r.totals.inputTokens),
      outputTokens,
      costUsd: Math.round(sum((r) => r.totals.costUsd) * 1e6) / 1e6,
      sessionRestores: addMaps(reports.map((r) => r.totals.sessionRestores)),
      watchdogTerminations: sum((r) => r.totals.watchdogTerminations),
    },
    latency,
    throughput: {
      requestsPerSecond: seconds > 0 ? round3(requestsSent / seconds) : 0,
      outputTokensPerSecond: seconds > 0 ? round3(outputTokens / seconds) : 0,
    },
    loopDelayMs: {
      mean: worst(reports.map((r) => r.loopDelayMs.mean)),
      p50: worst(reports.map((r) => r.loopDelayMs.p50)),
      p99: worst(reports.map((r) => r.loopDelayMs.p99)),
      max: worst(reports.map((r) => r.loopDelayMs.max)),
    },
    timeline: { intervalMs: context.intervalMs, points: mergeTimelines(parts, context) },
    thresholds: [],
    mock:
      mocks.length === 0
        ? null
        : {
            received: mocks.reduce((t, m) => t + m.received, 0),
            invalid: mocks.reduce((t, m) => t + m.invalid, 0),
            outcomes: addMaps(mocks.map((m) => m.outcomes)),
            steps: addMaps(mocks.map((m) => m.steps)),
            maxConcurrentRequests: mocks.reduce((t, m) => t + m.maxConcurrentRequests, 0),
          },
  };
}

/** The parts' timelines on the run's intervals (see the file comment), in time order. */
export function mergeTimelines(parts: readonly FinalPart[], context: MergeContext): TimelinePoint[] {
  const byIndex = new Map<number, TimelinePoint>();
  for (const part of parts) {
    const shift = part.startedAtMs - context.runStartMs;
    for (const point of part.report.timeline.points) {
      const index = Math.max(0, Math.round((shift + point.tMs) / context.intervalMs));
      const into = byIndex.get(index);
      if (into === undefined) {
        byIndex.set(index, { ...point, tMs: index * context.intervalMs, failures: { ...point.failures } });
        continue;
      }
      into.inFlightPrompts += point.inFlightPrompts;
      into.inFlightRequests += point.inFlightRequests;
      into.requests += point.requests;
      into.retries += point.retries;
      into.outputTokens += point.outputTokens;
      into.failures = addMaps([into.failures, point.failures]);
      into.loopDelayMeanMs = Math.max(into.loopDelayMeanMs, point.loopDelayMeanMs);
      into.loopDelayMaxMs = Math.max(into.loopDelayMaxMs, point.loopDelayMaxMs);
    }
  }
  return [...byIndex.entries()].sort(([a], [b]) => a - b).map(([, point]) => point);
}

/** Key-wise sums. */
function addMaps(maps: readonly Readonly<Record<string, number>>[]): Record<string, number> {
  const total: Record<string, number> = {};
  for (const map of maps) for (const [key, value] of Object.entries(map)) total[key] = (total[key] ?? 0) + value;
  return total;
}

function worst(values: readonly number[]): number {
  return values.reduce((max, value) => Math.max(max, value), 0);
}
