/**
 * A mergeable quantile sketch with a stated relative error: the distributions of report.json
 * keep one of these (`Summary.sketch`), so two reports can be merged into one with correct
 * percentiles, by `lifeline load merge` or by any program that reads the JSON.
 *
 * The mapping is DDSketch's (Masson, Rim, Lee, VLDB 2019): a positive value `v` goes to bucket
 * `i = ceil(log_γ(v))` with `γ = (1 + α) / (1 − α)`, so bucket `i` holds the values in
 * `(γ^(i−1), γ^i]`, and its representative value `2γ^i / (γ + 1)` is within `α` (relative) of
 * every value in it. A quantile is the representative of the bucket that holds the sample of that
 * nearest rank, clamped to the exact minimum and maximum: within `α` of the exact nearest-rank
 * quantile (exact for the first and the last rank, the minimum and the maximum). A negative value
 * goes to the mirror bucket of its magnitude (`negativeBuckets`: a few figures are differences,
 * such as a retry's sleep minus the server's hint), and 0 to a zero bucket, so the bound holds
 * for every finite value. Merging adds bucket counts, so the merge of two sketches equals, bucket for bucket,
 * the sketch of the union of their samples.
 *
 * The buckets are stored as plain JSON (`[[index, count], …]`, sparse, ascending) rather than a
 * library's binary encoding, so that the merge needs nothing but JSON (see docs/load.md).
 */
import { LifelineError } from "../../../shared/errors.js";

/** The sketch's relative accuracy α: every quantile is within 1 % of the exact one. */
export const SKETCH_RELATIVE_ACCURACY = 0.01;

const GAMMA = (1 + SKETCH_RELATIVE_ACCURACY) / (1 - SKETCH_RELATIVE_ACCURACY);
const LN_GAMMA = Math.log(GAMMA);

/** A sketch as report.json stores it (`latency.*.sketch`). */
export interface SketchJson {
  /** α: quantiles are within this relative error. Always {@link SKETCH_RELATIVE_ACCURACY}. */
  relativeAccuracy: number;
  /** Samples, exactly. */
  count: number;
  /** Sum of the samples, exactly (the mean is sum / count). */
  sum: number;
  /** Smallest and largest sample, exactly; null with no samples. */
  min: number | null;
  max: number | null;
  /** Samples equal to 0. */
  zeroCount: number;
  /** `[index, count]` pairs, ascending by index, counts ≥ 1: bucket `i` holds `(γ^(i−1), γ^i]`. */
  buckets: [number, number][];
  /**
   * The negative samples, as `buckets` keep the positive ones, by their magnitude: bucket `i`
   * holds `[−γ^i, −γ^(i−1))`. Absent (read as empty) in reports without negative figures.
   */
  negativeBuckets?: [number, number][];
}

/** The sketch; see the file comment. Not thread-safe, no I/O. */
export class Sketch {
  #count = 0;
  #sum = 0;
  #min = Number.POSITIVE_INFINITY;
  #max = Number.NEGATIVE_INFINITY;
  #zeroCount = 0;
  readonly #buckets = new Map<number, number>();
  /** Negative samples by the bucket of their magnitude. */
  readonly #negative = new Map<number, number>();

  /** Samples added so far. */
  get count(): number {
    return this.#count;
  }

  /** Sum of the samples (0 when empty). */
  get sum(): number {
    return this.#sum;
  }

  /** Smallest sample; null when empty. */
  get min(): number | null {
    return this.#count === 0 ? null : this.#min;
  }

  /** Largest sample; null when empty. */
  get max(): number | null {
    return this.#count === 0 ? null : this.#max;
  }

  /**
   * Adds one sample.
   * @throws RangeError for NaN or an infinite value (a report figure is always finite).
   */
  add(value: number): this {
    if (!Number.isFinite(value)) throw new RangeError(`a sketch takes finite numbers, got ${value}`);
    this.#count += 1;
    this.#sum += value;
    if (value < this.#min) this.#min = value;
    if (value > this.#max) this.#max = value;
    if (value === 0) this.#zeroCount += 1;
    else {
      const buckets = value > 0 ? this.#buckets : this.#negative;
      const index = bucketIndex(Math.abs(value));
      buckets.set(index, (buckets.get(index) ?? 0) + 1);
    }
    return this;
  }

  /** Adds every sample of `other` to this one (`other` is not changed). */
  merge(other: Sketch): this {
    if (other.#count === 0) return this;
    this.#count += other.#count;
    this.#sum += other.#sum;
    this.#min = Math.min(this.#min, other.#min);
    this.#max = Math.max(this.#max, other.#max);
    this.#zeroCount += other.#zeroCount;
    for (const [index, n] of other.#buckets) this.#buckets.set(index, (this.#buckets.get(index) ?? 0) + n);
    for (const [index, n] of other.#negative) this.#negative.set(index, (this.#negative.get(index) ?? 0) + n);
    return this;
  }

  /**
   * The `p`-th percentile, within {@link SKETCH_RELATIVE_ACCURACY} of the nearest-rank one (the
   * smallest sample with at least `p` % of the samples at or below it). Null when empty.
   * @throws RangeError when p is outside [0, 100].
   */
  quantile(p: number): number | null {
    if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile p must be within [0, 100], got ${p}`);
    if (this.#count === 0) return null;
    const rank = Math.max(1, Math.ceil((p / 100) * this.#count));
    // The first and the last rank are the exact minimum and maximum.
    if (rank === 1) return this.#min;
    if (rank === this.#count) return this.#max;
    let seen = 0;
    for (const [value, n] of this.weightedValues()) {
      seen += n;
      if (seen >= rank) return value;
    }
    return this.#max;
  }

  /**
   * `[value, count]` for the zero bucket and each bucket in ascending order, each at its
   * representative value clamped to [min, max]: the distribution as the sketch knows it.
   */
  weightedValues(): [number, number][] {
    const values: [number, number][] = [];
    // The most negative first: the largest magnitudes.
    for (const [index, n] of sortedBuckets(this.#negative).reverse()) {
      values.push([clamp(-representative(index), this.#min, this.#max), n]);
    }
    if (this.#zeroCount > 0) values.push([clamp(0, this.#min, this.#max), this.#zeroCount]);
    for (const [index, n] of sortedBuckets(this.#buckets)) {
      values.push([clamp(representative(index), this.#min, this.#max), n]);
    }
    return values;
  }

  /** The plain-JSON form report.json keeps. */
  toJSON(): SketchJson {
    const json: SketchJson = {
      relativeAccuracy: SKETCH_RELATIVE_ACCURACY,
      count: this.#count,
      sum: this.#sum,
      min: this.min,
      max: this.max,
      zeroCount: this.#zeroCount,
      buckets: sortedBuckets(this.#buckets),
    };
    if (this.#negative.size > 0) json.negativeBuckets = sortedBuckets(this.#negative);
    return json;
  }

  /**
   * A sketch from its JSON form (as {@link toJSON} writes it), checked field by field.
   * @param field names the value in an error, such as `latency.e2eMs.sketch`.
   * @throws ERR_LOAD_REPORT naming the field and what is wrong: a missing or mistyped field,
   *   another relative accuracy, buckets not ascending, counts that do not add up, min above max.
   */
  static fromJSON(json: unknown, field = "sketch"): Sketch {
    const bad = (what: string) => invalid(field, what);
    if (json === null || typeof json !== "object" || Array.isArray(json)) bad(" must be an object");
    const value = json as Record<string, unknown>;
    if (value.relativeAccuracy !== SKETCH_RELATIVE_ACCURACY) {
      bad(`.relativeAccuracy must be ${SKETCH_RELATIVE_ACCURACY}, got ${JSON.stringify(value.relativeAccuracy)}`);
    }
    const count = value.count;
    const zeroCount = value.zeroCount;
    if (!isCount(count)) bad(".count must be a whole number ≥ 0");
    if (!isCount(zeroCount)) bad(".zeroCount must be a whole number ≥ 0");
    if (typeof value.sum !== "number" || !Number.isFinite(value.sum)) bad(".sum must be a finite number");
    const sketch = new Sketch();
    let total = zeroCount as number;
    const read = (key: "buckets" | "negativeBuckets", into: Map<number, number>) => {
      const pairs = value[key];
      if (pairs === undefined && key === "negativeBuckets") return;
      if (!Array.isArray(pairs)) bad(`.${key} must be an array of [index, count] pairs`);
      let previous = Number.NEGATIVE_INFINITY;
      for (const [i, pair] of (pairs as unknown[]).entries()) {
        const [index, n] = Array.isArray(pair) && pair.length === 2 ? pair : [];
        if (!Number.isSafeInteger(index) || !isCount(n) || n === 0) {
          bad(`.${key}[${i}] must be [index, count] with a whole index and a count ≥ 1`);
        }
        if ((index as number) <= previous) bad(`.${key}[${i}]: indexes must be ascending, each once`);
        previous = index as number;
        total += n as number;
        into.set(index as number, n as number);
      }
    };
    read("buckets", sketch.#buckets);
    read("negativeBuckets", sketch.#negative);
    if (total !== count) bad(`: zeroCount and the bucket counts add up to ${total}, not count ${count}`);
    if (count === 0) {
      if (value.min !== null || value.max !== null) bad(": min and max must be null with no samples");
      return sketch;
    }
    const { min, max } = value;
    if (typeof min !== "number" || typeof max !== "number" || !Number.isFinite(min) || !(max >= min)) {
      bad(": min and max must be finite numbers, min ≤ max");
    }
    sketch.#count = count as number;
    sketch.#zeroCount = zeroCount as number;
    sketch.#sum = value.sum as number;
    sketch.#min = min as number;
    sketch.#max = max as number;
    return sketch;
  }
}

/** `[index, count]` pairs ascending by index. */
function sortedBuckets(buckets: ReadonlyMap<number, number>): [number, number][] {
  return [...buckets].sort(([a], [b]) => a - b);
}

/** The bucket of a positive value (of a negative one's magnitude). */
function bucketIndex(value: number): number {
  return Math.ceil(Math.log(value) / LN_GAMMA);
}

/** The value within α of every value of bucket `index`. */
function representative(index: number): number {
  return (2 * Math.exp(index * LN_GAMMA)) / (GAMMA + 1);
}

function invalid(field: string, what: string): never {
  throw new LifelineError("ERR_LOAD_REPORT", `${field}${what}.`);
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}
