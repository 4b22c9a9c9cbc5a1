/**
 * One sweep step's result (report.json `sweep.stages[]`) from the records of that step alone:
 * requests and prompts that started within it, and its arrival counts. Pure.
 */
import type { PromptRecord, RequestRecord } from "../metrics/load-metrics.js";
import { round3, summarize } from "../metrics/stats.js";
import { evaluateSlo, type Slo } from "../verdicts/slo.js";
import type { ArrivalCounts, SweepStage } from "./arrival-report.js";

/** What {@link stepResult} reads. */
export interface StepInput {
  kind: SweepStage["kind"];
  offeredRate: number | null;
  /** Step start (ms since the run began) and its whole length, drain included. */
  startMs: number;
  durationMs: number;
  /** The step's scheduled length: rates are per second of it. */
  scheduleMs: number;
  counts: ArrivalCounts;
  /** The step's records only (started within it). */
  requests: readonly RequestRecord[];
  prompts: readonly PromptRecord[];
  /** The run's `--slo`, if any: the step's goodput is judged against it. */
  slo?: Slo;
}

/**
 * Goodput per step: prompts per second of the step's schedule that met the run's SLO (slo.ts's
 * prompt level, retries included), from the step's own records; null without an SLO.
 */
function stepGoodput(input: StepInput): number | null {
  if (input.slo === undefined) return null;
  return evaluateSlo(input.slo, input.requests, input.prompts, input.scheduleMs, false).prompts.goodputPerSecond;
}

/** The step's figures; `saturated` is left null (sweep.ts sets it). */
export function stepResult(input: StepInput): SweepStage {
  const ok = input.requests.filter((request) => request.failure === undefined);
  const ttft = ok.flatMap((request) => (request.ttftMs === null ? [] : [request.ttftMs]));
  const itl = ok.flatMap((request) =>
    request.ttftMs !== null && request.outputTokens >= 2
      ? [(request.e2eMs - request.ttftMs) / (request.outputTokens - 1)]
      : [],
  );
  const seconds = input.scheduleMs / 1000;
  const perSecond = (n: number) => (seconds > 0 ? round3(n / seconds) : 0);
  const succeeded = input.prompts.filter((prompt) => prompt.outcome === "succeeded");
  return {
    kind: input.kind,
    offeredRate: input.offeredRate === null ? null : round3(input.offeredRate),
    startMs: Math.round(input.startMs),
    durationMs: Math.round(input.durationMs),
    arrivals: { ...input.counts },
    achievedRate: perSecond(input.counts.completed),
    throughput: {
      promptsPerSecond: perSecond(succeeded.length),
      requestsPerSecond: perSecond(input.requests.length),
      outputTokensPerSecond: perSecond(input.requests.reduce((sum, request) => sum + request.outputTokens, 0)),
    },
    latency: {
      ttftMs: summarize(ttft),
      itlMs: summarize(itl),
      e2eMs: summarize(ok.map((request) => request.e2eMs)),
      promptMs: summarize(succeeded.map((prompt) => prompt.latencyMs)),
    },
    ...ttftTrend(ok),
    goodput: stepGoodput(input),
    saturated: null,
  };
}

/**
 * p50 TTFT of the later half of `requests` (by start) against the earlier half's: their ratio and
 * their difference; nulls below 4 samples.
 */
function ttftTrend(requests: readonly RequestRecord[]): { ttftGrowth: number | null; ttftRiseMs: number | null } {
  const timed = requests.filter((request) => request.ttftMs !== null).sort((a, b) => a.startMs - b.startMs);
  const none = { ttftGrowth: null, ttftRiseMs: null };
  if (timed.length < 4) return none;
  const half = Math.floor(timed.length / 2);
  const early = summarize(timed.slice(0, half).map((request) => request.ttftMs as number)).p50;
  const late = summarize(timed.slice(half).map((request) => request.ttftMs as number)).p50;
  if (early === null || late === null) return none;
  return { ttftGrowth: round3(late / Math.max(early, 0.001)), ttftRiseMs: round3(late - early) };
}
