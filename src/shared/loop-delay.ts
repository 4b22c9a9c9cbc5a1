/**
 * Sampling a thread's event-loop delay (B9), the same way on the main thread and in each worker:
 * a timer of period {@link LOOP_DELAY_RESOLUTION_MS} records the time between its own ticks into a
 * histogram, read as three quantiles and reset, so each reading covers the time since the
 * previous one. An idle loop reads about one period; a loop blocked for 800 ms reads about 800 ms.
 *
 * Why not `perf_hooks.monitorEventLoopDelay`, which does the same in native code: its `reset()`
 * also forgets the sampler's previous tick (Node's `Histogram::Reset` zeroes it), so the first
 * interval after every reading is never recorded, and a stall that begins before the sampler's
 * first tick after a reading is lost for good. That is the common case for a worker: a prompt
 * arriving right after a report runs its whole turn, a long synchronous tool included, in one
 * task. Here the previous tick is ours and survives the reset.
 *
 * Cost: the timer wakes the loop every period even when it is idle. At 10 ms that was about
 * 5.5 ms of CPU per second per thread on the 2-vCPU bench machine under load (docs/performance.md
 * (i)); 20 ms halves it and still sees every stall of 20 ms or more (a shorter one that falls
 * between two ticks may go unseen). A sampler runs only while a host records metrics.
 */
import { createHistogram, type Histogram, type RecordableHistogram } from "node:perf_hooks";
import type { LoopDelay } from "./wire/protocol.js";

/** How often the sampler wakes the loop, in ms. */
const LOOP_DELAY_RESOLUTION_MS = 20;

/** Samples the calling thread's loop from construction until {@link LoopDelaySampler.stop}. */
export class LoopDelaySampler {
  readonly #histogram: RecordableHistogram = createHistogram();
  readonly #timer: NodeJS.Timeout;
  #lastTick = performance.now();

  constructor(resolutionMs: number = LOOP_DELAY_RESOLUTION_MS) {
    this.#timer = setInterval(() => this.#tick(), resolutionMs);
    // Sampling keeps nothing alive: the thread lives as long as its own work does.
    this.#timer.unref();
  }

  /**
   * The delay since the previous reading, in seconds, then resets; undefined when no tick came
   * meanwhile (the loop was blocked the whole time, or the reading came too soon: the stall is
   * then in the next reading).
   */
  take(): LoopDelay | undefined {
    return this.takeWith((histogram) =>
      histogram.count > 0
        ? { p50: histogram.percentile(50) / 1e9, p99: histogram.percentile(99) / 1e9, max: histogram.max / 1e9 }
        : undefined,
    );
  }

  /**
   * Reads the ticks since the previous reading with `read` (a histogram of the nanoseconds between
   * two ticks, one period included), then resets; for readers that want other figures than
   * {@link take}'s (the load tool's timeline: mean and max).
   */
  takeWith<T>(read: (histogram: Histogram) => T): T {
    const value = read(this.#histogram);
    this.#histogram.reset();
    return value;
  }

  /** Stops the timer. Idempotent. */
  stop(): void {
    clearInterval(this.#timer);
  }

  #tick(): void {
    const now = performance.now();
    // Whole nanoseconds, at least 1: the histogram records positive integers only.
    this.#histogram.record(Math.max(1, Math.round((now - this.#lastTick) * 1e6)));
    this.#lastTick = now;
  }
}
