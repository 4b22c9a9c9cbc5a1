/**
 * B9: the event-loop utilization gauges (src/main/telemetry/event-loop-metrics.ts) with the real
 * OpenTelemetry SDK and a real worker thread. A first reading covers the main thread's time since
 * the gauges were registered, and a new worker's life so far; never the instant of the collection
 * itself, which read 1.000 for the host and a negative share for a worker. Each is compared with
 * the thread's own accounting (`eventLoopUtilization()`) over the interval around it.
 */
import type { EventLoopUtilization } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { observeEventLoops } from "../../../src/main/telemetry/event-loop-metrics.js";
import { pointsOf, type Recorded, recordInMemory } from "../../fixtures/otel.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A worker that, asked to, waits `idleMs` on a timer, then keeps its loop busy for `busyMs`, then answers. */
const IDLE_THEN_BUSY = `
const { parentPort } = require("node:worker_threads");
parentPort.on("message", ({ idleMs, busyMs }) => {
  setTimeout(() => {
    const end = performance.now() + busyMs;
    while (performance.now() < end) {}
    parentPort.postMessage("done");
  }, idleMs);
});
`;

async function startWorker(): Promise<Worker> {
  const worker = new Worker(IDLE_THEN_BUSY, { eval: true });
  cleanups.push(() => worker.terminate());
  await new Promise((resolve) => worker.once("online", resolve));
  return worker;
}

/** The worker's loop waits 200 ms, then works 100 ms: its utilization so far is well inside (0, 1). */
async function idleThenBusy(worker: Worker): Promise<void> {
  const done = new Promise((resolve) => worker.once("message", resolve));
  worker.postMessage({ idleMs: 200, busyMs: 100 });
  await done;
}

async function utilizations(recorded: Recorded): Promise<{ host: number[]; workers: number[] }> {
  const metrics = await recorded.metrics();
  const values = (name: string) => pointsOf(metrics, name).map((point) => point.value as number);
  return {
    host: values("lifeline.host.event_loop.utilization"),
    workers: values("lifeline.worker.event_loop.utilization"),
  };
}

const share = (from: EventLoopUtilization, to: EventLoopUtilization) => performance.eventLoopUtilization(to, from);

describe("event-loop utilization, first readings", () => {
  it("B9: the host's first reading is its loop's share since the gauges were registered", async () => {
    const recorded = recordInMemory();
    cleanups.push(() => recorded.shutdown());
    const worker = await startWorker();
    const before = performance.eventLoopUtilization();
    const loops = observeEventLoops(recorded.meterProvider.getMeter("test"), () => []);
    cleanups.push(() => loops.stop());
    // The main thread waits, idle, for the worker.
    await idleThenBusy(worker);
    const { host } = await utilizations(recorded);
    const around = share(before, performance.eventLoopUtilization()).utilization;
    expect(host).toHaveLength(1);
    expect(host[0]).toBeGreaterThanOrEqual(0);
    // `around` also holds the registration and the SDK's export after the reading (a few % of
    // the interval's time, all of it busy); a reading of the collection's instant is about 1.
    expect(Math.abs((host[0] ?? Number.NaN) - around)).toBeLessThan(0.2);
  });

  it("B9: a worker's first reading, also one that starts after an earlier collection, is its loop's share of its life so far", async () => {
    const recorded = recordInMemory();
    cleanups.push(() => recorded.shutdown());
    const threads: Worker[] = [];
    const loops = observeEventLoops(recorded.meterProvider.getMeter("test"), () => threads);
    cleanups.push(() => loops.stop());
    expect((await utilizations(recorded)).workers).toEqual([]);
    const worker = await startWorker();
    threads.push(worker);
    await idleThenBusy(worker);
    const { workers } = await utilizations(recorded);
    // The worker's own accounting since its loop started; it has been idle since it answered.
    const life = worker.performance.eventLoopUtilization().utilization;
    expect(life).toBeGreaterThan(0.05);
    expect(workers).toHaveLength(1);
    expect(workers[0]).toBeGreaterThanOrEqual(0);
    expect(workers[0]).toBeLessThanOrEqual(1);
    expect(Math.abs((workers[0] ?? Number.NaN) - life)).toBeLessThan(0.05);
  });
});
