/**
 * How a distributed run's load is split among its generators: pure functions.
 *
 * `sessions` is split as evenly as possible (the shares differ by at most one, the first ones
 * larger), and so is `concurrency` when given; in the open model `sessions` is the cap of
 * conversations open at once, split the same way. The open model's arrival rates (the lone rate,
 * the start rate and every stage's) are divided by the number of generators k: generator i plays
 * the divided profile at phase i ÷ k (arrivals.ts), so with evenly spaced arrivals the union of
 * the generators' arrivals is exactly the undivided schedule, and with Poisson arrivals it is a
 * Poisson process of the undivided rate (independent Poisson processes add up). The sweep is not
 * split: it measures the target between steps, which needs one process to decide.
 *
 * Each generator gets the seed `seed + index` (its mock's faults, its Poisson arrivals), so the
 * generators' sequences differ yet a run is reproducible, and its own slice of the prompt texts
 * and conversations (`promptSlice`), so the target does not see K copies of the same
 * conversations at the same point: in the closed model generator i's sessions play the
 * conversations after the sessions of the generators before it (session j of generator i is
 * conversation `offset_i + j`, as in one process); in the open model arrival n of generator i is
 * conversation `i + n × k`, the arrival it is in the undivided schedule.
 *
 * Every other option applies to every generator as given (prompts, duration, ramp-up, think
 * time, the model, the mock, the load tool, the SLO, the prompts themselves…): a generator is
 * handed the whole `LoadOptions` but the split fields and those the coordinator keeps
 * (`COORDINATOR_ONLY`, load-fleet-protocol.ts, each with its reason).
 */
import { LifelineError } from "../../shared/errors.js";
import { LOAD_DEFAULTS, type LoadOptions } from "../load/options/load-options.js";
import type { ArrivalOptions } from "../load/options/open-options.js";
import { COORDINATOR_ONLY, type ShareOptions } from "./load-fleet-protocol.js";

/** `total` in `parts` shares differing by at most one, larger first. @throws RangeError when total < parts. */
export function evenShares(total: number, parts: number): number[] {
  if (!(Number.isInteger(total) && Number.isInteger(parts) && parts >= 1 && total >= parts)) {
    throw new RangeError(`cannot split ${total} into ${parts} shares of at least 1`);
  }
  const base = Math.floor(total / parts);
  return Array.from({ length: parts }, (_, i) => base + (i < total % parts ? 1 : 0));
}

/**
 * Each generator's options, in generator order.
 * @throws ERR_INVALID_OPTIONS when there are fewer sessions (or less concurrency) than
 *   generators, or for a sweep.
 */
export function splitLoad(options: LoadOptions, generators: number): ShareOptions[] {
  if (options.sweep !== undefined) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      "--sweep is not available with --generators: each step of a sweep is chosen from the target's answers to the last, which one process decides. Run the sweep on one machine, then a distributed run at the rates it found (--rate).",
    );
  }
  if (options.sessions < generators) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `--sessions ${options.sessions} cannot be split among --generators ${generators}: give at least one session per generator.`,
    );
  }
  if (options.concurrency !== undefined && options.concurrency < generators) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `--concurrency ${options.concurrency} cannot be split among --generators ${generators}: give at least 1 per generator.`,
    );
  }
  const sessions = evenShares(options.sessions, generators);
  const concurrency = options.concurrency === undefined ? undefined : evenShares(options.concurrency, generators);
  const seed = options.seed ?? LOAD_DEFAULTS.seed;
  const shared: Record<string, unknown> = { ...options };
  for (const name of Object.keys(COORDINATOR_ONLY)) delete shared[name];
  let before = 0;
  return sessions.map((share, index) => {
    const part: ShareOptions = { ...(shared as ShareOptions), sessions: share, seed: seed + index };
    const limit = concurrency?.[index];
    if (limit !== undefined) part.concurrency = limit;
    // Within the run's own slice, if it was given one: generator i's part of it.
    const outer = options.promptSlice ?? { offset: 0, stride: 1 };
    const inner = options.arrival === undefined ? { offset: before, stride: 1 } : { offset: index, stride: generators };
    part.promptSlice = { offset: outer.offset + inner.offset * outer.stride, stride: inner.stride * outer.stride };
    if (options.arrival !== undefined) part.arrival = splitArrival(options.arrival, index, generators);
    before += share;
    return part;
  });
}

/** Generator `index` of `generators`' part of an open-model schedule: every rate ÷ k, phase i ÷ k. */
export function splitArrival(arrival: ArrivalOptions, index: number, generators: number): ArrivalOptions {
  const part: ArrivalOptions = { ...arrival, phase: index / generators };
  if (arrival.rate !== undefined) part.rate = arrival.rate / generators;
  if (arrival.stages !== undefined) {
    part.stages = arrival.stages.map((stage) => ({ durationMs: stage.durationMs, rate: stage.rate / generators }));
  }
  return part;
}
