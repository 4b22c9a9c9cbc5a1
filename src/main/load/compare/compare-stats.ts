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
import { mulberry32 } from "../../../shared/prng.js";
import { percentile } from "../metrics/stats.js";

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
 * A sample whose values come in clusters that a bootstrap resamples whole: `clusters[i]` is the
 * cluster of `values[i]`. With every value its own cluster the bootstrap is the ordinary one.
 */
export interface ClusteredSample {
  values: readonly number[];
  clusters: readonly number[];
}

/** Every value its own cluster: the ordinary, independent bootstrap. */
export function independent(values: readonly number[]): ClusteredSample {
  return { values, clusters: values.map((_, i) => i) };
}

/**
 * Cluster bootstrap intervals of `percentile(B, p) − percentile(A, p)` (nearest rank) for each
 * `p` of `ps`, from one set of resamples. Each resample of a run draws as many clusters as it
 * has, with replacement, and takes the percentile of the values of the clusters drawn.
 * @throws RangeError when a sample is empty.
 */
export function bootstrapPercentileDifferences(
  a: ClusteredSample,
  b: ClusteredSample,
  ps: readonly number[],
  options: BootstrapOptions,
): Interval[] {
  const prepared = [prepare(a, "A"), prepare(b, "B")] as const;
  const random = mulberry32(options.seed);
  const differences = ps.map(() => new Float64Array(options.resamples));
  for (let r = 0; r < options.resamples; r++) {
    const fromA = resampledPercentiles(prepared[0], ps, random);
    const fromB = resampledPercentiles(prepared[1], ps, random);
    for (let i = 0; i < ps.length; i++) (differences[i] as Float64Array)[r] = (fromB[i] ?? 0) - (fromA[i] ?? 0);
  }
  return differences.map((values) => intervalOf(values, options.confidence));
}

/**
 * Cluster bootstrap interval of `mean(B) − mean(A)`, or with `sum` of `sum(B) − sum(A)` (each
 * sum as its run's sample count × the resampled mean).
 * @throws RangeError when a sample is empty.
 */
export function bootstrapMeanDifference(
  a: ClusteredSample,
  b: ClusteredSample,
  options: BootstrapOptions & { sum?: boolean },
): Interval {
  const prepared = [prepare(a, "A"), prepare(b, "B")] as const;
  const random = mulberry32(options.seed);
  const differences = new Float64Array(options.resamples);
  const statistic = (sample: Prepared) => {
    draw(sample, random);
    let total = 0;
    let count = 0;
    for (let c = 0; c < sample.sums.length; c++) {
      const times = sample.drawn[c] ?? 0;
      total += times * (sample.sums[c] ?? 0);
      count += times * (sample.sizes[c] ?? 0);
    }
    // A sum is the run's own sample count times the resample's mean: how many prompts a run
    // sent is its setting, not noise, though resampled blocks hold more or fewer of them.
    return (total / count) * (options.sum === true ? sample.sorted.length : 1);
  };
  for (let r = 0; r < options.resamples; r++) {
    const fromA = statistic(prepared[0]);
    differences[r] = statistic(prepared[1]) - fromA;
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

/** A sample ready for resampling: values sorted, each with its cluster renumbered 0..k−1. */
interface Prepared {
  sorted: Float64Array;
  clusterOf: Uint32Array;
  /** Values and their sum per cluster. */
  sizes: Float64Array;
  sums: Float64Array;
  /** How often each cluster was drawn in the current resample (reused). */
  drawn: Uint32Array;
}

function prepare(sample: ClusteredSample, run: string): Prepared {
  const n = sample.values.length;
  if (n === 0) throw new RangeError(`run ${run} has no samples to resample`);
  if (sample.clusters.length !== n) throw new RangeError(`run ${run}: clusters and values differ in length`);
  const order = Array.from({ length: n }, (_, i) => i).sort(
    (x, y) => (sample.values[x] ?? 0) - (sample.values[y] ?? 0),
  );
  const ids = new Map<number, number>();
  for (const cluster of sample.clusters) if (!ids.has(cluster)) ids.set(cluster, ids.size);
  const sorted = new Float64Array(n);
  const clusterOf = new Uint32Array(n);
  const sizes = new Float64Array(ids.size);
  const sums = new Float64Array(ids.size);
  order.forEach((from, to) => {
    const value = sample.values[from] ?? 0;
    const cluster = ids.get(sample.clusters[from] ?? 0) ?? 0;
    sorted[to] = value;
    clusterOf[to] = cluster;
    sizes[cluster] = (sizes[cluster] ?? 0) + 1;
    sums[cluster] = (sums[cluster] ?? 0) + value;
  });
  return { sorted, clusterOf, sizes, sums, drawn: new Uint32Array(ids.size) };
}

/** Draws as many clusters as the sample has, with replacement, into `sample.drawn`. */
function draw(sample: Prepared, random: () => number): void {
  const k = sample.drawn.length;
  sample.drawn.fill(0);
  for (let j = 0; j < k; j++) {
    const cluster = Math.floor(random() * k);
    sample.drawn[cluster] = (sample.drawn[cluster] ?? 0) + 1;
  }
}

/**
 * The nearest-rank percentiles `ps` of one resample, in O(n): the resample is the sorted sample
 * with each value weighted by how often its cluster was drawn, so finding its ranks is one
 * cumulative pass instead of a sort.
 */
function resampledPercentiles(sample: Prepared, ps: readonly number[], random: () => number): number[] {
  draw(sample, random);
  let total = 0;
  for (let c = 0; c < sample.drawn.length; c++) total += (sample.drawn[c] ?? 0) * (sample.sizes[c] ?? 0);
  const n = sample.sorted.length;
  return ps.map((p) => {
    const rank = Math.max(1, Math.ceil((p / 100) * total));
    let seen = 0;
    for (let index = 0; index < n; index++) {
      seen += sample.drawn[sample.clusterOf[index] ?? 0] ?? 0;
      if (seen >= rank) return sample.sorted[index] ?? 0;
    }
    return sample.sorted[n - 1] ?? 0;
  });
}
