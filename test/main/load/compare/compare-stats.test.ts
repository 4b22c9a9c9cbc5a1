/**
 * The statistics of `lifeline load compare` (src/main/load/compare/compare-stats.ts): seeded bootstrap
 * intervals of percentile and mean differences, and Newcombe's interval of a difference of two
 * proportions. Every trial draws its samples from a seeded PRNG, so each test gives the same
 * result on every run: "within noise in ≥ 90 % of trials" is a fixed count, not a flaky rate.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  bootstrapMeanDifference,
  bootstrapPercentileDifferences,
  type ClusteredSample,
  type Interval,
  independent,
  normalQuantile,
  proportionDifference,
} from "../../../../src/main/load/compare/compare-stats.js";
import { mulberry32 } from "../../../../src/shared/prng.js";

const TRIALS = 100;
const OPTIONS = { resamples: 400, confidence: 0.95 };

/** `n` latencies in ms from a log-normal distribution (median `median`), as request latencies are skewed. */
function latencies(random: () => number, n: number, median: number): number[] {
  return Array.from({ length: n }, () => {
    // Box–Muller: a standard normal from two uniforms.
    const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    return median * Math.exp(0.5 * z);
  });
}

const contains = (interval: Interval | undefined, value: number) =>
  interval !== undefined && interval.low <= value && value <= interval.high;

describe("mulberry32, the resampling PRNG", () => {
  it("gives the same sequence for the same seed, uniform in [0, 1)", () => {
    const first = mulberry32(42);
    const second = mulberry32(42);
    const values = Array.from({ length: 10_000 }, () => first());
    expect(Array.from({ length: 10_000 }, () => second())).toEqual(values);
    expect(values.every((value) => value >= 0 && value < 1)).toBe(true);
    const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
    expect(mean).toBeGreaterThan(0.48);
    expect(mean).toBeLessThan(0.52);
    expect(mulberry32(43)()).not.toBe(mulberry32(42)());
  });
});

describe("normalQuantile", () => {
  it("gives the textbook z values", () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959964, 4);
    expect(normalQuantile(0.95)).toBeCloseTo(1.644854, 4);
    expect(normalQuantile(0.995)).toBeCloseTo(2.575829, 4);
    expect(normalQuantile(0.5)).toBeCloseTo(0, 6);
    expect(normalQuantile(0.025)).toBeCloseTo(-1.959964, 4);
  });

  it("refuses a level outside (0, 1)", () => {
    expect(() => normalQuantile(1)).toThrow(RangeError);
    expect(() => normalQuantile(0)).toThrow(RangeError);
  });
});

describe("bootstrap of percentile differences", () => {
  it("calls two samples of the same distribution within noise (p50 and p99) in at least 90 % of seeded trials", () => {
    let p50 = 0;
    let p99 = 0;
    for (let trial = 1; trial <= TRIALS; trial++) {
      const random = mulberry32(trial);
      const a = latencies(random, 300, 200);
      const b = latencies(random, 300, 200);
      const [i50, i99] = bootstrapPercentileDifferences(independent(a), independent(b), [50, 99], {
        ...OPTIONS,
        seed: trial,
      });
      if (contains(i50, 0)) p50++;
      if (contains(i99, 0)) p99++;
    }
    expect(p50).toBeGreaterThanOrEqual(0.9 * TRIALS);
    expect(p99).toBeGreaterThanOrEqual(0.9 * TRIALS);
  });

  it("detects a distribution shifted by 30 % in at least 95 % of seeded trials, with the interval on the right side", () => {
    let detected = 0;
    for (let trial = 1; trial <= TRIALS; trial++) {
      const random = mulberry32(1000 + trial);
      const a = latencies(random, 300, 200);
      const b = latencies(random, 300, 260);
      const [i50] = bootstrapPercentileDifferences(independent(a), independent(b), [50], { ...OPTIONS, seed: trial });
      if (i50 !== undefined && i50.low > 0) detected++;
      // Never the wrong way round.
      expect(i50?.high).toBeGreaterThan(0);
    }
    expect(detected).toBeGreaterThanOrEqual(0.95 * TRIALS);
  });

  it("gives the same interval for the same seed, and another for another seed", () => {
    const random = mulberry32(9);
    const a = independent(latencies(random, 100, 100));
    const b = independent(latencies(random, 100, 110));
    const once = bootstrapPercentileDifferences(a, b, [50, 90], { ...OPTIONS, seed: 5 });
    expect(bootstrapPercentileDifferences(a, b, [50, 90], { ...OPTIONS, seed: 5 })).toEqual(once);
    expect(bootstrapPercentileDifferences(a, b, [50, 90], { ...OPTIONS, seed: 6 })).not.toEqual(once);
  });

  it("widens the interval when values move together in clusters (a busy moment of one run)", () => {
    const random = mulberry32(3);
    // Ten periods, each with its own offset shared by its 30 requests.
    const clustered = (): ClusteredSample => {
      const values: number[] = [];
      const clusters: number[] = [];
      for (let block = 0; block < 10; block++) {
        const offset = 400 * random();
        for (const value of latencies(random, 30, 200)) {
          values.push(value + offset);
          clusters.push(block);
        }
      }
      return { values, clusters };
    };
    const a = clustered();
    const b = clustered();
    const options = { ...OPTIONS, seed: 1 };
    const [byBlock] = bootstrapPercentileDifferences(a, b, [50], options);
    const [oneByOne] = bootstrapPercentileDifferences(independent(a.values), independent(b.values), [50], options);
    const width = (interval: Interval | undefined) => (interval === undefined ? 0 : interval.high - interval.low);
    expect(width(byBlock)).toBeGreaterThan(1.5 * width(oneByOne));
  });

  it("keeps every interval between the extreme differences of the samples (property)", () => {
    const sample = fc.array(fc.double({ min: 0, max: 1e5, noNaN: true }), { minLength: 1, maxLength: 60 });
    fc.assert(
      fc.property(sample, sample, fc.integer({ min: 0, max: 2 ** 31 }), (a, b, seed) => {
        const intervals = bootstrapPercentileDifferences(independent(a), independent(b), [1, 50, 99], {
          resamples: 100,
          confidence: 0.9,
          seed,
        });
        for (const interval of intervals) {
          expect(interval.low).toBeLessThanOrEqual(interval.high);
          expect(interval.low).toBeGreaterThanOrEqual(Math.min(...b) - Math.max(...a));
          expect(interval.high).toBeLessThanOrEqual(Math.max(...b) - Math.min(...a));
        }
      }),
      { numRuns: 50 },
    );
  });

  it("refuses an empty sample", () => {
    expect(() =>
      bootstrapPercentileDifferences(independent([]), independent([1]), [50], { ...OPTIONS, seed: 1 }),
    ).toThrow(RangeError);
  });
});

describe("bootstrap of mean and sum differences", () => {
  /** Requests per prompt: 1, and each retry with probability `p` (at most 3 retries). */
  function requestsPerPrompt(random: () => number, n: number, p: number): number[] {
    return Array.from({ length: n }, () => {
      let requests = 1;
      while (requests < 4 && random() < p) requests++;
      return requests;
    });
  }

  it("calls two samples of the same distribution within noise in at least 90 % of seeded trials", () => {
    let within = 0;
    for (let trial = 1; trial <= TRIALS; trial++) {
      const random = mulberry32(2000 + trial);
      const a = requestsPerPrompt(random, 100, 0.4);
      const b = requestsPerPrompt(random, 100, 0.4);
      if (contains(bootstrapMeanDifference(independent(a), independent(b), { ...OPTIONS, seed: trial }), 0)) within++;
    }
    expect(within).toBeGreaterThanOrEqual(0.9 * TRIALS);
  });

  it("detects a higher retry probability, as a mean and as a sum", () => {
    const random = mulberry32(77);
    const a = independent(requestsPerPrompt(random, 100, 0.2));
    const b = independent(requestsPerPrompt(random, 100, 0.6));
    const mean = bootstrapMeanDifference(a, b, { ...OPTIONS, seed: 1 });
    const sum = bootstrapMeanDifference(a, b, { ...OPTIONS, seed: 1, sum: true });
    expect(mean.low).toBeGreaterThan(0);
    expect(sum.low).toBeGreaterThan(0);
    // A sum over 100 prompts is 100 means.
    expect(sum.low).toBeCloseTo(100 * mean.low, 6);
  });
});

describe("proportionDifference (Newcombe's hybrid score interval)", () => {
  it("matches Newcombe's worked example: 56/70 − 48/80 gives 0.0524 to 0.3339", () => {
    const interval = proportionDifference(48, 80, 56, 70, 0.95);
    expect(interval?.low).toBeCloseTo(0.0524, 3);
    expect(interval?.high).toBeCloseTo(0.3339, 3);
  });

  it("calls 0 of 60 against 0 of 60 within noise, and 3 of 60 against 30 of 60 a difference", () => {
    expect(contains(proportionDifference(0, 60, 0, 60, 0.95) ?? undefined, 0)).toBe(true);
    expect(contains(proportionDifference(0, 60, 2, 60, 0.95) ?? undefined, 0)).toBe(true);
    expect(proportionDifference(3, 60, 30, 60, 0.95)?.low).toBeGreaterThan(0);
    expect(proportionDifference(30, 60, 3, 60, 0.95)?.high).toBeLessThan(0);
  });

  it("has no interval for a run without trials", () => {
    expect(proportionDifference(0, 0, 1, 10, 0.95)).toBeNull();
  });
});
