/**
 * The run over time: every `sampleIntervalMs` one point of concurrency (gauges read at the
 * sample), what happened since the previous point (requests, retries, failures by kind, output
 * tokens) and the host's event-loop delay over that interval. Also the loop-delay figures of the
 * whole run.
 *
 * Event-loop delay is the time between ticks of a timer of period {@link LOOP_RESOLUTION_MS}; the
 * timer's own period is taken off, so an idle loop reads about 0 ms and a loop blocked for 100 ms
 * reads about 100 ms. The whole run's figures come from `perf_hooks.monitorEventLoopDelay`, never
 * reset; each point's from a {@link LoopDelaySampler}, whose reset keeps its last tick (Node's
 * sampler forgets it, so a stall that began just after a point would be missing from the next).
 */
import { type Histogram, type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import { LoopDelaySampler } from "../../../shared/loop-delay.js";
import type { LoadCounters } from "./load-metrics.js";
import { round3 } from "./stats.js";

/** Period of the loop-delay probe, in ms (Node's default is 10). */
const LOOP_RESOLUTION_MS = 10;

/** One point of report.json `timeline.points`. */
export interface TimelinePoint {
  /** End of the interval, ms since the run began. */
  tMs: number;
  inFlightPrompts: number;
  inFlightRequests: number;
  /** Requests that ended in the interval. */
  requests: number;
  retries: number;
  /** Failed requests of the interval by kind (see `failureKind`). */
  failures: Record<string, number>;
  outputTokens: number;
  /** The host's event-loop delay in the interval: mean and max, ms. */
  loopDelayMeanMs: number;
  loopDelayMaxMs: number;
}

/** Event-loop delay of the whole run (report.json `loopDelayMs`), ms. */
export interface LoopDelaySummary {
  mean: number;
  p50: number;
  p99: number;
  max: number;
}

interface Previous {
  requests: number;
  retries: number;
  outputTokens: number;
  failures: Record<string, number>;
}

/** Samples a run's counters and the host's event loop; see the file comment. */
export class Timeline {
  readonly points: TimelinePoint[] = [];
  readonly #counters: LoadCounters;
  readonly #interval: LoopDelaySampler;
  readonly #whole: IntervalHistogram;
  #previous: Previous;

  constructor(counters: LoadCounters) {
    this.#counters = counters;
    this.#interval = new LoopDelaySampler(LOOP_RESOLUTION_MS);
    this.#whole = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
    this.#whole.enable();
    this.#previous = snapshot(counters);
  }

  /** Takes one point at `tMs` and starts the next interval. */
  sample(tMs: number): TimelinePoint {
    const counters = this.#counters;
    const failures: Record<string, number> = {};
    for (const [kind, total] of Object.entries(counters.failuresByKind)) {
      const delta = total - (this.#previous.failures[kind] ?? 0);
      if (delta > 0) failures[kind] = delta;
    }
    const loop = this.#interval.takeWith((histogram) => ({
      mean: delayMs(histogram, histogram.mean),
      max: delayMs(histogram, histogram.max),
    }));
    const point: TimelinePoint = {
      tMs: Math.round(tMs),
      inFlightPrompts: counters.inFlightPrompts,
      inFlightRequests: counters.inFlightRequests,
      requests: counters.requests - this.#previous.requests,
      retries: counters.retries - this.#previous.retries,
      failures,
      outputTokens: counters.outputTokens - this.#previous.outputTokens,
      loopDelayMeanMs: loop.mean,
      loopDelayMaxMs: loop.max,
    };
    this.#previous = snapshot(counters);
    this.points.push(point);
    return point;
  }

  /** The whole run's loop delay so far. */
  loopDelay(): LoopDelaySummary {
    const whole = this.#whole;
    return {
      mean: delayMs(whole, whole.mean),
      p50: delayMs(whole, whole.percentile(50)),
      p99: delayMs(whole, whole.percentile(99)),
      max: delayMs(whole, whole.max),
    };
  }

  /** Stops the probes. Idempotent. */
  stop(): void {
    this.#interval.stop();
    this.#whole.disable();
  }
}

/** A histogram figure (ns, one timer period included) as delay in ms; 0 before any sample. */
function delayMs(histogram: Histogram, nanoseconds: number): number {
  if (histogram.count === 0 || !Number.isFinite(nanoseconds)) return 0;
  return round3(Math.max(0, nanoseconds / 1e6 - LOOP_RESOLUTION_MS));
}

function snapshot(counters: LoadCounters): Previous {
  return {
    requests: counters.requests,
    retries: counters.retries,
    outputTokens: counters.outputTokens,
    failures: { ...counters.failuresByKind },
  };
}
