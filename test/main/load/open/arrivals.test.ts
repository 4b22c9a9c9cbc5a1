/**
 * The open model's arrival schedule (src/main/load/open/arrivals.ts) without time: constant and
 * Poisson arrivals over constant rates and linear ramps, checked by count, mean gap and index of
 * dispersion over seeded runs, and as properties over arbitrary profiles.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  arrivalTimes,
  expectedArrivals,
  profileDurationMs,
  seededRandom,
} from "../../../../src/main/load/open/arrivals.js";
import type { ArrivalProcess, ArrivalStage } from "../../../../src/main/load/options/open-options.js";

const times = (stages: ArrivalStage[], process: ArrivalProcess, seed = 1, startRate?: number) => [
  ...arrivalTimes({ stages, process, seed, ...(startRate === undefined ? {} : { startRate }) }),
];

/** Arrivals per bin of `binMs` over `[0, durationMs)`. */
function binCounts(at: number[], durationMs: number, binMs: number): number[] {
  const counts = new Array<number>(Math.ceil(durationMs / binMs)).fill(0);
  for (const t of at) counts[Math.floor(t / binMs)] = (counts[Math.floor(t / binMs)] ?? 0) + 1;
  return counts;
}

function meanAndVariance(values: number[]): { mean: number; variance: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (values.length - 1);
  return { mean, variance };
}

const stageArb = fc.record({
  durationMs: fc.integer({ min: 0, max: 20_000 }),
  rate: fc.double({ min: 0, max: 200, noNaN: true }),
});

describe("constant arrivals", () => {
  it("a constant rate gives R × T arrivals, evenly spaced 1/R apart from time 0", () => {
    const at = times([{ durationMs: 10_000, rate: 50 }], "constant", 1, 50);
    expect(at).toHaveLength(500);
    expect(at[0]).toBe(0);
    for (let i = 1; i < at.length; i++) expect((at[i] as number) - (at[i - 1] as number)).toBeCloseTo(20, 6);
  });

  it("over any profile the count is the expected count rounded up, and times ascend within the profile", () => {
    fc.assert(
      fc.property(
        fc.array(stageArb, { minLength: 1, maxLength: 5 }),
        fc.double({ min: 0, max: 200, noNaN: true }),
        (stages, start) => {
          const at = times(stages, "constant", 0, start);
          const expected = expectedArrivals(stages, start);
          // Arrival k comes when Λ reaches k (k = 0, 1, …), so there are ⌈Λ_end⌉ of them (rounding aside).
          expect(Math.abs(at.length - Math.ceil(expected))).toBeLessThanOrEqual(1);
          for (let i = 1; i < at.length; i++) expect(at[i]).toBeGreaterThanOrEqual(at[i - 1] as number);
          for (const t of at) {
            expect(t).toBeGreaterThanOrEqual(0);
            expect(t).toBeLessThan(profileDurationMs(stages));
          }
        },
      ),
    );
  });

  it("a ramp from 0 to R over T gives R·T/2 arrivals, and its rate grows linearly", () => {
    const at = times([{ durationMs: 20_000, rate: 100 }], "constant");
    expect(at).toHaveLength(1000);
    // Per 2 s bin, the expected count is the mean rate over the bin × 2 s: 10, 30, 50, … 190.
    const counts = binCounts(at, 20_000, 2000);
    expect(counts.map((count, i) => Math.abs(count - (20 * i + 10)) <= 1)).toEqual(counts.map(() => true));
  });

  it("stages ramp from one target to the next (k6's ramping-arrival-rate), holding when a target repeats", () => {
    const stages = [
      { durationMs: 10_000, rate: 10 },
      { durationMs: 10_000, rate: 50 },
      { durationMs: 10_000, rate: 50 },
    ];
    const at = times(stages, "constant");
    // 0→10 over 10 s: 50; 10→50 over 10 s: 300; 50 held for 10 s: 500.
    expect(at).toHaveLength(850);
    const expected = [50, 300, 500];
    const counts = binCounts(at, 30_000, 10_000);
    expect(counts.map((c, i) => Math.abs(c - (expected[i] ?? 0)) <= 1)).toEqual([true, true, true]);
    // Within the held stage the spacing is 1/50 s.
    const held = at.filter((t) => t >= 20_500);
    expect((held[1] as number) - (held[0] as number)).toBeCloseTo(20, 3);
  });

  it("a stage at rate 0 throughout has no arrival", () => {
    expect(
      times(
        [
          { durationMs: 5000, rate: 0 },
          { durationMs: 5000, rate: 0 },
        ],
        "constant",
        1,
        0,
      ).filter((t) => t > 0),
    ).toEqual([]);
  });
});

describe("Poisson arrivals", () => {
  it("over 200 seeded runs of 10 s at 50/s, the mean count is R·T within 1 % and counts vary as a Poisson's (variance ≈ mean)", () => {
    const counts = Array.from(
      { length: 200 },
      (_, seed) => times([{ durationMs: 10_000, rate: 50 }], "poisson", seed, 50).length,
    );
    const { mean, variance } = meanAndVariance(counts);
    // Standard error of the mean: √(500/200) ≈ 1.6, so 1 % (5) is about 3 standard errors.
    expect(Math.abs(mean - 500) / 500).toBeLessThan(0.01);
    // The index of dispersion of a Poisson count is 1; over 200 runs its estimate has sd ≈ 0.1.
    expect(variance / mean).toBeGreaterThan(0.7);
    expect(variance / mean).toBeLessThan(1.3);
  });

  it("within one run, gaps average 1/R and counts per 1 s bin have an index of dispersion near 1", () => {
    const at = times([{ durationMs: 200_000, rate: 40 }], "poisson", 7, 40);
    const gaps = at.slice(1).map((t, i) => t - (at[i] as number));
    expect(Math.abs(meanAndVariance(gaps).mean - 25) / 25).toBeLessThan(0.03);
    // Exponential gaps: the standard deviation equals the mean.
    expect(Math.sqrt(meanAndVariance(gaps).variance) / 25).toBeGreaterThan(0.95);
    expect(Math.sqrt(meanAndVariance(gaps).variance) / 25).toBeLessThan(1.05);
    const bins = meanAndVariance(binCounts(at, 200_000, 1000));
    expect(bins.variance / bins.mean).toBeGreaterThan(0.8);
    expect(bins.variance / bins.mean).toBeLessThan(1.2);
  });

  it("a constant process's bins barely vary (index of dispersion near 0), unlike a Poisson one's", () => {
    const bins = meanAndVariance(
      binCounts(times([{ durationMs: 100_000, rate: 40 }], "constant", 1, 40), 100_000, 1000),
    );
    expect(bins.variance / bins.mean).toBeLessThan(0.05);
  });

  it("a Poisson ramp follows the ramp's intensity: the second half of 0→R holds about three quarters", () => {
    const runs = Array.from({ length: 50 }, (_, seed) => times([{ durationMs: 10_000, rate: 100 }], "poisson", seed));
    const total = runs.reduce((sum, at) => sum + at.length, 0);
    const late = runs.reduce((sum, at) => sum + at.filter((t) => t >= 5000).length, 0);
    expect(Math.abs(total / 50 - 500) / 500).toBeLessThan(0.02);
    expect(Math.abs(late / total - 0.75)).toBeLessThan(0.02);
  });

  it("the same seed gives the same times; another seed other times", () => {
    const stages = [{ durationMs: 2000, rate: 30 }];
    expect(times(stages, "poisson", 3, 30)).toEqual(times(stages, "poisson", 3, 30));
    expect(times(stages, "poisson", 4, 30)).not.toEqual(times(stages, "poisson", 3, 30));
  });
});

describe("seededRandom", () => {
  it("stays within [0, 1) and spreads evenly over ten bins", () => {
    const random = seededRandom(42);
    const bins = new Array<number>(10).fill(0);
    let outside = 0;
    for (let i = 0; i < 100_000; i++) {
      const u = random();
      if (!(u >= 0 && u < 1)) outside++;
      bins[Math.floor(u * 10)] = (bins[Math.floor(u * 10)] ?? 0) + 1;
    }
    expect(outside).toBe(0);
    for (const count of bins) expect(Math.abs(count - 10_000)).toBeLessThan(400);
  });
});
