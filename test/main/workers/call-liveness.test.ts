/**
 * How a WorkerLink judges a call its worker leaves unanswered (X8, worker-link.ts `call`): by the
 * worker's liveness, within a bound. An in-process worker (serveWorker on a MessageChannel) behind
 * a relay that swallows one method's calls; the worker's heartbeats, or their absence, decide.
 * The same with real threads and a worker busy behind a backlog: busy-worker-calls.thread.test.ts.
 */
import { MessageChannel } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { LIVE_CALL_PERIODS, signOfLifeMs } from "../../../src/main/workers/hang-judgement.js";
import { WorkerLink } from "../../../src/main/workers/worker-link.js";
import { serveWorker } from "../../../src/worker/serve-worker.js";
import { within } from "../../fixtures/bounded.js";

const CALL_TIMEOUT_MS = 100;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A link whose worker never answers `listBuiltInModels`; `heartbeatMs` 0: the worker sends nothing on its own. */
function swallowingLink(heartbeatMs: number): { link: WorkerLink; terminated: () => boolean } {
  const toMain = new MessageChannel();
  const toWorker = new MessageChannel();
  toMain.port2.on("message", (data: { path?: unknown }) => {
    const path = Array.isArray(data?.path) ? data.path : [];
    if (path[0] !== "listBuiltInModels") toWorker.port1.postMessage(data);
  });
  toWorker.port1.on("message", (data: unknown) => toMain.port2.postMessage(data));
  const served = serveWorker(toWorker.port2, { heartbeatMs });
  let terminated = false;
  const link = new WorkerLink(
    {
      port: toMain.port1,
      done: served,
      terminate: () => {
        terminated = true;
        toWorker.port1.close();
        toMain.port2.close();
      },
    },
    {
      callTimeoutMs: CALL_TIMEOUT_MS,
      hangTimeoutMs: 1000,
      setupTimeoutMs: 5000,
      controlTimeoutMs: 5000,
      onProtocolError: () => {},
    },
  );
  cleanups.push(async () => {
    toWorker.port1.close();
    toMain.port2.close();
    await link.close();
  });
  return { link, terminated: () => terminated };
}

async function timedRejection(call: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const start = performance.now();
  const error = await within(
    call.then(
      () => undefined,
      (e: unknown) => e,
    ),
    5000,
    "the unanswered call to settle",
  );
  return { error, ms: performance.now() - start };
}

describe("a call the worker does not answer", () => {
  it("X8: from a worker that keeps sending, it waits LIVE_CALL_PERIODS × callTimeoutMs, then rejects with ERR_CALL_TIMEOUT and the worker is terminated", async () => {
    const { link, terminated } = swallowingLink(20);
    await within(link.call("watchEventLoop"), 2000, "a call that is answered");
    const { error, ms } = await timedRejection(link.call("listBuiltInModels"));
    expect(error).toMatchObject({ code: "ERR_CALL_TIMEOUT", message: expect.stringMatching(/kept sending/) });
    expect(ms).toBeGreaterThanOrEqual(LIVE_CALL_PERIODS * CALL_TIMEOUT_MS - 5);
    expect(terminated()).toBe(true);
  });

  it("X8: from a worker that sends nothing for hangTimeoutMs, it rejects at the first callTimeoutMs that finds it silent", async () => {
    const { link, terminated } = swallowingLink(0);
    await within(link.call("watchEventLoop"), 2000, "a call that is answered");
    // Silent past hangTimeoutMs (1 s) before the call: its first timeout judges it stuck.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const { error, ms } = await timedRejection(link.call("listBuiltInModels"));
    expect(error).toMatchObject({ code: "ERR_CALL_TIMEOUT", message: expect.stringMatching(/blocked in synchronous/) });
    expect(ms).toBeLessThan(LIVE_CALL_PERIODS * CALL_TIMEOUT_MS);
    expect(terminated()).toBe(true);
  });
});

describe("signOfLifeMs: how long a worker busy in one task stays silent before it posts a heartbeat", () => {
  it("is the heartbeat's period, or a quarter of an abort's window if that is shorter, and at least 10 ms", () => {
    expect(signOfLifeMs(1000, 2000)).toBe(500);
    expect(signOfLifeMs(250, 2000)).toBe(250);
    expect(signOfLifeMs(1000, 100)).toBe(25);
    expect(signOfLifeMs(1000, 8)).toBe(10);
  });
});
