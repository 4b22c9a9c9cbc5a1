/**
 * Which worker handles hold the process: a WorkerLink over an in-process worker (a MessageChannel),
 * with the pool's side of the worker replaced by a recorder and the pool's task by a promise the
 * test settles. The whole story with real threads and processes is in test/embedding.process.test.ts.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { MessageChannel } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { WorkerLink } from "../../../src/main/workers/worker-link.js";
import { serveWorker } from "../../../src/worker/serve-worker.js";
import { within } from "../../fixtures/bounded.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A link to an in-process worker; `referenced` records every flip of the pool's handle. */
function link(): { link: WorkerLink; referenced: boolean[]; served: Promise<void>; finishTask: () => void } {
  const { port1, port2 } = new MessageChannel();
  const served = serveWorker(port2);
  let finishTask: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finishTask = resolve;
  });
  const referenced: boolean[] = [];
  const workerLink = new WorkerLink(
    { port: port1, done, setReferenced: (value) => referenced.push(value) },
    {
      callTimeoutMs: 5_000,
      hangTimeoutMs: 15_000,
      setupTimeoutMs: 5_000,
      controlTimeoutMs: 5_000,
      onProtocolError: () => {},
    },
  );
  cleanups.push(async () => {
    finishTask();
    port2.close();
    await workerLink.close();
  });
  return { link: workerLink, referenced, served, finishTask };
}

describe("KeepAlive in WorkerLink", () => {
  it("a pending call holds the worker; once answered, the worker is let go on the next turn", async () => {
    const { link: worker, referenced } = link();
    const models = worker.call("listBuiltInModels");
    expect(worker.inFlight).toBe(1);
    await within(models, 5_000, "listBuiltInModels");
    expect(worker.inFlight).toBe(0);
    await nextTurn();
    expect(referenced).toEqual([false]);
    await within(worker.call("listBuiltInModels"), 5_000, "listBuiltInModels again");
    expect(referenced).toEqual([false, true]);
  });

  it("close() holds the worker until the pool has finished its task (a closing CLI exited early with code 0 or 13)", async () => {
    const { link: worker, referenced, served, finishTask } = link();
    await within(worker.call("listBuiltInModels"), 5_000, "listBuiltInModels");
    await nextTurn();
    expect(referenced).toEqual([false]);
    const closing = worker.close();
    // The worker has answered shutdown and stopped serving; the pool's task has not ended yet.
    await within(served, 5_000, "the worker to stop serving");
    await nextTurn();
    await nextTurn();
    expect(referenced.at(-1)).toBe(true);
    finishTask();
    await within(closing, 5_000, "close()");
  });
});
