/**
 * The mergeable sketch behind report.json's percentiles (src/main/load/metrics/sketch.ts): every
 * quantile within 1 % of the exact nearest-rank one, and a merge that equals, bucket for bucket,
 * the sketch of the union. Property tests over samples with heavy tails, duplicates, zeros and
 * values from 1e-9 to 1e12.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SKETCH_RELATIVE_ACCURACY, Sketch } from "../../../../src/main/load/metrics/sketch.js";
import { percentile } from "../../../../src/main/load/metrics/stats.js";

/** Values as latencies and token rates are: from tiny to huge, heavy-tailed, often repeated. */
const value = fc.oneof(
  fc.double({ min: 1e-9, max: 1e12, noNaN: true, noDefaultInfinity: true }),
  // Heavy tail: e^x for x uniform gives a log-uniform spread over 26 orders of magnitude.
  fc.double({ min: -20, max: 28, noNaN: true }).map(Math.exp),
  fc.constantFrom(0, 1, 2, 3, 100, 1000.5),
  fc.integer({ min: 1, max: 50 }),
);
const samples = fc.array(value, { minLength: 1, maxLength: 300 });
const percentiles = fc.oneof(
  fc.constantFrom(0, 50, 90, 95, 99, 99.9, 100),
  fc.double({ min: 0, max: 100, noNaN: true }),
);

function sketchOf(values: readonly number[]): Sketch {
  const sketch = new Sketch();
  for (const v of values) sketch.add(v);
  return sketch;
}

/** |estimate − exact| within α of exact (plus the rounding of the floating-point logarithm). */
function expectWithinAccuracy(estimate: number | null, exact: number | null): void {
  expect(estimate).not.toBeNull();
  expect(exact).not.toBeNull();
  const error = Math.abs((estimate as number) - (exact as number));
  expect(error).toBeLessThanOrEqual(SKETCH_RELATIVE_ACCURACY * Math.abs(exact as number) * (1 + 1e-9) + 1e-300);
}

/** Differences, such as a retry's sleep minus the server's hint: either sign. */
const signed = fc.array(
  fc.oneof(
    value,
    value.map((v) => -v),
  ),
  { minLength: 1, maxLength: 300 },
);

describe("a sketch's quantiles", () => {
  it("negative values too: every quantile within 1 % of the exact one, and merge equals the union's sketch", () => {
    fc.assert(
      fc.property(signed, signed, percentiles, (a, b, p) => {
        const sorted = [...a].sort((x, y) => x - y);
        expectWithinAccuracy(sketchOf(a).quantile(p), percentile(sorted, p));
        const merged = sketchOf(a).merge(Sketch.fromJSON(JSON.parse(JSON.stringify(sketchOf(b).toJSON()))));
        const union = sketchOf([...a, ...b]);
        expect(merged.toJSON().negativeBuckets).toEqual(union.toJSON().negativeBuckets);
        expect(merged.toJSON().buckets).toEqual(union.toJSON().buckets);
      }),
      { numRuns: 300 },
    );
  });

  it("every quantile is within 1 % of the exact nearest-rank percentile", () => {
    fc.assert(
      fc.property(samples, percentiles, (values, p) => {
        const sorted = [...values].sort((a, b) => a - b);
        expectWithinAccuracy(sketchOf(values).quantile(p), percentile(sorted, p));
      }),
      { numRuns: 500 },
    );
  });

  it("count, sum, min and max are exact, and p0 and p100 are the minimum and the maximum", () => {
    fc.assert(
      fc.property(samples, (values) => {
        const sketch = sketchOf(values);
        expect(sketch.count).toBe(values.length);
        expect(sketch.min).toBe(Math.min(...values));
        expect(sketch.max).toBe(Math.max(...values));
        expect(sketch.sum).toBe(values.reduce((sum, v) => sum + v, 0));
        expect(sketch.quantile(100)).toBe(sketch.max);
        expect(sketch.quantile(0)).toBe(sketch.min);
      }),
    );
  });

  it("zeros read as 0, and an empty sketch has no quantile", () => {
    expect(sketchOf([0, 0, 0, 5]).quantile(50)).toBe(0);
    expect(new Sketch().quantile(50)).toBeNull();
    expect(new Sketch().toJSON()).toEqual({
      relativeAccuracy: SKETCH_RELATIVE_ACCURACY,
      count: 0,
      sum: 0,
      min: null,
      max: null,
      zeroCount: 0,
      buckets: [],
    });
  });

  it("refuses NaN, infinities and a percentile outside [0, 100]", () => {
    expect(() => new Sketch().add(Number.NaN)).toThrow(RangeError);
    expect(() => new Sketch().add(Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(() => sketchOf([1]).quantile(100.5)).toThrow(RangeError);
  });
});

describe("merging sketches", () => {
  it("merge(A, B) equals the sketch of the union, bucket for bucket", () => {
    fc.assert(
      fc.property(samples, samples, (a, b) => {
        const merged = sketchOf(a).merge(sketchOf(b)).toJSON();
        const union = sketchOf([...a, ...b]).toJSON();
        expect(merged.buckets).toEqual(union.buckets);
        expect(merged.zeroCount).toBe(union.zeroCount);
        expect({ ...merged, sum: 0 }).toEqual({ ...union, sum: 0 });
        // Sums are added in another order: equal up to floating-point rounding.
        expect(merged.sum).toBeCloseTo(union.sum, -Math.ceil(Math.log10(Math.abs(union.sum) + 1)) + 9);
      }),
    );
  });

  it("merged quantiles are within 1 % of the union's nearest-rank percentiles", () => {
    fc.assert(
      fc.property(samples, samples, percentiles, (a, b, p) => {
        const union = [...a, ...b].sort((x, y) => x - y);
        expectWithinAccuracy(sketchOf(a).merge(sketchOf(b)).quantile(p), percentile(union, p));
      }),
    );
  });

  it("an empty sketch merges as nothing", () => {
    const sketch = sketchOf([1, 2, 3]);
    expect(sketch.merge(new Sketch()).toJSON()).toEqual(sketchOf([1, 2, 3]).toJSON());
    expect(new Sketch().merge(sketch).toJSON()).toEqual(sketch.toJSON());
  });
});

describe("the JSON form", () => {
  it("fromJSON(toJSON()) keeps every figure, through a JSON round trip", () => {
    fc.assert(
      fc.property(samples, (values) => {
        const json = sketchOf(values).toJSON();
        expect(Sketch.fromJSON(JSON.parse(JSON.stringify(json))).toJSON()).toEqual(json);
      }),
    );
  });

  it.each([
    ["not an object", 5, /latency.e2eMs.sketch must be an object/],
    ["another accuracy", { relativeAccuracy: 0.02 }, /relativeAccuracy must be 0.01/],
    ["a fractional count", { count: 1.5 }, /\.count must be a whole number/],
    [
      "buckets out of order",
      {
        buckets: [
          [3, 1],
          [2, 1],
        ],
        count: 2,
      },
      /buckets\[1\]: indexes must be ascending/,
    ],
    ["a zero bucket count", { buckets: [[3, 0]] }, /buckets\[0\] must be \[index, count\]/],
    ["counts that do not add up", { count: 7 }, /add up to 2, not count 7/],
    ["min above max", { min: 9, max: 1 }, /min ≤ max/],
  ])("refuses %s with ERR_LOAD_REPORT naming the field", (_, change, message) => {
    const valid = sketchOf([2, 3]).toJSON();
    const json = typeof change === "object" ? { ...valid, ...change } : change;
    let caught: unknown;
    try {
      Sketch.fromJSON(json, "latency.e2eMs.sketch");
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ code: "ERR_LOAD_REPORT" });
    expect((caught as Error).message).toMatch(message);
  });
});
