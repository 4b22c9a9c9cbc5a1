/**
 * Percentiles, summaries and histograms of a run's samples: pure functions over plain numbers,
 * shared by the JSON report, the terminal table and the thresholds. A summary's percentiles come
 * from its sketch (sketch.ts), so that summaries of two runs merge with correct percentiles.
 */
import { Sketch, type SketchJson } from "./sketch.js";

/**
 * A distribution as the report gives it (report.json `latency.*`); every figure null when empty.
 * `count`, `min`, `mean` and `max` are exact; the percentiles are within 1 % (relative) of the
 * nearest-rank ones, read from `sketch`, which is what a merge of reports adds up.
 */
export interface Summary {
  count: number;
  min: number | null;
  mean: number | null;
  p50: number | null;
  p90: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
  histogram: Histogram;
  /** The mergeable form of the distribution (sketch.ts). */
  sketch: SketchJson;
}

/**
 * Equal-width bins: bin `i` holds the values in `[edges[i], edges[i + 1])`, the last bin also its
 * upper edge, so `edges.length === counts.length + 1` and the counts add up to the sample count.
 */
export interface Histogram {
  edges: number[];
  counts: number[];
}

/** Bins of every report histogram: enough to show a shape, few enough to read. */
const HISTOGRAM_BINS = 20;

/**
 * The nearest-rank percentile (the smallest sample with at least `p` % of the samples at or below
 * it): always one of the samples, never an interpolation, so a p99 of 8000 means a real request
 * took 8000 ms. `sorted` must be ascending. Null for no samples.
 * @throws RangeError when p is outside [0, 100].
 */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile p must be within [0, 100], got ${p}`);
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? null;
}

/**
 * {@link HISTOGRAM_BINS} equal-width bins from the smallest to the largest sample; whole numbers
 * that span fewer values than that (requests per prompt) get one bin per value instead.
 */
export function histogram(sorted: readonly number[], bins = HISTOGRAM_BINS): Histogram {
  return weightedHistogram(
    sorted.map((value) => [value, 1]),
    bins,
  );
}

/** {@link histogram} of `[value, count]` pairs, ascending by value. */
function weightedHistogram(sorted: readonly (readonly [number, number])[], bins = HISTOGRAM_BINS): Histogram {
  const min = sorted[0]?.[0];
  const max = sorted[sorted.length - 1]?.[0];
  if (min === undefined || max === undefined) return { edges: [], counts: [] };
  const whole = sorted.every(([value]) => Number.isInteger(value)) && max - min < bins;
  // Samples closer together than the report's resolution (0.001) show as one bin of width 1.
  const one = !whole && (max - min) / bins < 0.001;
  // Whole numbers: bins [k, k + 1). Else equal widths.
  const count = whole ? max - min + 1 : one ? 1 : bins;
  const width = whole || one ? 1 : (max - min) / count;
  const edges = Array.from({ length: count + 1 }, (_, i) => (i === count && !whole && !one ? max : min + i * width));
  const counts = new Array<number>(count).fill(0);
  for (const [value, n] of sorted) {
    const index = Math.min(count - 1, Math.floor((value - min) / width));
    counts[index] = (counts[index] ?? 0) + n;
  }
  return { edges: edges.map(round3), counts };
}

/** The summary of `values` (in any order; not modified). */
export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const sketch = new Sketch();
  for (const value of sorted) sketch.add(value);
  return { ...figuresOf(sketch), histogram: histogram(sorted) };
}

/**
 * The summary of a sketch alone, as a merge of reports builds it: the figures as
 * {@link summarize} gives them, and the histogram drawn from the sketch's buckets (each bucket's
 * count at its representative value, so within 1 % of where the samples were). When the sketch's
 * smallest and largest samples are whole numbers less than {@link HISTOGRAM_BINS} apart, each
 * value is rounded to a whole number, so requests per prompt keep one bin per value.
 */
export function summarizeSketch(sketch: Sketch): Summary {
  const { min, max } = sketch;
  const whole =
    min !== null && max !== null && Number.isInteger(min) && Number.isInteger(max) && max - min < HISTOGRAM_BINS;
  const weighted = sketch
    .weightedValues()
    .map(([value, n]): [number, number] => [whole ? Math.round(value) : value, n]);
  return { ...figuresOf(sketch), histogram: weightedHistogram(weighted) };
}

function figuresOf(sketch: Sketch): Omit<Summary, "histogram"> {
  const at = (p: number) => nullableRound(sketch.quantile(p));
  return {
    count: sketch.count,
    min: nullableRound(sketch.min),
    mean: sketch.count === 0 ? null : round3(sketch.sum / sketch.count),
    p50: at(50),
    p90: at(90),
    p95: at(95),
    p99: at(99),
    max: nullableRound(sketch.max),
    sketch: sketch.toJSON(),
  };
}

/** Three decimals: microseconds for millisecond figures; keeps report.json short and diffable. */
export function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

function nullableRound(value: number | null): number | null {
  return value === null ? null : round3(value);
}
