/**
 * report.json: what a run measured, as one plain object. It is an interface (CI jobs read and
 * diff it): docs/load.md documents every field, `schema` names its version, and fields are only
 * ever added within a version.
 */

import type { ThinkingLevel } from "../../../shared/thinking.js";
import type { ToolFigures } from "../metrics/agentic-metrics.js";
import type { LoadCounters, PromptRecord, RequestRecord } from "../metrics/load-metrics.js";
import { emptyLedgerTotals, type RetryLedgerTotals } from "../metrics/retry-ledger.js";
import { Sketch } from "../metrics/sketch.js";
import { round3, type Summary, summarize, summarizeSketch } from "../metrics/stats.js";
import type { LoopDelaySummary, TimelinePoint } from "../metrics/timeline.js";
import type { MockTargetStats } from "../mock/mock-target.js";
import type { ArrivalConfig, ArrivalTotals, SweepReport } from "../open/arrival-report.js";
import type { LoadFault } from "../options/load-options.js";
import { type FailureGroup, groupFailures } from "../verdicts/failure-groups.js";
import { buildVerdicts, type RetryVerdicts } from "../verdicts/retry-verdicts.js";
import { evaluateSlo, type Slo, type SloReport } from "../verdicts/slo.js";
import {
  evaluateThresholds,
  type Threshold,
  type ThresholdMetric,
  type ThresholdResult,
} from "../verdicts/thresholds.js";
import { type AgenticReport, agenticReport } from "./agentic-report.js";

/** Version tag of report.json's layout. */
export const REPORT_SCHEMA = "lifeline-load-report/1";

/** report.json. */
export interface LoadReport {
  schema: typeof REPORT_SCHEMA;
  /**
   * `completed`: the run reached its prompts or duration; `interrupted`: stopped early (Ctrl+C,
   * `signal`); `degraded`: a distributed run (load-fleet/) that lost a generator on the way, whose
   * figures are those of the generators that delivered theirs (see docs/load.md).
   */
  status: "completed" | "interrupted" | "degraded";
  startedAt: string;
  endedAt: string;
  durationMs: number;
  config: {
    sessions: number;
    promptsPerSession: number | null;
    durationMs: number | null;
    /** `"mock"`: the built-in mock server; `"model"`: `model`, a real endpoint. */
    target: "mock" | "model";
    model: string;
    /** `--thinking`: every session's thinking level; null: the settings' default. */
    thinkingLevel: ThinkingLevel | null;
    faults: LoadFault[];
    seed: number;
    rampUpMs: number;
    concurrency: number;
    thinkTimeMs: number;
    threads: number | null;
    /** How many distinct prompt texts were used round-robin. */
    promptTexts: number;
    /** How many conversations of `--prompts-file` the sessions were given; 0: none. */
    conversations: number;
    /** The load tool the sessions had (`--tool-*`, load-tools.ts); null: no tool. */
    tools: { name: string; latencyMs: number; cpuMs: number; failureRate: number } | null;
    /** The built-in mock's answers and rate limit; null against a real model. */
    mock: {
      tokens: number;
      tokenDelayMs: number;
      rateLimit: { requests: number; windowMs: number } | null;
      /** `--tool-calls`/`--tool-turns`: the mock's tool calls per turn; null: none. */
      tools: { probability: number; calls: number; maxTurns: number } | null;
    } | null;
    /**
     * The settings given over the settings files: the retry flags, and against the mock its
     * default `retry.provider.idleTimeoutMs` when neither flags nor files set one.
     */
    settings: Record<string, unknown>;
    /** The open model or the sweep (arrival-report.ts); null for the closed model. */
    arrival: ArrivalConfig | null;
  };
  totals: {
    prompts: { sent: number; succeeded: number; failed: number; cancelled: number };
    requests: {
      sent: number;
      failed: number;
      /** Failed requests by kind: http_503, http_429, connection, stream_cut, stream_error, aborted, … */
      failuresByKind: Record<string, number>;
      /** Failed requests by the retry controller's class: retryable, fatal, usage_limit, overflow, aborted. */
      failuresByClass: Record<string, number>;
    };
    retries: number;
    retryChains: Record<string, number>;
    /**
     * `retry.coordinate`: how often a retry or a new prompt waited at its provider's closed gate
     * (`provider_gate_wait` events), and the sum of the waits the gate announced, in ms (a wait
     * cut short by the run's end still counts whole).
     */
    providerGate: { waits: number; waitMs: number };
    /** Requests sent per prompt sent. */
    amplification: number | null;
    /** Failed prompts / (succeeded + failed); cancelled prompts count in neither. */
    failureRate: number | null;
    toolCalls: number;
    inputTokens: number;
    outputTokens: number;
    /** Estimated from the model's price table; 0 for the mock. */
    costUsd: number;
    /** Sessions restored after their worker died, by cause. */
    sessionRestores: Record<string, number>;
    /** Workers the watchdog terminated as hung. */
    watchdogTerminations: number;
    /** The open model's and the sweep's arrivals (arrival-report.ts); null for the closed model. */
    arrivals: ArrivalTotals | null;
  };
  /** Distributions over the requests that succeeded (prompt figures over prompts that succeeded). */
  latency: {
    ttftMs: Summary;
    /** Time to first byte: request start to the response's status and headers (worker stamps). */
    ttfbMs: Summary;
    itlMs: Summary;
    /** Each gap between consecutive streamed deltas of a request (worker stamps): the individual inter-token latencies. */
    chunkGapMs: Summary;
    e2eMs: Summary;
    outputTokensPerSecond: Summary;
    promptMs: Summary;
    requestsPerPrompt: Summary;
  };
  throughput: { requestsPerSecond: number; outputTokensPerSecond: number };
  loopDelayMs: LoopDelaySummary;
  timeline: { intervalMs: number; points: TimelinePoint[] };
  thresholds: ThresholdResult[];
  /** `--slo`'s attainment and goodput (slo.ts); null when the run had no SLO. */
  slo: SloReport | null;
  /** Prompts by how the retry controller fared with them, and the retries' accounting (retry-verdicts.ts). */
  verdicts: RetryVerdicts;
  /** Failed requests by kind, most frequent first, each with one example message, keys redacted. */
  failures: FailureGroup[];
  /** Turns and tools (agentic-report.ts); tool figures are 0 and summaries empty when no tool ran. */
  agentic: AgenticReport;
  /** One result per sweep step (arrival-report.ts); null unless the run was a sweep. */
  sweep: SweepReport | null;
  /**
   * The built-in mock's own counters, read from its thread at the end; null with `model`.
   * `received` (well-formed model requests that reached it) equals `totals.requests.sent` on a
   * completed run.
   */
  mock: {
    received: number;
    invalid: number;
    outcomes: Record<string, number>;
    steps: Record<string, number>;
    /**
     * The most model requests the mock had open at once (received, response not yet ended):
     * with `retry.maxConcurrentRequests` (`--max-concurrent`), at most that limit.
     */
    maxConcurrentRequests: number;
    /** Tool calls in the tool-call answers it sent in full (`steps.tool_calls` counts the answers). */
    toolCalls: number;
  } | null;
}

/** What {@link buildReport} needs. */
export interface ReportInput {
  status: LoadReport["status"];
  startedAt: Date;
  endedAt: Date;
  durationMs: number;
  config: LoadReport["config"];
  counters: LoadCounters;
  requests: readonly RequestRecord[];
  prompts: readonly PromptRecord[];
  /** The gaps between consecutive deltas of the successful requests, in ms (LoadMetrics `chunkGaps`); none when absent. */
  chunkGaps?: Sketch;
  timeline: { intervalMs: number; points: TimelinePoint[] };
  loopDelayMs: LoopDelaySummary;
  watchdogTerminations: number;
  thresholds: readonly Threshold[];
  mock: MockTargetStats | null;
  /** The run's `--slo`; none: report.json `slo` is null. */
  slo?: Slo;
  /** What the run's retry ledger counted; none: the retry figures that need events are 0. */
  retryLedger?: Readonly<RetryLedgerTotals>;
  /** Keys the run knows, redacted from the failure examples. */
  secrets?: readonly string[];
  /** The tool figures of the run (agentic-metrics.ts). */
  tools: ToolFigures;
  /** The open model's arrivals and the sweep's steps (open-run.ts); absent for the closed model. */
  arrivals?: ArrivalTotals;
  sweep?: SweepReport | null;
}

/** Builds report.json from a run's records and counters, and checks the thresholds. */
export function buildReport(input: ReportInput): LoadReport {
  const { counters } = input;
  const ok = input.requests.filter((request) => request.failure === undefined);
  const ttft = ok.flatMap((request) => (request.ttftMs === null ? [] : [request.ttftMs]));
  const itl = ok.flatMap((request) =>
    request.ttftMs !== null && request.outputTokens >= 2
      ? [(request.e2eMs - request.ttftMs) / (request.outputTokens - 1)]
      : [],
  );
  const tps = ok.flatMap((request) => (request.e2eMs > 0 ? [request.outputTokens / (request.e2eMs / 1000)] : []));
  const finished = counters.promptsSucceeded + counters.promptsFailed;
  const seconds = input.durationMs / 1000;
  const latency = {
    ttftMs: summarize(ttft),
    ttfbMs: summarize(ok.flatMap((request) => (request.ttfbMs === null ? [] : [request.ttfbMs]))),
    itlMs: summarize(itl),
    chunkGapMs: summarizeSketch(input.chunkGaps ?? new Sketch()),
    e2eMs: summarize(ok.map((request) => request.e2eMs)),
    outputTokensPerSecond: summarize(tps),
    promptMs: summarize(input.prompts.filter((p) => p.outcome === "succeeded").map((p) => p.latencyMs)),
    requestsPerPrompt: summarize(input.prompts.map((p) => p.requests)),
  };
  const totals: LoadReport["totals"] = {
    prompts: {
      sent: counters.promptsSent,
      succeeded: counters.promptsSucceeded,
      failed: counters.promptsFailed,
      cancelled: counters.promptsCancelled,
    },
    requests: {
      sent: counters.requests,
      failed: counters.failedRequests,
      failuresByKind: { ...counters.failuresByKind },
      failuresByClass: { ...counters.failuresByClass },
    },
    retries: counters.retries,
    retryChains: { ...counters.retryChains },
    providerGate: { waits: counters.gateWaits, waitMs: Math.round(counters.gateWaitMs) },
    amplification: counters.promptsSent === 0 ? null : round3(counters.requests / counters.promptsSent),
    failureRate: finished === 0 ? null : round3(counters.promptsFailed / finished),
    toolCalls: counters.toolCalls,
    inputTokens: counters.inputTokens,
    outputTokens: counters.outputTokens,
    costUsd: Math.round(counters.costUsd * 1e6) / 1e6,
    sessionRestores: { ...counters.restores },
    watchdogTerminations: input.watchdogTerminations,
    arrivals: input.arrivals ?? null,
  };
  const report: LoadReport = {
    schema: REPORT_SCHEMA,
    status: input.status,
    startedAt: input.startedAt.toISOString(),
    endedAt: input.endedAt.toISOString(),
    durationMs: Math.round(input.durationMs),
    config: input.config,
    totals,
    latency,
    throughput: {
      requestsPerSecond: seconds > 0 ? round3(counters.requests / seconds) : 0,
      outputTokensPerSecond: seconds > 0 ? round3(counters.outputTokens / seconds) : 0,
    },
    loopDelayMs: input.loopDelayMs,
    timeline: input.timeline,
    thresholds: [],
    slo:
      input.slo === undefined
        ? null
        : evaluateSlo(input.slo, input.requests, input.prompts, input.durationMs, input.config.promptsPerSession !== 1),
    verdicts: buildVerdicts(input.prompts, counters, input.retryLedger ?? emptyLedgerTotals()),
    failures: groupFailures(input.requests, input.secrets ?? []),
    agentic: agenticReport(input.tools, input.prompts),
    sweep: input.sweep ?? null,
    mock:
      input.mock === null
        ? null
        : {
            received: input.mock.total,
            invalid: input.mock.invalid,
            outcomes: input.mock.outcomes,
            steps: input.mock.steps,
            maxConcurrentRequests: input.mock.maxInFlight,
            toolCalls: input.mock.toolCalls,
          },
  };
  report.thresholds = evaluateThresholds(input.thresholds, thresholdFigures(report));
  return report;
}

/**
 * The figure each threshold metric names, read from a report (also a merged one: report-merge.ts;
 * and a parsed report.json, by `lifeline load compare`: it may throw on one that lacks a section).
 */
export function thresholdFigures(report: LoadReport): Record<ThresholdMetric, number | null> {
  const { latency, totals } = report;
  return {
    p50_latency_ms: latency.e2eMs.p50,
    p90_latency_ms: latency.e2eMs.p90,
    p99_latency_ms: latency.e2eMs.p99,
    p50_ttft_ms: latency.ttftMs.p50,
    p90_ttft_ms: latency.ttftMs.p90,
    p99_ttft_ms: latency.ttftMs.p99,
    p99_itl_ms: latency.itlMs.p99,
    failure_rate: totals.failureRate,
    amplification: totals.amplification,
    retries: totals.retries,
    max_loop_delay_ms: report.loopDelayMs.max,
    watchdog_terminations: totals.watchdogTerminations,
    slo_attainment: report.slo?.requests.attainment ?? null,
    goodput: report.slo?.requests.goodputPerSecond ?? null,
    prompt_slo_attainment: report.slo?.prompts.attainment ?? null,
    prompt_goodput: report.slo?.prompts.goodputPerSecond ?? null,
    // A parsed report.json read by compare may lack the section: no figure rather than no figures at all.
    first_attempt_success_rate: (report.verdicts as RetryVerdicts | undefined)?.shares.firstAttempt ?? null,
    requests_per_successful_prompt: (report.verdicts as RetryVerdicts | undefined)?.requestsPerSuccessfulPrompt ?? null,
    p99_ttfb_ms: (latency.ttfbMs as Summary | undefined)?.p99 ?? null,
    tool_failure_rate: toolFailureRate(report.agentic as AgenticReport | undefined),
    p99_tool_latency_ms: (report.agentic as AgenticReport | undefined)?.toolLatencyMs.p99 ?? null,
    p99_session_completion_ms: (report.agentic as AgenticReport | undefined)?.sessionCompletionMs.p99 ?? null,
  };
}

/** Tool executions that failed / tool executions; null when no tool ran (nothing to judge). */
function toolFailureRate(agentic: AgenticReport | undefined): number | null {
  if (agentic === undefined || agentic.toolCalls === 0) return null;
  return Math.round((agentic.toolFailures / agentic.toolCalls) * 1e6) / 1e6;
}
