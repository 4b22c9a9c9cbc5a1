/**
 * The open model's arrival schedule, as pure functions of a rate profile and a seed: no timers,
 * no clock, so tests check counts, means and dispersion without waiting (open-run.ts plays the
 * schedule in real time).
 *
 * A profile is a list of stages, each ramping linearly from the rate before it to its own target
 * over its duration, as k6's ramping-arrival-rate does; a constant rate is one stage whose start
 * and target are equal. Both arrival processes are one process of unit rate laid over the
 * profile's cumulative intensity Λ(t) (the expected number of arrivals by t): arrival k comes when
 * Λ reaches its k-th point. *Constant* puts those points at 0, 1, 2, …: evenly spaced arrivals
 * whose spacing follows the ramp. *Poisson* spaces them by exponential gaps of mean 1 from a
 * seeded PRNG, which gives a (non-homogeneous) Poisson process of intensity λ(t): the same seed
 * gives the same arrival times.
 */
import type { ArrivalProcess, ArrivalStage } from "../options/open-options.js";

/** One linear piece of a profile, with the rate at both ends (arrivals per second). */
interface Segment {
  startMs: number;
  durationMs: number;
  fromRate: number;
  toRate: number;
}

/**
 * The profile's pieces: each stage ramps from the previous stage's target (the first from
 * `startRate`) to its own. Stages of zero length are skipped.
 */
function segmentsOf(stages: readonly ArrivalStage[], startRate: number): Segment[] {
  const segments: Segment[] = [];
  let startMs = 0;
  let fromRate = startRate;
  for (const stage of stages) {
    if (stage.durationMs > 0) segments.push({ startMs, durationMs: stage.durationMs, fromRate, toRate: stage.rate });
    startMs += stage.durationMs;
    fromRate = stage.rate;
  }
  return segments;
}

/** Total length of `stages`, in ms. */
export function profileDurationMs(stages: readonly ArrivalStage[]): number {
  return stages.reduce((sum, stage) => sum + stage.durationMs, 0);
}

/** Expected arrivals over the whole profile: Λ at its end. */
export function expectedArrivals(stages: readonly ArrivalStage[], startRate: number): number {
  return segmentsOf(stages, startRate).reduce(
    (sum, s) => sum + ((s.fromRate + s.toRate) / 2) * (s.durationMs / 1000),
    0,
  );
}

/**
 * Seconds into a segment at which its cumulative intensity reaches `y` (≥ 0): the root of
 * `a·τ²/2 + b·τ = y` with `b` the segment's start rate and `a` its slope, in the form that stays
 * exact when the slope is 0 and does not cancel when it is negative.
 */
function secondsToReach(segment: Segment, y: number): number {
  if (y <= 0) return 0;
  const seconds = segment.durationMs / 1000;
  const a = (segment.toRate - segment.fromRate) / seconds;
  const b = segment.fromRate;
  return (2 * y) / (b + Math.sqrt(Math.max(0, b * b + 2 * a * y)));
}

/**
 * A seeded PRNG with outputs in [0, 1): a Weyl sequence (step 0x9e3779b9) through a 32-bit
 * avalanche mix. Small, fast and well spread; the same seed gives the same sequence.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    z ^= z >>> 16;
    return (z >>> 0) / 4294967296;
  };
}

/** What {@link arrivalTimes} plays. */
export interface ArrivalSchedule {
  stages: readonly ArrivalStage[];
  /** Rate at time 0, from which the first stage ramps. @default 0 (k6's default start rate) */
  startRate?: number;
  process: ArrivalProcess;
  /** Seed of the Poisson process's PRNG (unused by `constant`). */
  seed: number;
  /**
   * Where on the Λ axis a constant process puts its first arrival, in [0, 1): its arrivals fall
   * at Λ = phase, phase + 1, … (unused by `poisson`). Generator i of k plays the profile's rates
   * ÷ k at phase i ÷ k, so the union of their arrivals is the whole profile's. @default 0
   */
  phase?: number;
}

/**
 * The arrival times of `schedule`, in ms from its start, ascending, all within
 * `[0, profileDurationMs)`. Finite; lazy, so a player pulls one at a time. Never throws for
 * finite, non-negative rates and durations (the options schema guarantees them).
 */
export function* arrivalTimes(schedule: ArrivalSchedule): Generator<number, void, undefined> {
  const random = seededRandom(schedule.seed);
  // An exponential gap of mean 1; 1 − u is in (0, 1], so the log is finite.
  const gap = schedule.process === "poisson" ? () => -Math.log(1 - random()) : () => 1;
  // Where on the Λ axis the next arrival falls; a constant process starts at its phase, a Poisson one a gap in.
  let next = schedule.process === "poisson" ? gap() : (schedule.phase ?? 0);
  let base = 0;
  for (const segment of segmentsOf(schedule.stages, schedule.startRate ?? 0)) {
    const total = ((segment.fromRate + segment.toRate) / 2) * (segment.durationMs / 1000);
    while (next < base + total) {
      const atMs = segment.startMs + secondsToReach(segment, next - base) * 1000;
      // Rounding can put the last arrival of a segment a hair past its end; it belongs to this one.
      yield Math.min(atMs, segment.startMs + segment.durationMs - 1e-6);
      next += gap();
    }
    base += total;
  }
}
