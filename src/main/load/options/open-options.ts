/**
 * The options of the open model (`arrival`) and of the sweep (`sweep`), part of
 * {@link LoadOptions}: their types, defaults, schemas and the rules that tie them to the closed
 * model's options. load-options.ts holds the rest of the run's options.
 *
 * In the open model an *arrival* is a new conversation: a fresh session that sends `prompts`
 * prompts (default 1) one after another and is closed after its last. `sessions` is the cap: the
 * most conversations open at once. An arrival that finds the cap reached is dropped or waits
 * (`onCap`); either way it is counted.
 */
import * as z from "zod";
import { timerMs } from "../../config/option-schemas.js";

/** How arrivals are spaced: evenly, or as a Poisson process (seeded); arrivals.ts lays them out. */
export type ArrivalProcess = "constant" | "poisson";

/** One stage of a profile: over `durationMs`, the rate ramps linearly to `rate` arrivals/s. */
export interface ArrivalStage {
  durationMs: number;
  /** Target rate at the stage's end, arrivals per second. */
  rate: number;
}

/** What happens to an arrival that finds `sessions` conversations already open. */
export type OnCap = "drop" | "delay";

/** The open model: new conversations arrive at a rate, whether or not earlier ones have ended. */
export interface ArrivalOptions {
  /**
   * Arrivals per second. Alone (with `durationMs`), a constant rate for the whole run; with
   * `stages`, the rate the first stage ramps from. @default 0 with stages
   */
  rate?: number;
  /**
   * Stages, each ramping linearly from the previous stage's rate to its own over its duration
   * (k6's ramping-arrival-rate); a stage that repeats the rate before it holds it. Their lengths
   * add up to the run's length (`durationMs` is then refused).
   */
  stages?: readonly ArrivalStage[];
  /** Evenly spaced arrivals, or a Poisson process seeded with the run's `seed`. @default "constant" */
  process?: ArrivalProcess;
  /**
   * An arrival that finds the cap reached: `"drop"` counts it as dropped and never starts it
   * (k6's dropped iterations; the load stays open); `"delay"` queues it until a conversation ends
   * (counted as delayed, with its wait, once it starts; still queued when the run ends, counted as
   * unstarted instead).
   * @default "drop"
   */
  onCap?: OnCap;
  /**
   * Where a constant process puts its first arrival, as a fraction of one arrival's spacing, in
   * [0, 1). A distributed run gives generator i of k the phase i ÷ k of a schedule whose rates
   * are divided by k, so that together the generators play the undivided schedule. @default 0
   */
  phase?: number;
}

/**
 * The sweep: a synchronous baseline (one conversation at a time), a maximum-throughput probe
 * (`sessions` at a time, back to back), then `rates` open-model stages at constant rates evenly
 * spaced strictly between the two measured rates, each `stepMs` long; it stops at the first
 * stage that saturates the target (sweep.ts defines when).
 */
export interface SweepOptions {
  /** Rates between the baseline's and the probe's. @default 5 */
  rates?: number;
  /** Length of each step (baseline, probe, each rate). @default 20000 */
  stepMs?: number;
}

// OPEN_DEFAULTS lives in load-defaults.ts, which the CLI's help loads without zod.
export { OPEN_DEFAULTS } from "./load-defaults.js";

/**
 * The open model's cap when none is given (`sessions`): what the peak rate opens in
 * {@link OPEN_CAP_WINDOW_MS}, so arrivals are dropped (or delayed) only once conversations last
 * longer than that on average; at least 1, at most 100,000 (`sessions`' limit). GuideLLM caps
 * nothing by default; a cap this far above the target's steady state stays a guard against a
 * target that stops answering, not a limit of the test.
 */
export function defaultOpenCap(arrival: ArrivalOptions, durationMs: number | undefined): number {
  const peak = Math.max(arrival.rate ?? 0, ...arrivalStages(arrival, durationMs).map((stage) => stage.rate));
  return Math.min(100_000, Math.max(1, Math.ceil((peak * OPEN_CAP_WINDOW_MS) / 1000)));
}

/** See {@link defaultOpenCap}. */
const OPEN_CAP_WINDOW_MS = 60_000;

/** Highest rate accepted, arrivals per second: far above what one host can open sessions at. */
const MAX_RATE = 100_000;

const rate = z.number().min(0).max(MAX_RATE).finite();

/** Schema of {@link ArrivalOptions} (load-options.ts puts it in the options schema). */
export const arrivalSchema = z.strictObject({
  rate: rate.optional(),
  stages: z
    .array(z.strictObject({ durationMs: timerMs(1), rate }))
    .min(1)
    .optional(),
  process: z.enum(["constant", "poisson"]).optional(),
  onCap: z.enum(["drop", "delay"]).optional(),
  phase: z.number().min(0).lt(1).optional(),
});

/** Schema of {@link SweepOptions}. */
export const sweepSchema = z.strictObject({
  rates: z.number().int().min(1).max(50).optional(),
  stepMs: timerMs(100).optional(),
});

/** The options {@link openModelProblems} reads. */
interface OpenModelFields {
  prompts?: number | undefined;
  durationMs?: number | undefined;
  rampUpMs?: number | undefined;
  concurrency?: number | undefined;
  arrival?: { rate?: number | undefined; stages?: readonly { rate: number }[] | undefined } | undefined;
  sweep?: object | undefined;
}

/**
 * What is wrong with how the open-model options combine with the rest, as `[field, message]`
 * pairs (empty when nothing is). load-options.ts turns them into ERR_INVALID_OPTIONS.
 */
export function openModelProblems(options: OpenModelFields): [string, string][] {
  const problems: [string, string][] = [];
  const { arrival, sweep } = options;
  if (arrival === undefined && sweep === undefined) return problems;
  if (arrival !== undefined && sweep !== undefined) problems.push(["sweep", "give arrival or sweep, not both"]);
  if (options.rampUpMs !== undefined) {
    problems.push(["rampUpMs", "ramps of the open model are stages (arrival.stages); leave rampUpMs out"]);
  }
  if (options.concurrency !== undefined) {
    problems.push([
      "concurrency",
      "in the open model and the sweep, sessions is the cap of conversations open at once",
    ]);
  }
  if (arrival !== undefined) {
    if (arrival.stages === undefined && arrival.rate === undefined) {
      problems.push(["arrival", "give a rate (with durationMs) or stages"]);
    }
    if (arrival.stages === undefined && options.durationMs === undefined) {
      problems.push(["durationMs", "a constant rate needs durationMs (the length of the run)"]);
    }
    if (arrival.stages !== undefined && options.durationMs !== undefined) {
      problems.push(["durationMs", "the stages' lengths add up to the run's length; leave durationMs out"]);
    }
    if (offersNoArrival(arrival)) {
      problems.push(["arrival", "every rate is 0, so the run would offer no arrival; give a rate above 0"]);
    }
  }
  if (sweep !== undefined && options.durationMs !== undefined) {
    problems.push(["durationMs", "a sweep's length is its steps (sweep.stepMs); leave durationMs out"]);
  }
  return problems;
}

/**
 * Whether a profile can offer no arrival at all: a lone rate of 0, or stages whose targets and
 * start rate are all 0. Such a run would send nothing and still report "completed", so a gate
 * without thresholds would pass it; it is refused instead. A profile with any rate above 0 can
 * offer arrivals and is accepted.
 */
function offersNoArrival(arrival: NonNullable<OpenModelFields["arrival"]>): boolean {
  if (arrival.stages === undefined) return arrival.rate === 0;
  return (arrival.rate ?? 0) === 0 && arrival.stages.every((stage) => stage.rate === 0);
}

/** The stages an `arrival` option plays: its own, or one stage of `durationMs` at `rate`. */
export function arrivalStages(arrival: ArrivalOptions, durationMs: number | undefined): ArrivalStage[] {
  if (arrival.stages !== undefined) return [...arrival.stages];
  return [{ durationMs: durationMs ?? 0, rate: arrival.rate ?? 0 }];
}
