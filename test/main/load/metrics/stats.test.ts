/**
 * `lifeline load`'s distributions (src/main/load/metrics/stats.ts): nearest-rank percentiles (the exact
 * reference the sketch's are held to), the histograms and summaries of report.json, checked as
 * properties over arbitrary samples.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Sketch } from "../../../../src/main/load/metrics/sketch.js";
import { histogram, percentile, round3, summarize, summarizeSketch } from "../../../../src/main/load/metrics/stats.js";

const samples = fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 200 });
const sortedOf = (values: number[]) => [...values].sort((a, b) => a - b);

describe("percentiles", () => {
  it("a percentile is always one of the samples, between the smallest and the largest", () => {
    fc.assert(
      fc.property(samples, fc.double({ min: 0, max: 100, noNaN: true }), (values, p) => {
        const sorted = sortedOf(values);
        const value = percentile(sorted, p);
        expect(sorted).toContain(value);
        expect(value).toBeGreaterThanOrEqual(sorted[0] as number);
        expect(value).toBeLessThanOrEqual(sorted[sorted.length - 1] as number);
      }),
    );
  });

  it("a higher percentile is never smaller than a lower one", () => {
    fc.assert(
      fc.property(
        samples,
        fc.double({ min: 0, max: 100, noNaN: true }),
        fc.double({ min: 0, max: 100, noNaN: true }),
        (values, a, b) => {
          const sorted = sortedOf(values);
          const [low, high] = a <= b ? [a, b] : [b, a];
          expect(percentile(sorted, high)).toBeGreaterThanOrEqual(percentile(sorted, low) as number);
        },
      ),
    );
  });

  it("at least p % of the samples are at or below the p-th percentile (nearest rank)", () => {
    fc.assert(
      fc.property(samples, fc.integer({ min: 1, max: 100 }), (values, p) => {
        const sorted = sortedOf(values);
        const value = percentile(sorted, p) as number;
        const atOrBelow = sorted.filter((v) => v <= value).length;
        expect(atOrBelow / sorted.length).toBeGreaterThanOrEqual(p / 100 - 1e-12);
      }),
    );
  });

  it("p99 of 1..100 is 99 and p50 is 50; p0 is the minimum and p100 the maximum", () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(sorted, 99)).toBe(99);
    expect(percentile(sorted, 50)).toBe(50);
    expect(percentile(sorted, 0)).toBe(1);
    expect(percentile(sorted, 100)).toBe(100);
  });

  it("no samples give null, and p outside [0, 100] is refused", () => {
    expect(percentile([], 50)).toBeNull();
    expect(() => percentile([1], 101)).toThrow(RangeError);
    expect(() => percentile([1], Number.NaN)).toThrow(RangeError);
  });
});

describe("histograms", () => {
  it("the bins' counts add up to the samples, and edges are one more than bins, ascending", () => {
    fc.assert(
      fc.property(samples, (values) => {
        const h = histogram(sortedOf(values));
        expect(h.counts.reduce((sum, n) => sum + n, 0)).toBe(values.length);
        expect(h.edges.length).toBe(h.counts.length + 1);
        for (let i = 1; i < h.edges.length; i++) expect(h.edges[i]).toBeGreaterThan(h.edges[i - 1] as number);
      }),
    );
  });

  it("whole numbers over a short range get one bin per value (requests per prompt)", () => {
    expect(histogram([1, 1, 1, 2, 4])).toEqual({ edges: [1, 2, 3, 4, 5], counts: [3, 1, 0, 1] });
  });

  it("equal samples fall in one bin; no samples give no bins", () => {
    expect(histogram([2.5, 2.5])).toEqual({ edges: [2.5, 3.5], counts: [2] });
    expect(histogram([])).toEqual({ edges: [], counts: [] });
  });
});

describe("summaries", () => {
  it("an empty summary has count 0 and null figures, so a threshold on it cannot pass silently", () => {
    const summary = summarize([]);
    expect(summary).toMatchObject({ count: 0, min: null, mean: null, p50: null, p99: null, max: null });
  });

  it("a summary does not reorder the caller's array", () => {
    const values = [3, 1, 2];
    expect(summarize(values)).toMatchObject({ count: 3, min: 1, max: 3, mean: 2 });
    expect(values).toEqual([3, 1, 2]);
  });
});

describe("summaries from sketches", () => {
  it("a summary's percentiles are within 1 % of the nearest-rank ones, and count, min, max and mean are exact", () => {
    fc.assert(
      fc.property(samples, (values) => {
        const sorted = sortedOf(values);
        const summary = summarize(values);
        expect(summary.count).toBe(values.length);
        expect(summary.min).toBe(round3(sorted[0] as number));
        expect(summary.max).toBe(round3(sorted[sorted.length - 1] as number));
        expect(summary.mean).toBe(round3(values.reduce((sum, v) => sum + v, 0) / values.length));
        for (const p of [50, 90, 95, 99] as const) {
          const exact = percentile(sorted, p) as number;
          // 1 %, plus the report's rounding to 3 decimals.
          expect(Math.abs((summary[`p${p}`] as number) - exact)).toBeLessThanOrEqual(0.01 * exact + 0.0005 + 1e-9);
        }
      }),
    );
  });

  it("a summary rebuilt from its sketch has the same figures, and its histogram counts every sample", () => {
    fc.assert(
      fc.property(samples, (values) => {
        const summary = summarize(values);
        const rebuilt = summarizeSketch(Sketch.fromJSON(summary.sketch));
        expect({ ...rebuilt, histogram: null }).toEqual({ ...summary, histogram: null });
        expect(rebuilt.histogram.counts.reduce((sum, n) => sum + n, 0)).toBe(values.length);
        expect(rebuilt.histogram.edges.length).toBe(rebuilt.histogram.counts.length + 1);
      }),
    );
  });

  it("whole numbers a few apart keep one bin per value when rebuilt from a sketch (requests per prompt)", () => {
    const summary = summarize([1, 1, 1, 2, 4]);
    expect(summarizeSketch(Sketch.fromJSON(summary.sketch)).histogram).toEqual(summary.histogram);
  });
});
