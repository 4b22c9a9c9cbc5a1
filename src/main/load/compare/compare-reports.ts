/**
 * `compareReports()`: two runs of `lifeline load` (report.json and records.jsonl, parsed) set
 * side by side: each headline figure of A and of B, the difference B − A and the ratio B / A,
 * an interval of the difference where the run's samples allow one, and a verdict; then the
 * comparison's thresholds. Pure: no I/O, and the same inputs and seed give the same comparison.
 */
import { LifelineError } from "../../../shared/errors.js";
import type { ComparedRun } from "../merge/report-reader.js";
import { type Better, FIGURES, type FigureSpec, readFigure, type SampleSet } from "./compare-figures.js";
import { type Samples, samplesFromRecords } from "./compare-samples.js";
import {
  bootstrapMeanDifference,
  bootstrapPercentileDifferences,
  type Interval,
  proportionDifference,
} from "./compare-stats.js";
import {
  type ComparisonThresholdResult,
  evaluateComparisonThresholds,
  parseComparisonThreshold,
} from "./compare-thresholds.js";

/** Version tag of compare.json's layout. */
export const COMPARE_SCHEMA = "lifeline-load-compare/1";

/** Options of {@link compareReports}; defaults in {@link COMPARE_DEFAULTS}. */
export interface CompareOptions {
  /** Coverage of each interval, in (0, 1). @default 0.95 */
  confidence?: number;
  /** Seed of the bootstrap's PRNG, a whole number. @default 1 */
  seed?: number;
  /** Bootstrap resamples of each run, 100–100000. @default 1000 */
  resamples?: number;
  /**
   * The noise floor, a fraction of A's figure in [0, 1): B is `better` or `worse` only when the
   * whole interval of B − A lies beyond ± noise × |A| (criterion's noise threshold). It absorbs
   * the shift between runs that no interval within a run can see (a busier machine during one
   * run). @default 0
   */
  noise?: number;
  /** Comparison thresholds, `<metric>_ratio<op><n>` or `<metric>_delta<op><n>`. @default [] */
  thresholds?: readonly string[];
}

/** Samples a run needs beyond a percentile for its bootstrap interval (see samplesForPercentile). */
const TAIL_SAMPLES = 5;

/** The defaults of {@link CompareOptions}. */
const COMPARE_DEFAULTS = { confidence: 0.95, seed: 1, resamples: 1000, noise: 0 } as const;

/**
 * A figure's verdict: B is `better` or `worse` than A (the interval of B − A excludes 0), the
 * difference is `within noise` (the interval contains 0), or there are `no samples` to test it
 * (no records.jsonl, or a figure of which a run gives one value): then only `leaning` says which
 * way the difference goes.
 */
export type Verdict = "better" | "worse" | "within noise" | "no samples";

/** One figure of A and B (compare.json `figures[]`). */
export interface FigureComparison {
  /** Its path in report.json. */
  id: string;
  label: string;
  better: Better;
  /** The figure in A and in B; null when that report lacks it (then nothing else is computed). */
  a: number | null;
  b: number | null;
  /** B − A. */
  delta: number | null;
  /** B / A; null when A is 0 (1 when both are). */
  ratio: number | null;
  /** Null when a figure is absent. */
  verdict: Verdict | null;
  /** By the difference alone, for `no samples`: which way B differs. */
  leaning: "better" | "worse" | "equal" | null;
  /** The interval of B − A at the comparison's confidence; null without a test. */
  interval: Interval | null;
  /** `bootstrap-percentile`, `bootstrap-mean`, `bootstrap-sum`, `newcombe` or `none`. */
  test: string;
  /** Sample counts behind the test (finished prompts for `newcombe`). */
  samples: { a: number; b: number } | null;
  /** Why there is no test, when there is none. */
  note?: string;
}

/** What a run was, for the comparison's header. */
export interface ComparedRunSummary {
  source: string;
  startedAt: string | null;
  status: string | null;
  /** Whether its records.jsonl was read. */
  records: boolean;
}

/** compare.json. */
export interface Comparison {
  schema: typeof COMPARE_SCHEMA;
  a: ComparedRunSummary;
  b: ComparedRunSummary;
  /** Settings of report.json `config` that differ between the runs (`path`: dotted), in path order. */
  configDifferences: { path: string; a: unknown; b: unknown }[];
  confidence: number;
  resamples: number;
  seed: number;
  /** The noise floor the verdicts used, a fraction of A's figure (see {@link CompareOptions}). */
  noise: number;
  figures: FigureComparison[];
  thresholds: ComparisonThresholdResult[];
  /** True when every threshold held (also when there are none). */
  thresholdsPassed: boolean;
}

/**
 * Compares run B with run A.
 * @throws LifelineError ERR_INVALID_OPTIONS for a bad confidence, seed, resample count, noise
 * floor or threshold (before any work).
 */
export function compareReports(a: ComparedRun, b: ComparedRun, options: CompareOptions = {}): Comparison {
  const settings = validate(options);
  const thresholds = (options.thresholds ?? []).map(parseComparisonThreshold);
  const samplesA = a.records === null ? null : samplesFromRecords(a.records);
  const samplesB = b.records === null ? null : samplesFromRecords(b.records);
  const intervals = percentileIntervals(samplesA, samplesB, settings);
  const figures = FIGURES.map((spec, index) => {
    const figure = sideBySide(spec, a.report, b.report);
    if (figure.a === null || figure.b === null) return figure;
    const seed = mix(settings.seed, index);
    const tested = testFigure(spec, a.report, b.report, samplesA, samplesB, intervals, { ...settings, seed });
    return withVerdict(figure, tested, settings.noise);
  });
  const checked = evaluateComparisonThresholds(thresholds, fields(a.report), fields(b.report));
  return {
    schema: COMPARE_SCHEMA,
    a: summary(a),
    b: summary(b),
    configDifferences: configDifferences(fields(a.report).config, fields(b.report).config),
    ...settings,
    figures,
    thresholds: checked,
    thresholdsPassed: checked.every((threshold) => threshold.passed),
  };
}

type Settings = { confidence: number; seed: number; resamples: number; noise: number };
type Tested = { interval: Interval | null; test: string; samples: { a: number; b: number } | null; note?: string };

function validate(options: CompareOptions): Settings {
  const settings = { ...COMPARE_DEFAULTS, ...dropUndefined(options) };
  const { confidence, seed, resamples, noise } = settings;
  if (!(confidence > 0 && confidence < 1)) {
    throw new LifelineError("ERR_INVALID_OPTIONS", `confidence ${confidence} is not within (0, 1): give e.g. 0.95`);
  }
  if (!Number.isSafeInteger(seed)) {
    throw new LifelineError("ERR_INVALID_OPTIONS", `seed ${seed} is not a whole number: give e.g. 1`);
  }
  if (!(Number.isInteger(resamples) && resamples >= 100 && resamples <= 100_000)) {
    throw new LifelineError("ERR_INVALID_OPTIONS", `resamples ${resamples} is not a whole number from 100 to 100000`);
  }
  if (!(noise >= 0 && noise < 1)) {
    throw new LifelineError("ERR_INVALID_OPTIONS", `noise ${noise} is not within [0, 1): give e.g. 0.05 for 5 %`);
  }
  return { confidence, seed, resamples, noise };
}

function dropUndefined(options: CompareOptions): Partial<Settings> {
  const out: Partial<Settings> = {};
  if (options.confidence !== undefined) out.confidence = options.confidence;
  if (options.seed !== undefined) out.seed = options.seed;
  if (options.resamples !== undefined) out.resamples = options.resamples;
  if (options.noise !== undefined) out.noise = options.noise;
  return out;
}

/** The figure's values, difference and ratio, before any test. */
function sideBySide(spec: FigureSpec, a: unknown, b: unknown): FigureComparison {
  const fromA = readFigure(a, spec.id);
  const fromB = readFigure(b, spec.id);
  const both = fromA !== null && fromB !== null;
  return {
    id: spec.id,
    label: spec.label,
    better: spec.better,
    a: fromA === null ? null : round4(fromA),
    b: fromB === null ? null : round4(fromB),
    delta: both ? round4(fromB - fromA) : null,
    ratio: !both ? null : fromA === 0 ? (fromB === 0 ? 1 : null) : round4(fromB / fromA),
    verdict: null,
    leaning: null,
    interval: null,
    test: "none",
    samples: null,
  };
}

/**
 * The percentile figures' intervals, one bootstrap per sample set (all its percentiles from the
 * same resamples), keyed `<set>:<p>`.
 */
function percentileIntervals(a: Samples | null, b: Samples | null, settings: Settings): Map<string, Interval> {
  const intervals = new Map<string, Interval>();
  if (a === null || b === null) return intervals;
  const bySet = new Map<SampleSet, number[]>();
  for (const spec of FIGURES) {
    if (spec.test.kind === "percentile")
      bySet.set(spec.test.samples, [...(bySet.get(spec.test.samples) ?? []), spec.test.p]);
  }
  let index = 0;
  for (const [set, ps] of bySet) {
    index++;
    if (a[set].values.length === 0 || b[set].values.length === 0) continue;
    const found = bootstrapPercentileDifferences(a[set], b[set], ps, {
      ...settings,
      seed: mix(settings.seed, 1000 + index),
    });
    ps.forEach((p, i) => {
      const interval = found[i];
      if (interval !== undefined) intervals.set(`${set}:${p}`, interval);
    });
  }
  return intervals;
}

function testFigure(
  spec: FigureSpec,
  reportA: unknown,
  reportB: unknown,
  a: Samples | null,
  b: Samples | null,
  intervals: Map<string, Interval>,
  settings: Settings,
): Tested {
  const test = spec.test;
  switch (test.kind) {
    case "none":
      return { interval: null, test: "none", samples: null, note: test.why };
    case "proportion": {
      const count = (report: unknown, key: string) => readFigure(report, `totals.prompts.${key}`) ?? 0;
      const trialsA = count(reportA, "succeeded") + count(reportA, "failed");
      const trialsB = count(reportB, "succeeded") + count(reportB, "failed");
      const interval = proportionDifference(
        count(reportA, test.of),
        trialsA,
        count(reportB, test.of),
        trialsB,
        settings.confidence,
      );
      return { interval, test: "newcombe", samples: { a: trialsA, b: trialsB } };
    }
    case "percentile":
    case "mean":
    case "sum": {
      if (a === null || b === null) {
        const missing = [a === null ? "A" : "", b === null ? "B" : ""].filter((run) => run !== "").join(" and ");
        return { interval: null, test: "none", samples: null, note: `no records.jsonl in ${missing}` };
      }
      const samples = { a: a[test.samples].values.length, b: b[test.samples].values.length };
      if (samples.a === 0 || samples.b === 0) {
        return {
          interval: null,
          test: "none",
          samples,
          note: `no ${test.samples} samples in ${samples.a === 0 ? "A" : "B"}`,
        };
      }
      if (test.kind === "percentile") {
        const needed = samplesForPercentile(test.p);
        if (samples.a < needed || samples.b < needed) {
          const few = samples.a < needed ? `A has ${samples.a}` : `B has ${samples.b}`;
          return { interval: null, test: "none", samples, note: `a p${test.p} needs ${needed} samples a run, ${few}` };
        }
        const interval = intervals.get(`${test.samples}:${test.p}`) ?? null;
        return { interval, test: "bootstrap-percentile", samples };
      }
      const interval = bootstrapMeanDifference(a[test.samples], b[test.samples], {
        ...settings,
        sum: test.kind === "sum",
      });
      return { interval, test: `bootstrap-${test.kind}`, samples };
    }
    default: {
      const unknown: never = test;
      throw new Error(`unknown figure test ${JSON.stringify(unknown)}`);
    }
  }
}

/**
 * Samples a run needs for an interval of its `p`-th percentile: {@link TAIL_SAMPLES} beyond it
 * (10 for a p50, 50 for a p90, 500 for a p99). With fewer, the percentile is one of the run's few
 * largest values, and no resample can go above its largest: the bootstrap's interval would be
 * too narrow, and one slow moment of one run would pass for a difference.
 */
function samplesForPercentile(p: number): number {
  return Math.ceil((TAIL_SAMPLES * 100) / Math.min(p, 100 - p));
}

/** The verdict from the interval: beyond ± `noise` × |A| one way or the other, else within noise. */
function withVerdict(figure: FigureComparison, tested: Tested, noise: number): FigureComparison {
  const out: FigureComparison = { ...figure, test: tested.test, samples: tested.samples };
  if (tested.note !== undefined) out.note = tested.note;
  const delta = figure.delta ?? 0;
  const towards = (sign: number) =>
    sign === 0 ? "equal" : sign > 0 === (figure.better === "higher") ? "better" : "worse";
  if (tested.interval === null) {
    out.verdict = "no samples";
    out.leaning = towards(Math.sign(delta));
    return out;
  }
  out.interval = { low: round4(tested.interval.low), high: round4(tested.interval.high) };
  const floor = noise * Math.abs(figure.a ?? 0);
  const sign = tested.interval.low > floor ? 1 : tested.interval.high < -floor ? -1 : 0;
  out.verdict = sign === 0 ? "within noise" : towards(sign) === "better" ? "better" : "worse";
  return out;
}

function summary(run: ComparedRun): ComparedRunSummary {
  const text = (value: unknown) => (typeof value === "string" ? value : null);
  return {
    source: run.source,
    startedAt: text(fields(run.report).startedAt),
    status: text(fields(run.report).status),
    records: run.records !== null,
  };
}

/** Leaves of two config objects whose JSON differs, by dotted path. */
function configDifferences(a: unknown, b: unknown): Comparison["configDifferences"] {
  const leavesA = leaves(a, "");
  const leavesB = leaves(b, "");
  const paths = [...new Set([...leavesA.keys(), ...leavesB.keys()])].sort();
  return paths.flatMap((path) => {
    const fromA = leavesA.get(path);
    const fromB = leavesB.get(path);
    return JSON.stringify(fromA) === JSON.stringify(fromB) ? [] : [{ path, a: fromA ?? null, b: fromB ?? null }];
  });
}

function leaves(value: unknown, prefix: string, into = new Map<string, unknown>()): Map<string, unknown> {
  if (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length > 0) {
    for (const [key, child] of Object.entries(value)) leaves(child, prefix === "" ? key : `${prefix}.${key}`, into);
  } else if (prefix !== "") into.set(prefix, value);
  return into;
}

/** A per-figure seed from the comparison's: figures do not share resamples, and adding one changes no other. */
function mix(seed: number, index: number): number {
  return (Math.imul(seed >>> 0, 0x9e3779b1) + Math.imul(index + 1, 0x85ebca6b)) >>> 0;
}

/** A report's top-level fields, to read by name (a field may be absent). */
function fields(report: object): Record<string, unknown> {
  return report as Record<string, unknown>;
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
