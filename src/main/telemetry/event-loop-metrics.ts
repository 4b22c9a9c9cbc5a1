/**
 * B9: the event loops of the host (the main thread, where every session's events are delivered)
 * and of its workers, as observable gauges read at each collection.
 *
 * - The main thread's delay is sampled here (shared/loop-delay.ts) and read as p50, p99 and max
 *   since the previous collection.
 * - A worker's delay can only be sampled inside the worker: it reports it every few seconds on a
 *   heartbeat (protocol.ts), and each collection observes, per worker, the highest p50, p99 and max
 *   of the reports that arrived since the previous one (the highest, so that a short stall is not
 *   averaged away); none when no report arrived.
 * - Utilization is read from the main thread for every thread, the workers' through
 *   `Worker.performance.eventLoopUtilization()`, which reads the worker's own loop accounting: no
 *   message crosses for it, and it is exact for each collection's interval even while the worker
 *   is blocked. The first collection covers the host's time since the gauges were registered, and
 *   a worker's since its loop started: with no previous reading, `eventLoopUtilization(now,
 *   undefined)` measures from `now` to a moment later, which read 1.000 on the host and a
 *   negative share for a new worker.
 *
 * Nothing runs between collections but the delay samplers. Workers carry `lifeline.worker.slot`
 * (worker-slots.ts), never a thread id.
 */
import type { EventLoopUtilization } from "node:perf_hooks";
import type { Worker } from "node:worker_threads";
import type { BatchObservableResult, Meter, ObservableGauge } from "@opentelemetry/api";
import { LoopDelaySampler } from "../../shared/loop-delay.js";
import type { LoopDelay } from "../../shared/wire/protocol.js";
import { WorkerSlots } from "./worker-slots.js";

/** What {@link observeEventLoops} returns to the host's telemetry. */
export interface EventLoopObserver {
  /** A worker's loop report arrived (thread `threadId`). */
  workerDelay(threadId: number, delay: LoopDelay): void;
  /** Stops the main thread's sampler and removes the callback (the host's `close()`). */
  stop(): void;
}

type Quantile = keyof LoopDelay;
const QUANTILES: readonly Quantile[] = ["p50", "p99", "max"];

/** Registers the event-loop gauges on `meter`; `workers` lists the pool's live threads. */
export function observeEventLoops(meter: Meter, workers: () => readonly Worker[]): EventLoopObserver {
  const delay = new LoopDelaySampler();
  const gauges = (prefix: string, whose: string) =>
    QUANTILES.map((quantile) =>
      meter.createObservableGauge(`${prefix}.event_loop.delay.${quantile}`, {
        unit: "s",
        description: `${whose} event-loop delay since the previous collection, ${quantile}.`,
      }),
    );
  const hostDelay = gauges("lifeline.host", "The main thread's");
  const workerDelay = gauges("lifeline.worker", "Each worker thread's (the highest of its reports)");
  const hostUtilization = meter.createObservableGauge("lifeline.host.event_loop.utilization", {
    unit: "1",
    description: "Share of the main thread's time its event loop was busy since the previous collection.",
  });
  const workerUtilization = meter.createObservableGauge("lifeline.worker.event_loop.utilization", {
    unit: "1",
    description: "Share of each worker thread's time its event loop was busy since the previous collection.",
  });
  const observe = (observer: BatchObservableResult, into: ObservableGauge[], value: LoopDelay, slot?: number) => {
    const attributes = slot === undefined ? undefined : { "lifeline.worker.slot": slot };
    QUANTILES.forEach((quantile, i) => {
      const gauge = into[i];
      if (gauge !== undefined) observer.observe(gauge, value[quantile], attributes);
    });
  };

  let hostLast = performance.eventLoopUtilization();
  const workerLast = new WeakMap<Worker, EventLoopUtilization>();
  /** Worker reports since the previous collection, merged (highest of each quantile), by thread id. */
  const reported = new Map<number, LoopDelay>();
  const slots = new WorkerSlots();
  // One callback for all: it reads and resets, so every collection covers one interval.
  const read = (observer: BatchObservableResult) => {
    const host = delay.take();
    if (host !== undefined) observe(observer, hostDelay, host);
    const now = performance.eventLoopUtilization();
    observer.observe(hostUtilization, performance.eventLoopUtilization(now, hostLast).utilization);
    hostLast = now;
    const threads = workers();
    const threadSlots = slots.assign(threads.map((worker) => worker.threadId));
    threads.forEach((worker, i) => {
      const slot = threadSlots[i] ?? i;
      const current = worker.performance.eventLoopUtilization();
      const last = workerLast.get(worker);
      workerLast.set(worker, current);
      // A worker seen for the first time: its whole life so far (`current` is counted from its loop's start).
      const utilization =
        last === undefined ? current.utilization : worker.performance.eventLoopUtilization(current, last).utilization;
      observer.observe(workerUtilization, utilization, { "lifeline.worker.slot": slot });
      const report = reported.get(worker.threadId);
      if (report !== undefined) observe(observer, workerDelay, report, slot);
    });
    reported.clear();
  };
  const instruments = [...hostDelay, ...workerDelay, hostUtilization, workerUtilization];
  meter.addBatchObservableCallback(read, instruments);
  return {
    workerDelay(threadId, report) {
      const merged = reported.get(threadId);
      reported.set(
        threadId,
        merged === undefined
          ? report
          : {
              p50: Math.max(merged.p50, report.p50),
              p99: Math.max(merged.p99, report.p99),
              max: Math.max(merged.max, report.max),
            },
      );
    },
    stop() {
      delay.stop();
      meter.removeBatchObservableCallback(read, instruments);
      reported.clear();
    },
  };
}
