/**
 * `lifeline load`'s flags of the open model and the sweep (`--rate`, `--stage`, `--arrival`,
 * `--on-cap`, `--sweep`, `--sweep-step`), turned into {@link ArrivalOptions} and
 * {@link SweepOptions}. Every refusal is ERR_INVALID_OPTIONS naming the flag, as load-flags.ts's.
 */
import { LifelineError } from "../../shared/errors.js";
import type { ArrivalStage } from "./arrivals.js";
import { parseDuration } from "./load-flags.js";
import type { ArrivalOptions, SweepOptions } from "./open-options.js";

/** The flags this file reads (commander's camelCase names; values as typed). */
export interface OpenFlags {
  rate?: string;
  stage?: string[];
  arrival?: string;
  onCap?: string;
  /** `--sweep` alone is `true`; `--sweep <k>` the number of rates. */
  sweep?: string | boolean;
  sweepStep?: string;
  duration?: string;
  rampUp?: string;
  concurrency?: string;
}

/** True when the flags ask for the open model or a sweep (then `--prompts`/`--duration` are not required). */
export function isOpenModel(flags: OpenFlags): boolean {
  return flags.rate !== undefined || (flags.stage ?? []).length > 0 || flags.sweep !== undefined;
}

const PER_UNIT: Record<string, number> = { ms: 1000, s: 1, m: 1 / 60, h: 1 / 3600 };

/**
 * A rate in arrivals per second: `50`, `50/s`, `0.5/s`, `600/m`, `3600/h`.
 * @throws ERR_INVALID_OPTIONS naming `flag`.
 */
export function parseRate(flag: string, text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*(ms|s|m|h))?\s*$/.exec(text);
  const perSecond = match === null ? Number.NaN : Number(match[1]) * (PER_UNIT[match[2] ?? "s"] ?? Number.NaN);
  if (!Number.isFinite(perSecond) || perSecond > 100_000) {
    usage(`${flag} "${text}" is not a rate; use a number per s, m or h, for example 50/s or 600/m (at most 100000/s).`);
  }
  return perSecond;
}

/** `--stage <time>:<rate>`, such as `30s:10/s`. @throws ERR_INVALID_OPTIONS. */
function parseStage(text: string): ArrivalStage {
  const colon = text.indexOf(":");
  if (colon < 0) usage(`--stage "${text}" is not <time>:<rate>; for example 30s:10/s (ramp to 10/s over 30 s).`);
  return {
    durationMs: parseDuration(`--stage "${text}"`, text.slice(0, colon), 1),
    rate: parseRate(`--stage "${text}"`, text.slice(colon + 1)),
  };
}

/**
 * The open-model and sweep options of `flags`; empty for the closed model.
 * @throws ERR_INVALID_OPTIONS for a bad value or flags that do not go together.
 */
export function openOptionsFromFlags(flags: OpenFlags): { arrival?: ArrivalOptions; sweep?: SweepOptions } {
  const stages = (flags.stage ?? []).map(parseStage);
  const open = flags.rate !== undefined || stages.length > 0;
  if (!open && flags.sweep === undefined) {
    if (flags.arrival !== undefined || flags.onCap !== undefined) {
      usage("--arrival and --on-cap shape the open model; give --rate or --stage with them.");
    }
    if (flags.sweepStep !== undefined) usage("--sweep-step sets the length of a sweep's steps; give --sweep with it.");
    return {};
  }
  if (flags.rampUp !== undefined) usage("--ramp-up is for the closed model; ramp the open model with --stage.");
  if (flags.concurrency !== undefined) {
    usage("--concurrency is for the closed model; in the open model and the sweep --sessions is the cap.");
  }
  if (flags.sweep !== undefined) {
    if (open) usage("--sweep chooses its own rates; leave --rate and --stage out.");
    if (flags.duration !== undefined) usage("--sweep's length is its steps (--sweep-step); leave --duration out.");
    if (flags.arrival !== undefined || flags.onCap !== undefined) {
      usage("--sweep's rate steps are constant and drop at the cap; leave --arrival and --on-cap out.");
    }
    const sweep: SweepOptions = {};
    if (typeof flags.sweep === "string") sweep.rates = parseInteger("--sweep", flags.sweep, 1, 50);
    if (flags.sweepStep !== undefined) sweep.stepMs = parseDuration("--sweep-step", flags.sweepStep, 100);
    return { sweep };
  }
  if (flags.sweepStep !== undefined) usage("--sweep-step sets the length of a sweep's steps; give --sweep with it.");
  const arrival: ArrivalOptions = {};
  if (flags.rate !== undefined) arrival.rate = parseRate("--rate", flags.rate);
  if (stages.length > 0) {
    if (flags.duration !== undefined) usage("--stage lengths add up to the run's length; leave --duration out.");
    arrival.stages = stages;
  } else if (flags.duration === undefined) {
    usage("--rate needs --duration (how long to keep it), or --stage to shape it.");
  }
  if (flags.arrival !== undefined) {
    if (flags.arrival !== "constant" && flags.arrival !== "poisson") {
      usage(`--arrival "${flags.arrival}" must be constant or poisson.`);
    }
    arrival.process = flags.arrival;
  }
  if (flags.onCap !== undefined) {
    if (flags.onCap !== "drop" && flags.onCap !== "delay") usage(`--on-cap "${flags.onCap}" must be drop or delay.`);
    arrival.onCap = flags.onCap;
  }
  return { arrival };
}

function parseInteger(flag: string, text: string, min: number, max: number): number {
  const value = /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    usage(`${flag} "${text}" must be a whole number from ${min} to ${max}.`);
  }
  return value;
}

function usage(message: string): never {
  throw new LifelineError("ERR_INVALID_OPTIONS", message);
}
