/**
 * report.json's fields of the open model and the sweep: `config.arrival` (what was asked),
 * `totals.arrivals` (what happened to every arrival) and `sweep` (one result per step). Types
 * and the config builder only; open-run.ts and sweep.ts fill them. docs/load.md documents them.
 */
import type { Summary } from "../metrics/stats.js";
import type { LoadOptions } from "../options/load-options.js";
import {
  type ArrivalProcess,
  type ArrivalStage,
  arrivalStages,
  type OnCap,
  OPEN_DEFAULTS,
} from "../options/open-options.js";

/** report.json `config.arrival`: null for the closed model. */
export interface ArrivalConfig {
  /** `open`: arrivals at a rate or over stages; `sweep`: baseline, probe, then rates. */
  model: "open" | "sweep";
  process: ArrivalProcess;
  /** The open model's stages as played (a lone `rate` is one stage); empty for a sweep. */
  stages: ArrivalStage[];
  /** The rate the first stage ramps from (arrivals/s). */
  startRate: number;
  /** Prompts each arrival (a new conversation on a fresh session) sends. */
  promptsPerArrival: number;
  /** The cap: the most conversations open at once (`sessions`). */
  maxInFlight: number;
  onCap: OnCap;
  /** The sweep's rates between baseline and probe, and each step's length; null for `open`. */
  sweep: { rates: number; stepMs: number } | null;
}

/** What happened to arrivals: every offered arrival is started, dropped or left unstarted. */
export interface ArrivalCounts {
  /** Arrivals the schedule produced (in the sweep's closed steps: conversations begun). */
  offered: number;
  /** Conversations begun (a session opened for them, or tried): each has at least one prompt record. */
  started: number;
  /** Arrivals that found the cap reached with `onCap: "drop"`; never started. */
  dropped: number;
  /** Arrivals that found the cap reached with `onCap: "delay"` and started after their wait: a part of `started`. */
  delayed: number;
  /** Arrivals that waited for the cap and were still waiting when the run (or the step) ended; never started. */
  unstarted: number;
  /** Started conversations whose every prompt succeeded. */
  completed: number;
  /** Started conversations with a failed prompt, or whose session could not be opened. */
  failed: number;
  /** Started conversations cut by the run's (or the step's) end or an interrupt. */
  cancelled: number;
}

/** report.json `totals.arrivals`: null for the closed model. */
export interface ArrivalTotals extends ArrivalCounts {
  /**
   * How late the host started arrivals that did not wait for the cap: start − scheduled time.
   * Lateness is caught up (late arrivals start at once, none is skipped), so this is where a
   * busy event loop shows.
   */
  scheduleLagMs: Summary;
  /** Delayed arrivals: from the scheduled time to the start, the cap's wait included. */
  capWaitMs: Summary;
}

/** Why a sweep step counts as saturating the target (sweep.ts). */
export type SaturationReason = "completion" | "ttft";

/** One step of report.json `sweep.stages`. */
export interface SweepStage {
  kind: "baseline" | "probe" | "rate";
  /** Requested arrivals/s of a `rate` step; null for the closed baseline and probe. */
  offeredRate: number | null;
  /** Step start, ms since the run began, and its length, drain included. */
  startMs: number;
  durationMs: number;
  arrivals: ArrivalCounts;
  /** Completed conversations per second of the step's schedule (`stepMs`). */
  achievedRate: number;
  throughput: { promptsPerSecond: number; requestsPerSecond: number; outputTokensPerSecond: number };
  /** Over the step's successful requests (prompt latency over its successful prompts). */
  latency: { ttftMs: Summary; itlMs: Summary; e2eMs: Summary; promptMs: Summary };
  /**
   * TTFT p50 of the step's later half of requests (by start) over that of its earlier half: above 1,
   * time to first token grew during the step. Null with fewer than 4 samples.
   */
  ttftGrowth: number | null;
  /** The same two p50s' difference, later minus earlier, ms; null with fewer than 4 samples. */
  ttftRiseMs: number | null;
  /** Prompts per second that met the run's SLO; null until an SLO is computed per step (see sweep.ts). */
  goodput: number | null;
  /** Set on the step that ended the sweep early. */
  saturated: SaturationReason | null;
}

/** report.json `sweep`: null unless the run was a sweep. */
export interface SweepReport {
  /** The planned rates between baseline and probe (arrivals/s), empty when the sweep stopped before them. */
  rates: number[];
  stages: SweepStage[];
  /**
   * Why the sweep ended before its last rate: `completion` or `ttft` (a step saturated),
   * `no_headroom` (the probe was not faster than the baseline), `interrupted`; null when every
   * rate ran.
   */
  stopReason: SaturationReason | "no_headroom" | "interrupted" | null;
}

/** `config.arrival` for `options`; null for the closed model. */
export function arrivalConfig(options: LoadOptions): ArrivalConfig | null {
  const { arrival, sweep } = options;
  if (arrival === undefined && sweep === undefined) return null;
  return {
    model: sweep === undefined ? "open" : "sweep",
    process: arrival?.process ?? OPEN_DEFAULTS.process,
    stages: arrival === undefined ? [] : arrivalStages(arrival, options.durationMs),
    startRate: arrival === undefined ? 0 : startRateOf(arrival),
    promptsPerArrival: options.prompts ?? OPEN_DEFAULTS.promptsPerArrival,
    maxInFlight: options.sessions,
    onCap: arrival?.onCap ?? OPEN_DEFAULTS.onCap,
    sweep:
      sweep === undefined
        ? null
        : { rates: sweep.rates ?? OPEN_DEFAULTS.sweepRates, stepMs: sweep.stepMs ?? OPEN_DEFAULTS.sweepStepMs },
  };
}

/** A lone rate starts at itself; stages start at `rate`, else 0 (k6's start rate). */
export function startRateOf(arrival: NonNullable<LoadOptions["arrival"]>): number {
  return arrival.rate ?? 0;
}
