/**
 * The headline figures `lifeline load compare` sets side by side: where each is read in
 * report.json, which way is better, and which test (if any) gives its difference an interval.
 * Figures are read by path from the parsed JSON, so a report without one (an older report, a
 * section another version adds) gives null for it, never an exception.
 */

/** Which way a figure improves. */
export type Better = "higher" | "lower";

/** The samples of records.jsonl a bootstrap draws from (see compare-samples.ts). */
export type SampleSet = "e2e" | "ttft" | "itl" | "promptLatency" | "promptRequests" | "promptRetries";

/** How a figure's difference gets its interval. */
type FigureTest =
  /** Bootstrap of a nearest-rank percentile of a sample set. */
  | { kind: "percentile"; samples: SampleSet; p: number }
  /** Bootstrap of the mean (or the sum) of a sample set. */
  | { kind: "mean" | "sum"; samples: SampleSet }
  /** Newcombe's interval of a proportion of finished prompts, from report.json's counts. */
  | { kind: "proportion"; of: "succeeded" | "failed" }
  /** No test: the run gives one figure and no samples of it (why says so). */
  | { kind: "none"; why: string };

/** One headline figure. */
export interface FigureSpec {
  /** Its path in report.json (the success rate, derived, has `totals.prompts.successRate`). */
  id: string;
  label: string;
  better: Better;
  test: FigureTest;
}

const ONE_FIGURE = "one figure per run";

/** Every headline figure, in table order. */
export const FIGURES: readonly FigureSpec[] = [
  { id: "throughput.requestsPerSecond", label: "requests/s", better: "higher", test: none(ONE_FIGURE) },
  { id: "throughput.outputTokensPerSecond", label: "output tokens/s", better: "higher", test: none(ONE_FIGURE) },
  pct("latency.e2eMs.p50", "e2e latency p50 ms", "e2e", 50),
  pct("latency.e2eMs.p90", "e2e latency p90 ms", "e2e", 90),
  pct("latency.e2eMs.p99", "e2e latency p99 ms", "e2e", 99),
  pct("latency.ttftMs.p50", "ttft p50 ms", "ttft", 50),
  pct("latency.ttftMs.p99", "ttft p99 ms", "ttft", 99),
  pct("latency.itlMs.p50", "itl p50 ms", "itl", 50),
  pct("latency.itlMs.p99", "itl p99 ms", "itl", 99),
  pct("latency.promptMs.p50", "prompt latency p50 ms", "promptLatency", 50),
  pct("latency.promptMs.p99", "prompt latency p99 ms", "promptLatency", 99),
  {
    id: "totals.prompts.successRate",
    label: "prompt success rate",
    better: "higher",
    test: { kind: "proportion", of: "succeeded" },
  },
  { id: "totals.failureRate", label: "failure rate", better: "lower", test: { kind: "proportion", of: "failed" } },
  {
    id: "totals.amplification",
    label: "amplification",
    better: "lower",
    test: { kind: "mean", samples: "promptRequests" },
  },
  { id: "totals.retries", label: "retries", better: "lower", test: { kind: "sum", samples: "promptRetries" } },
  { id: "slo.requests.attainment", label: "SLO attainment, requests", better: "higher", test: none(ONE_FIGURE) },
  { id: "slo.requests.goodputPerSecond", label: "goodput requests/s", better: "higher", test: none(ONE_FIGURE) },
  { id: "slo.prompts.attainment", label: "SLO attainment, prompts", better: "higher", test: none(ONE_FIGURE) },
  { id: "slo.prompts.goodputPerSecond", label: "goodput prompts/s", better: "higher", test: none(ONE_FIGURE) },
  { id: "verdicts.shares.firstAttempt", label: "first-attempt share", better: "higher", test: none(ONE_FIGURE) },
  {
    id: "verdicts.requestsPerSuccessfulPrompt",
    label: "requests per successful prompt",
    better: "lower",
    test: none(ONE_FIGURE),
  },
];

/**
 * The figure at `id` in a parsed report.json: the number there, or null when the path is absent
 * or holds no finite number. `totals.prompts.successRate` is succeeded / (succeeded + failed).
 */
export function readFigure(report: unknown, id: string): number | null {
  if (id === "totals.prompts.successRate") {
    const succeeded = readFigure(report, "totals.prompts.succeeded");
    const failed = readFigure(report, "totals.prompts.failed");
    if (succeeded === null || failed === null || succeeded + failed === 0) return null;
    return succeeded / (succeeded + failed);
  }
  let value: unknown = report;
  for (const key of id.split(".")) {
    if (typeof value !== "object" || value === null) return null;
    value = (value as Record<string, unknown>)[key];
  }
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

function pct(id: string, label: string, samples: SampleSet, p: number): FigureSpec {
  return { id, label, better: "lower", test: { kind: "percentile", samples, p } };
}

function none(why: string): FigureTest {
  return { kind: "none", why };
}
