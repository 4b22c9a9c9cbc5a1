/**
 * The statistics of `lifeline load compare`: seeded bootstrap intervals of the difference B − A
 * of percentiles, means and sums of two runs' samples, and Newcombe's interval of the difference
 * of two proportions. Pure functions over plain numbers; the same seed gives the same interval.
 *
 * Assumptions, stated because they do not fully hold (docs/load.md, "Comparing two runs"): the
 * bootstrap treats a run's requests (or prompts) as independent draws from one distribution.
 * Requests of one run share a host, a mock and, within a session, a conversation, so they are
 * correlated; the intervals are then narrower than the run-to-run noise, and a "better" or
 * "worse" by a small margin deserves a second pair of runs.
 */
import { percentile } from "./stats.js";

/** A two-sided interval of a difference B − A. */
export interface Interval {
  low: number;
  high: number;
}

/** How a bootstrap resamples. */
export interface BootstrapOptions {
  /** Resamples of each run. */
  resamples: number;
  /** Coverage of the interval, in (0, 1). */
  confidence: number;
  /** Seed of the resampling PRNG: the same seed gives the same interval. */
  seed: number;
}

/**
 * A seeded PRNG (mulberry32's recurrence), uniform in [0, 1). Statistical quality is ample for
 * resampling; it is not for cryptography.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Percentile bootstrap intervals of `percentile(B, p) − percentile(A, p)` (nearest rank) for each
 * `p` of `ps`, from one set of resamples. Each resample draws `a.length` values of `a` and
 * `b.length` of `b` with replacement.
 * @throws RangeError when a sample is empty.
 */
export function bootstrapPercentileDifferences(
  a: readonly number[],
  b: readonly number[],
  ps: readonly number[],
  options: BootstrapOptions,
): Interval[] {
  const sortedA = sortedSample(a, "A");
  const sortedB = sortedSample(b, "B");
  const random = seededRandom(options.seed);
  const differences = ps.map(() => new Float64Array(options.resamples));
  const countsA = new Uint32Array(sortedA.length);
  const countsB = new Uint32Array(sortedB.length);
  for (let r = 0; r < options.resamples; r++) {
    const fromA = resampledPercentiles(sortedA, ps, random, countsA);
    const fromB = resampledPercentiles(sortedB, ps, random, countsB);
    for (let i = 0; i < ps.length; i++) (differences[i] as Float64Array)[r] = (fromB[i] ?? 0) - (fromA[i] ?? 0);
  }
  return differences.map((values) => intervalOf(values, options.confidence));
}

/**
 * Percentile bootstrap interval of `mean(B) − mean(A)`, or with `sum` of `sum(B) − sum(A)`
 * (each resample keeps its run's sample count, so a sum is count × mean).
 * @throws RangeError when a sample is empty.
 */
export function bootstrapMeanDifference(
  a: readonly number[],
  b: readonly number[],
  options: BootstrapOptions & { sum?: boolean },
): Interval {
  sortedSample(a, "A");
  sortedSample(b, "B");
  const random = seededRandom(options.seed);
  const differences = new Float64Array(options.resamples);
  const statistic = (values: readonly number[]) => {
    let total = 0;
    for (let j = 0; j < values.length; j++) total += values[Math.floor(random() * values.length)] ?? 0;
    return options.sum === true ? total : total / values.length;
  };
  for (let r = 0; r < options.resamples; r++) {
    const fromA = statistic(a);
    differences[r] = statistic(b) - fromA;
  }
  return intervalOf(differences, options.confidence);
}

/**
 * Newcombe's hybrid score interval (his method 10, from two Wilson intervals) of `pB − pA`, where
 * `pA = successesA / trialsA`: sound also at rates of 0 or 1 and for small counts, where the
 * plain normal interval is not. Null when a run has no trials.
 */
export function proportionDifference(
  successesA: number,
  trialsA: number,
  successesB: number,
  trialsB: number,
  confidence: number,
): Interval | null {
  if (trialsA <= 0 || trialsB <= 0) return null;
  const z = normalQuantile((1 + confidence) / 2);
  const pA = successesA / trialsA;
  const pB = successesB / trialsB;
  const wa = wilson(pA, trialsA, z);
  const wb = wilson(pB, trialsB, z);
  const d = pB - pA;
  return {
    low: d - Math.sqrt((pB - wb.low) ** 2 + (wa.high - pA) ** 2),
    high: d + Math.sqrt((wb.high - pB) ** 2 + (pA - wa.low) ** 2),
  };
}

/**
 * The standard normal quantile: z with Φ(z) = q, by bisection on Φ (erf after Abramowitz and
 * Stegun 7.1.26, absolute error under 2e-7). 1.96 for q = 0.975.
 * @throws RangeError unless 0 < q < 1.
 */
export function normalQuantile(q: number): number {
  if (!(q > 0 && q < 1)) throw new RangeError(`normalQuantile q must be within (0, 1), got ${q}`);
  let low = -10;
  let high = 10;
  for (let i = 0; i < 100; i++) {
    const mid = (low + high) / 2;
    if (normalCdf(mid) < q) low = mid;
    else high = mid;
  }
  return (low + high) / 2;
}

function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/** The Wilson score interval of a proportion `p` of `n` trials. */
function wilson(p: number, n: number, z: number): Interval {
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/** The `(1 − confidence) / 2` and `(1 + confidence) / 2` quantiles of the resampled differences. */
function intervalOf(values: Float64Array, confidence: number): Interval {
  const sorted = Array.from(values).sort((x, y) => x - y);
  const tail = ((1 - confidence) / 2) * 100;
  return { low: percentile(sorted, tail) ?? 0, high: percentile(sorted, 100 - tail) ?? 0 };
}

function sortedSample(values: readonly number[], run: string): number[] {
  if (values.length === 0) throw new RangeError(`run ${run} has no samples to resample`);
  return [...values].sort((x, y) => x - y);
}

/**
 * The nearest-rank percentiles `ps` of one resample of `sorted`, in O(n): the resample is drawn
 * as counts per index of the sorted sample (`counts`, reused between calls), so finding its
 * ranks is one cumulative pass instead of a sort.
 */
function resampledPercentiles(
  sorted: readonly number[],
  ps: readonly number[],
  random: () => number,
  counts: Uint32Array,
): number[] {
  const n = sorted.length;
  counts.fill(0);
  for (let j = 0; j < n; j++) {
    const index = Math.floor(random() * n);
    counts[index] = (counts[index] ?? 0) + 1;
  }
  return ps.map((p) => {
    const rank = Math.max(1, Math.ceil((p / 100) * n));
    let seen = 0;
    for (let index = 0; index < n; index++) {
      seen += counts[index] ?? 0;
      if (seen >= rank) return sorted[index] ?? 0;
    }
    return sorted[n - 1] ?? 0;
  });
}
