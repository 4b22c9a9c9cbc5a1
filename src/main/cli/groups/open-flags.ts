/**
 * The open-model group of `lifeline load` (`--rate`, `--stage`, `--arrival`, `--on-cap`,
 * `--sweep`, `--sweep-step`), turned into {@link ArrivalOptions} and {@link SweepOptions}. Every
 * refusal is ERR_INVALID_OPTIONS naming the flag.
 */
import { OPEN_DEFAULTS } from "../../load/options/load-defaults.js";
import type { ArrivalOptions, ArrivalStage, SweepOptions } from "../../load/options/open-options.js";
import { listFlag, valueFlag } from "../flag.js";
import { duration, integer, oneOf, parseDuration, usage } from "../flag-values.js";

const PER_UNIT: Readonly<Record<string, number>> = { ms: 1000, s: 1, m: 1 / 60, h: 1 / 3600 };

/**
 * A rate in arrivals per second: `50`, `50/s`, `0.5/s`, `600/m`, `3600/h`.
 * @throws ERR_INVALID_OPTIONS naming `flag`.
 */
export function parseRate(text: string, flag: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*(ms|s|m|h))?\s*$/.exec(text);
  const perSecond = match === null ? Number.NaN : Number(match[1]) * (PER_UNIT[match[2] ?? "s"] ?? Number.NaN);
  if (!Number.isFinite(perSecond) || perSecond > 100_000) {
    usage(`${flag} "${text}" is not a rate; use a number per s, m or h, for example 50/s or 600/m (at most 100000/s).`);
  }
  return perSecond;
}

/** `--stage <time>:<rate>`, such as `30s:10/s`. @throws ERR_INVALID_OPTIONS. */
function parseStage(text: string, flag: string): ArrivalStage {
  const colon = text.indexOf(":");
  if (colon < 0) usage(`${flag} "${text}" is not <time>:<rate>; for example 30s:10/s (ramp to 10/s over 30 s).`);
  return {
    durationMs: parseDuration(`${flag} "${text}"`, text.slice(0, colon), 1),
    rate: parseRate(text.slice(colon + 1), `${flag} "${text}"`),
  };
}

/** The open model's and the sweep's flags. */
export const openFlags = {
  rate: valueFlag("--rate <r>", "open model: new conversations per second, e.g. 50/s (with --duration)", parseRate),
  stage: listFlag(
    "--stage <time:rate>",
    "open model: ramp to a rate over a time, e.g. 30s:10/s; repeatable",
    parseStage,
  ),
  arrival: valueFlag(
    "--arrival <process>",
    "open model: constant or poisson (seeded by --seed)",
    oneOf(["constant", "poisson"] as const),
    { defaultText: OPEN_DEFAULTS.process },
  ),
  onCap: valueFlag(
    "--on-cap <what>",
    "open model: an arrival that finds --sessions conversations open: drop or delay",
    oneOf(["drop", "delay"] as const),
    { defaultText: OPEN_DEFAULTS.onCap },
  ),
  sweep: valueFlag(
    "--sweep [k]",
    "a synchronous baseline, a throughput probe, then k rates between",
    (raw, flag) => (raw === "" ? OPEN_DEFAULTS.sweepRates : integer(1, 50)(raw, flag)),
    { defaultText: `${OPEN_DEFAULTS.sweepRates} rates` },
  ),
  sweepStep: valueFlag("--sweep-step <time>", "length of each sweep step", duration(100), {
    defaultText: `${OPEN_DEFAULTS.sweepStepMs / 1000}s`,
  }),
} as const;

/** The values of {@link openFlags}, and the closed-model flags they exclude. */
export interface OpenFlagValues {
  rate?: number | undefined;
  stage?: ArrivalStage[] | undefined;
  arrival?: "constant" | "poisson" | undefined;
  onCap?: "drop" | "delay" | undefined;
  sweep?: number | undefined;
  sweepStep?: number | undefined;
  durationMs?: number | undefined;
  rampUpMs?: number | undefined;
  concurrency?: number | undefined;
}

/** True when the flags ask for the open model (`--rate`, `--stage`). */
export function isOpenModel(values: OpenFlagValues): boolean {
  return values.rate !== undefined || (values.stage ?? []).length > 0;
}

/**
 * The open-model and sweep options of `values`; empty for the closed model.
 * @throws ERR_INVALID_OPTIONS for flags that do not go together.
 */
export function openOptions(values: OpenFlagValues): { arrival?: ArrivalOptions; sweep?: SweepOptions } {
  const stages = values.stage ?? [];
  const open = isOpenModel(values);
  if (!open && values.sweep === undefined) {
    if (values.arrival !== undefined || values.onCap !== undefined) {
      usage("--arrival and --on-cap shape the open model; give --rate or --stage with them.");
    }
    if (values.sweepStep !== undefined) usage("--sweep-step sets the length of a sweep's steps; give --sweep with it.");
    return {};
  }
  if (values.rampUpMs !== undefined) usage("--ramp-up is for the closed model; ramp the open model with --stage.");
  if (values.concurrency !== undefined) {
    usage("--concurrency is for the closed model; in the open model and the sweep --sessions is the cap.");
  }
  if (values.sweep !== undefined) {
    if (open) usage("--sweep chooses its own rates; leave --rate and --stage out.");
    if (values.durationMs !== undefined) usage("--sweep's length is its steps (--sweep-step); leave --duration out.");
    if (values.arrival !== undefined || values.onCap !== undefined) {
      usage("--sweep's rate steps are constant and drop at the cap; leave --arrival and --on-cap out.");
    }
    const sweep: SweepOptions = { rates: values.sweep };
    if (values.sweepStep !== undefined) sweep.stepMs = values.sweepStep;
    return { sweep };
  }
  if (values.sweepStep !== undefined) usage("--sweep-step sets the length of a sweep's steps; give --sweep with it.");
  const arrival: ArrivalOptions = {};
  if (values.rate !== undefined) arrival.rate = values.rate;
  if (stages.length > 0) {
    if (values.durationMs !== undefined) usage("--stage lengths add up to the run's length; leave --duration out.");
    arrival.stages = stages;
  } else if (values.durationMs === undefined) {
    usage("--rate needs --duration (how long to keep it), or --stage to shape it.");
  }
  if (values.arrival !== undefined) arrival.process = values.arrival;
  if (values.onCap !== undefined) arrival.onCap = values.onCap;
  return { arrival };
}
