/**
 * `lifeline load --threshold` (src/main/load/verdicts/thresholds.ts): k6-style expressions, their parsing
 * and their verdicts, as the exit code 99 depends on them.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  compare,
  evaluateThresholds,
  parseThreshold,
  THRESHOLD_METRICS,
  THRESHOLD_OPERATORS,
  type ThresholdMetric,
} from "../../../../src/main/load/verdicts/thresholds.js";

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

const figures = (over: Partial<Record<ThresholdMetric, number | null>>) =>
  Object.fromEntries(THRESHOLD_METRICS.map((metric) => [metric, metric in over ? over[metric] : 0])) as Record<
    ThresholdMetric,
    number | null
  >;

describe("threshold expressions", () => {
  it("every metric and operator parses, with or without spaces", () => {
    for (const metric of THRESHOLD_METRICS) {
      for (const operator of THRESHOLD_OPERATORS) {
        expect(parseThreshold(`${metric}${operator}1.5`)).toMatchObject({ metric, operator, value: 1.5 });
        expect(parseThreshold(` ${metric} ${operator} 2 `)).toMatchObject({ metric, operator, value: 2 });
      }
    }
  });

  it("<= and >= are read as one operator, not < or > followed by a bad number", () => {
    expect(parseThreshold("failure_rate<=0.01")).toMatchObject({ operator: "<=", value: 0.01 });
    expect(parseThreshold("retries>=3")).toMatchObject({ operator: ">=", value: 3 });
  });

  it.each([
    ["an unknown metric", "p95_latency_ms<100"],
    ["a missing operator", "p99_latency_ms 8000"],
    ["an unknown operator", "p99_latency_ms==8000"],
    ["a missing number", "failure_rate<"],
    ["text after the number", "failure_rate<0.1x"],
    ["an empty expression", ""],
  ])("%s is refused with ERR_INVALID_OPTIONS", (_case, expression) => {
    expect(codeOf(() => parseThreshold(expression))).toBe("ERR_INVALID_OPTIONS");
  });

  it("the refusal of an unknown metric lists the metrics allowed", () => {
    expect(() => parseThreshold("p95_latency_ms<100")).toThrow(/Allowed: p50_latency_ms, p90_latency_ms/);
  });
});

describe("verdicts", () => {
  it("each operator holds exactly when its comparison does", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), fc.double({ noNaN: true }), (actual, limit) => {
        expect(compare(actual, "<", limit)).toBe(actual < limit);
        expect(compare(actual, "<=", limit)).toBe(actual <= limit);
        expect(compare(actual, ">", limit)).toBe(actual > limit);
        expect(compare(actual, ">=", limit)).toBe(actual >= limit);
      }),
    );
  });

  it("a threshold passes or fails on the figure of its own metric", () => {
    const results = evaluateThresholds(
      [parseThreshold("p99_latency_ms<8000"), parseThreshold("amplification<1.5")],
      figures({ p99_latency_ms: 120, amplification: 1.8 }),
    );
    expect(results.map((r) => [r.expression, r.actual, r.passed])).toEqual([
      ["p99_latency_ms<8000", 120, true],
      ["amplification<1.5", 1.8, false],
    ]);
  });

  it("a threshold on a metric with no samples fails (a run that measured nothing must not pass CI)", () => {
    const [result] = evaluateThresholds([parseThreshold("p99_ttft_ms<100000")], figures({ p99_ttft_ms: null }));
    expect(result).toMatchObject({ actual: null, passed: false });
  });
});
