/**
 * Thresholds on a comparison: `--threshold "p99_latency_ms_ratio<1.1"` (B / A) or
 * `"failure_rate_delta<=0"` (B − A), for every metric a run's `--threshold` may name
 * (thresholds.ts). The operators and the number are parsed by thresholds.ts's own parser.
 */
import { LifelineError } from "../../../shared/errors.js";
import { type LoadReport, thresholdFigures } from "../report/load-report.js";
import { compare, parseThreshold, THRESHOLD_METRICS, type ThresholdOperator } from "../verdicts/thresholds.js";

/** A parsed comparison threshold. */
export interface ComparisonThreshold {
  /** The text as given. */
  expression: string;
  /** The name as given: `<metric>_ratio` or `<metric>_delta`. */
  metric: string;
  /** The run metric it compares (thresholds.ts's name). */
  base: string;
  /** `ratio`: B / A; `delta`: B − A. */
  kind: "ratio" | "delta";
  operator: ThresholdOperator;
  value: number;
}

/** A comparison threshold checked (compare.json `thresholds[]`). */
export interface ComparisonThresholdResult extends ComparisonThreshold {
  /** The metric's figure in A and in B; null when that report lacks it. */
  a: number | null;
  b: number | null;
  /** B / A or B − A; null when a figure is absent, or for a ratio when only A is 0. A threshold on null fails. */
  actual: number | null;
  passed: boolean;
  /** Why `actual` is null, for the output. */
  note?: string;
}

const NAME = /^\s*([a-z0-9_]+?)_(ratio|delta)\s*((?:<=|>=|<|>).*)$/i;

/**
 * Parses `<metric>_ratio<op><number>` or `<metric>_delta<op><number>`.
 * @throws ERR_INVALID_OPTIONS naming the expression and what is allowed.
 */
export function parseComparisonThreshold(expression: string): ComparisonThreshold {
  const match = NAME.exec(expression);
  const base = match?.[1]?.toLowerCase();
  const kind = match?.[2]?.toLowerCase();
  const rest = match?.[3];
  if (base !== undefined && (kind === "ratio" || kind === "delta") && rest !== undefined) {
    try {
      const parsed = parseThreshold(`${base}${rest}`);
      return {
        expression: expression.trim(),
        metric: `${base}_${kind}`,
        base,
        kind,
        operator: parsed.operator,
        value: parsed.value,
      };
    } catch {
      // The message below says what is allowed.
    }
  }
  throw new LifelineError(
    "ERR_INVALID_OPTIONS",
    `--threshold "${expression}" is not "<metric>_ratio<operator><number>" (B / A) or "<metric>_delta<operator><number>" (B − A), for example "p99_latency_ms_ratio<1.1" or "failure_rate_delta<=0". Operators: < <= > >=. Metrics: ${THRESHOLD_METRICS.join(", ")}.`,
  );
}

/** Checks each threshold against reports A and B (parsed report.json objects). */
export function evaluateComparisonThresholds(
  thresholds: readonly ComparisonThreshold[],
  a: Record<string, unknown>,
  b: Record<string, unknown>,
): ComparisonThresholdResult[] {
  const figuresA = figuresOf(a);
  const figuresB = figuresOf(b);
  return thresholds.map((threshold) => {
    const fromA = figuresA[threshold.base] ?? null;
    const fromB = figuresB[threshold.base] ?? null;
    const { actual, note } = difference(threshold, fromA, fromB);
    const result: ComparisonThresholdResult = {
      ...threshold,
      a: fromA,
      b: fromB,
      actual,
      passed: actual !== null && compare(actual, threshold.operator, threshold.value),
    };
    if (note !== undefined) result.note = note;
    return result;
  });
}

function difference(
  threshold: ComparisonThreshold,
  a: number | null,
  b: number | null,
): { actual: number | null; note?: string } {
  const absent = [a === null ? "A" : "", b === null ? "B" : ""].filter((run) => run !== "").join(" and ");
  if (a === null || b === null) return { actual: null, note: `${threshold.base} is absent from ${absent}` };
  if (threshold.kind === "delta") return { actual: b - a };
  if (a === 0) {
    // 0 → 0 is no change; 0 → anything else has no finite ratio.
    return b === 0 ? { actual: 1 } : { actual: null, note: `${threshold.base} is 0 in A: no ratio` };
  }
  return { actual: b / a };
}

/**
 * Each threshold metric's figure of a parsed report.json. A report of this schema that lacks a
 * section the figures read (written before the section was added) gives no figures: its
 * thresholds then fail as absent, as `lifeline load`'s do on a figure without samples.
 */
function figuresOf(report: Record<string, unknown>): Partial<Record<string, number | null>> {
  try {
    return thresholdFigures(report as unknown as LoadReport);
  } catch {
    return {};
  }
}
