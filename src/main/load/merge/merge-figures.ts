/**
 * The merge of report.json's judged figures (`slo`, `verdicts`, `failures`, `agentic`) for
 * report-merge.ts: their counts add up, their distributions merge through their sketches, and
 * every share and rate is recomputed from the merged counts, never averaged, so a merged report
 * says what one run of all the parts' prompts would have said. Pure.
 */
import { Sketch } from "../metrics/sketch.js";
import { type Summary, summarizeSketch } from "../metrics/stats.js";
import type { ArrivalTotals } from "../open/arrival-report.js";
import type { AgenticReport } from "../report/agentic-report.js";
import type { LoadReport } from "../report/load-report.js";
import type { FailureGroup } from "../verdicts/failure-groups.js";
import type { RetryVerdicts } from "../verdicts/retry-verdicts.js";
import { attainment, type SloAttainment, type SloReport } from "../verdicts/slo.js";

/** Where the parts come from (`sources[i]` names part i in errors). */
interface Parts<T> {
  values: readonly T[];
  sources: readonly string[];
}

/**
 * `slo`: null unless every part was judged against the same spec (the caller lists a mismatch as
 * unmerged). Goodput is the merged conforming count over `durationMs`, the merged run's.
 */
export function mergeSlo(parts: Parts<SloReport | null>, durationMs: number): SloReport | null {
  const present = parts.values.filter((slo) => slo !== null);
  const first = present[0];
  if (first === undefined || present.length < parts.values.length) return null;
  if (present.some((slo) => slo.spec !== first.spec)) return null;
  const level = (read: (slo: SloReport) => SloAttainment) =>
    attainment(
      present.reduce((sum, slo) => sum + read(slo).total, 0),
      present.reduce((sum, slo) => sum + read(slo).conforming, 0),
      durationMs,
    );
  const sessions = present.every((slo) => slo.sessions !== null) ? level((slo) => slo.sessions as SloAttainment) : null;
  return { spec: first.spec, requests: level((slo) => slo.requests), prompts: level((slo) => slo.prompts), sessions };
}

/** `verdicts`, with shares and requests per successful prompt from the merged `totals`. */
export function mergeVerdicts(parts: Parts<RetryVerdicts>, totals: LoadReport["totals"]): RetryVerdicts {
  const v = parts.values;
  const sum = (read: (verdicts: RetryVerdicts) => number) => v.reduce((total, x) => total + read(x), 0);
  const prompts = {
    firstAttempt: sum((x) => x.prompts.firstAttempt),
    afterRetries: sum((x) => x.prompts.afterRetries),
    failedAfterRetries: sum((x) => x.prompts.failedAfterRetries),
    failedWithoutRetry: sum((x) => x.prompts.failedWithoutRetry),
  };
  const judged = prompts.firstAttempt + prompts.afterRetries + prompts.failedAfterRetries + prompts.failedWithoutRetry;
  const share = (count: number) => (judged === 0 ? null : Math.round((count / judged) * 1e6) / 1e6);
  const succeeded = prompts.firstAttempt + prompts.afterRetries;
  return {
    prompts,
    shares: {
      firstAttempt: share(prompts.firstAttempt),
      afterRetries: share(prompts.afterRetries),
      failedAfterRetries: share(prompts.failedAfterRetries),
      failedWithoutRetry: share(prompts.failedWithoutRetry),
    },
    requestsPerSuccessfulPrompt: succeeded === 0 ? null : Math.round((totals.requests.sent / succeeded) * 1000) / 1000,
    retriesByCause: addCounts(v.map((x) => x.retriesByCause)),
    chainsByEnd: addCounts(v.map((x) => x.chainsByEnd)),
    backoff: {
      sumMs: sum((x) => x.backoff.sumMs),
      perPromptMs: mergeSummaries(
        v.map((x) => x.backoff.perPromptMs),
        parts.sources,
        "verdicts.backoff.perPromptMs",
      ),
    },
    hints: {
      honoured: sum((x) => x.hints.honoured),
      total: sum((x) => x.hints.total),
      early: sum((x) => x.hints.early),
      overCap: sum((x) => x.hints.overCap),
      sleptMinusHintMs: mergeSummaries(
        v.map((x) => x.hints.sleptMinusHintMs),
        parts.sources,
        "verdicts.hints.sleptMinusHintMs",
      ),
    },
    providerGate: {
      waits: sum((x) => x.providerGate.waits),
      beforeRetry: sum((x) => x.providerGate.beforeRetry),
      beforePrompt: sum((x) => x.providerGate.beforePrompt),
      waitMs: sum((x) => x.providerGate.waitMs),
    },
    budgetRefusals: sum((x) => x.budgetRefusals),
    credentialRotations: sum((x) => x.credentialRotations),
    fallbackSwitches: sum((x) => x.fallbackSwitches),
  };
}

/** `failures`: counts by label add up; each label keeps the first part's example; most frequent first. */
export function mergeFailures(parts: readonly (readonly FailureGroup[])[]): FailureGroup[] {
  const byLabel = new Map<string, FailureGroup>();
  for (const groups of parts) {
    for (const group of groups) {
      const seen = byLabel.get(group.label);
      if (seen === undefined) byLabel.set(group.label, { ...group });
      else seen.count += group.count;
    }
  }
  return [...byLabel.values()].sort((a, b) => b.count - a.count || a.label.localeCompare(b.label));
}

/** `agentic`: counts add up, distributions merge through their sketches. */
export function mergeAgentic(parts: Parts<AgenticReport>): AgenticReport {
  const summaries = (read: (agentic: AgenticReport) => Summary, path: string) =>
    mergeSummaries(parts.values.map(read), parts.sources, `agentic.${path}`);
  return {
    toolCalls: parts.values.reduce((sum, x) => sum + x.toolCalls, 0),
    toolFailures: parts.values.reduce((sum, x) => sum + x.toolFailures, 0),
    turnsPerPrompt: summaries((x) => x.turnsPerPrompt, "turnsPerPrompt"),
    toolLatencyMs: summaries((x) => x.toolLatencyMs, "toolLatencyMs"),
    sessionCompletionMs: summaries((x) => x.sessionCompletionMs, "sessionCompletionMs"),
  };
}

/**
 * `totals.arrivals` (the open model's): counts added, lateness through the sketches. Undefined
 * when the parts disagree (some open, some closed): the caller lists it as unmerged.
 */
export function mergeArrivals(parts: Parts<ArrivalTotals | null>): ArrivalTotals | null | undefined {
  const present = parts.values.filter((arrivals) => arrivals !== null);
  if (present.length === 0) return null;
  if (present.length < parts.values.length) return undefined;
  const sum = (key: Exclude<keyof ArrivalTotals, "scheduleLagMs" | "capWaitMs">) =>
    present.reduce((total, arrivals) => total + arrivals[key], 0);
  return {
    offered: sum("offered"),
    started: sum("started"),
    dropped: sum("dropped"),
    delayed: sum("delayed"),
    unstarted: sum("unstarted"),
    completed: sum("completed"),
    failed: sum("failed"),
    cancelled: sum("cancelled"),
    scheduleLagMs: mergeSummaries(
      present.map((arrivals) => arrivals.scheduleLagMs),
      parts.sources,
      "totals.arrivals.scheduleLagMs",
    ),
    capWaitMs: mergeSummaries(
      present.map((arrivals) => arrivals.capWaitMs),
      parts.sources,
      "totals.arrivals.capWaitMs",
    ),
  };
}

/**
 * The Summary of the union of the parts' samples, from their sketches.
 * @throws ERR_LOAD_REPORT for a malformed sketch, naming its part and field.
 */
function mergeSummaries(summaries: readonly Summary[], sources: readonly string[], path: string): Summary {
  const sketch = new Sketch();
  for (const [i, summary] of summaries.entries())
    sketch.merge(Sketch.fromJSON(summary.sketch, `${sources[i]}: ${path}.sketch`));
  return summarizeSketch(sketch);
}

/** Adds up counts by key. */
export function addCounts(parts: readonly Readonly<Record<string, number>>[]): Record<string, number> {
  const total: Record<string, number> = {};
  for (const part of parts) for (const [key, n] of Object.entries(part)) total[key] = (total[key] ?? 0) + n;
  return total;
}
