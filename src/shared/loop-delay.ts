/**
 * Sampling a thread's event-loop delay (B9), the same way on the main thread and in each worker:
 * Node's `monitorEventLoopDelay`, read as three quantiles and reset, so each reading covers the
 * time since the previous one.
 *
 * Cost: the sampler is a timer of its own, so every sample wakes the loop even when it is idle.
 * At Node's default 10 ms that was about 5.5 ms of CPU per second per thread on the 2-vCPU bench
 * machine under load (docs/performance.md (i)); 20 ms halves it and still sees every stall of
 * 20 ms or more (a shorter one that falls between two samples may go unseen). A sampler runs only
 * while a host records metrics.
 */
import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import type { LoopDelay } from "./protocol.js";

/** How often the sampler wakes the loop, in ms. */
const LOOP_DELAY_RESOLUTION_MS = 20;

/** Starts sampling the calling thread's loop. Call `disable()` on the result to stop. */
export function sampleLoopDelay(): IntervalHistogram {
  const histogram = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
  histogram.enable();
  return histogram;
}

/**
 * The delay `histogram` saw since its previous reading, in seconds, then resets it; undefined when
 * it took no sample meanwhile (the loop was blocked the whole time, or the reading came too soon).
 */
export function takeLoopDelay(histogram: IntervalHistogram): LoopDelay | undefined {
  const delay =
    histogram.count > 0
      ? { p50: histogram.percentile(50) / 1e9, p99: histogram.percentile(99) / 1e9, max: histogram.max / 1e9 }
      : undefined;
  histogram.reset();
  return delay;
}
