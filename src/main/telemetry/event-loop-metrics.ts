/**
 * B9: the event loops of the host (the main thread, where every session's events are delivered)
 * and of its workers, as observable instruments read at each collection. Nothing runs between
 * collections except Node's own delay sampler. A worker's utilization is read from the main thread
 * (`Worker.performance.eventLoopUtilization()`), so no message crosses the port for it; a worker's
 * event-loop delay can only be sampled inside the worker and is not reported.
 */
import { type EventLoopUtilization, type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import type { Worker } from "node:worker_threads";
import type { BatchObservableResult, Meter, ObservableResult } from "@opentelemetry/api";

/** How often Node samples the main thread's loop delay, in ms (its own timer; the finest is 1 ms). */
const DELAY_RESOLUTION_MS = 10;

/**
 * Registers the event-loop instruments on `meter`; `workers` lists the pool's live threads.
 * Returns the function that stops the delay sampler and removes the callbacks (the host's `close()`).
 */
export function observeEventLoops(meter: Meter, workers: () => readonly Worker[]): () => void {
  const delay: IntervalHistogram = monitorEventLoopDelay({ resolution: DELAY_RESOLUTION_MS });
  delay.enable();
  const quantiles = [
    { name: "p50", read: () => delay.percentile(50) },
    { name: "p99", read: () => delay.percentile(99) },
    { name: "max", read: () => delay.max },
  ];
  const gauges = quantiles.map(({ name }) =>
    meter.createObservableGauge(`lifeline.host.event_loop.delay.${name}`, {
      unit: "s",
      description: `The main thread's event-loop delay since the previous collection, ${name}.`,
    }),
  );
  // One batch callback reads all three and then resets, so every collection covers one interval.
  const readDelay = (observer: BatchObservableResult) => {
    if (delay.count > 0) {
      quantiles.forEach(({ read }, i) => {
        const gauge = gauges[i];
        if (gauge !== undefined) observer.observe(gauge, read() / 1e9);
      });
    }
    delay.reset();
  };
  meter.addBatchObservableCallback(readDelay, gauges);

  let mainLast: EventLoopUtilization | undefined;
  const mainGauge = meter.createObservableGauge("lifeline.host.event_loop.utilization", {
    unit: "1",
    description: "Share of the main thread's time its event loop was busy since the previous collection.",
  });
  const readMain = (result: ObservableResult) => {
    const now = performance.eventLoopUtilization();
    result.observe(performance.eventLoopUtilization(now, mainLast).utilization);
    mainLast = now;
  };
  mainGauge.addCallback(readMain);

  const workerLast = new WeakMap<Worker, EventLoopUtilization>();
  const workerGauge = meter.createObservableGauge("lifeline.worker.event_loop.utilization", {
    unit: "1",
    description: "Share of each worker thread's time its event loop was busy since the previous collection.",
  });
  // Slots, not thread ids, as the attribute: a restarted worker takes its slot, so the series stay few.
  const readWorkers = (result: ObservableResult) => {
    workers().forEach((worker, slot) => {
      const now = worker.performance.eventLoopUtilization();
      const last = workerLast.get(worker);
      workerLast.set(worker, now);
      result.observe(worker.performance.eventLoopUtilization(now, last).utilization, { "lifeline.worker.slot": slot });
    });
  };
  workerGauge.addCallback(readWorkers);
  return () => {
    delay.disable();
    meter.removeBatchObservableCallback(readDelay, gauges);
    mainGauge.removeCallback(readMain);
    workerGauge.removeCallback(readWorkers);
  };
}
