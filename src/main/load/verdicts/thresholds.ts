/**
 * Thresholds for CI, as k6 has them: `--threshold "p99_latency_ms<8000"`. A threshold names one
 * metric of the report, an operator and a number; the run's exit code says whether all held.
 */
import { LifelineError } from "../../../shared/errors.js";

/** Every metric a threshold may name; each maps to one figure of report.json (see docs/load.md). */
export const THRESHOLD_METRICS = [
  "p50_latency_ms",
  "p90_latency_ms",
  "p99_latency_ms",
  "p50_ttft_ms",
  "p90_ttft_ms",
  "p99_ttft_ms",
  "p99_itl_ms",
  "failure_rate",
  "amplification",
  "retries",
  "max_loop_delay_ms",
  "watchdog_terminations",
  "slo_attainment",
  "goodput",
  "prompt_slo_attainment",
  "prompt_goodput",
  "first_attempt_success_rate",
  "requests_per_successful_prompt",
  "p99_ttfb_ms",
  "tool_failure_rate",
  "p99_tool_latency_ms",
  "p99_session_completion_ms",
] as const;

/** One of {@link THRESHOLD_METRICS}. */
export type ThresholdMetric = (typeof THRESHOLD_METRICS)[number];

/** The comparisons a threshold may use. */
export const THRESHOLD_OPERATORS = ["<", "<=", ">", ">="] as const;
/** One of {@link THRESHOLD_OPERATORS}. */
export type ThresholdOperator = (typeof THRESHOLD_OPERATORS)[number];

/** A parsed threshold. */
export interface Threshold {
  /** The text as given, for reports. */
  expression: string;
  metric: ThresholdMetric;
  operator: ThresholdOperator;
  value: number;
}

/** A threshold checked against a run (report.json `thresholds[]`). */
export interface ThresholdResult extends Threshold {
  /** The run's figure; null when the run produced no sample for it (a threshold on it fails). */
  actual: number | null;
  passed: boolean;
}

const PATTERN = /^\s*([a-z0-9_]+)\s*(<=|>=|<|>)\s*(-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*$/i;

/**
 * Parses `metric op number`, spaces allowed around each part.
 * @throws ERR_INVALID_OPTIONS naming the expression and what is allowed.
 */
export function parseThreshold(expression: string): Threshold {
  const match = PATTERN.exec(expression);
  const metric = match?.[1];
  const operator = match?.[2];
  const value = Number(match?.[3]);
  if (match === null || metric === undefined || operator === undefined || !Number.isFinite(value)) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `--threshold "${expression}" is not "<metric><operator><number>", for example "p99_latency_ms<8000". Operators: ${THRESHOLD_OPERATORS.join(" ")}.`,
    );
  }
  if (!isMetric(metric)) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `--threshold "${expression}" names an unknown metric "${metric}". Allowed: ${THRESHOLD_METRICS.join(", ")}.`,
    );
  }
  return { expression: expression.trim(), metric, operator: operator as ThresholdOperator, value };
}

/**
 * Checks each threshold against `figures` (one value, or null for no samples, per metric).
 * A metric with no samples fails its threshold: a CI gate must not pass on a run that measured
 * nothing.
 */
export function evaluateThresholds(
  thresholds: readonly Threshold[],
  figures: Readonly<Record<ThresholdMetric, number | null>>,
): ThresholdResult[] {
  return thresholds.map((threshold) => {
    const actual = figures[threshold.metric];
    return { ...threshold, actual, passed: actual !== null && compare(actual, threshold.operator, threshold.value) };
  });
}

/** True when `actual operator limit` holds. */
export function compare(actual: number, operator: ThresholdOperator, limit: number): boolean {
  switch (operator) {
    case "<":
      return actual < limit;
    case "<=":
      return actual <= limit;
    case ">":
      return actual > limit;
    case ">=":
      return actual >= limit;
    default: {
      const unknown: never = operator;
      throw new Error(`unknown threshold operator ${String(unknown)}`);
    }
  }
}

function isMetric(name: string): name is ThresholdMetric {
  return (THRESHOLD_METRICS as readonly string[]).includes(name);
}
