/**
 * The worker's sign of life from inside a long task (serve-worker.ts `stillHere`, SPEC X8): a
 * worker that makes progress for longer than `signOfLifeMs` without posting anything posts a
 * heartbeat from there, since its timer heartbeat cannot run until the task ends. Main judges an
 * unanswered abort by what the worker sent in its window (worker-link.ts `abort`), and a burst of
 * 10,000 early aborts held a worker silent for over 2 s, which had it terminated as stuck and
 * every session on it restored (docs/performance-history.md, "(m)", "The cut").
 *
 * serveWorker in-process on MessageChannels with no timer heartbeat (`heartbeatMs` 0), so every
 * heartbeat counted here comes from inside a long task. The bursts: many control messages taken in
 * one task, and one `runOps` call of many ops. With the sign of life on its threshold out of reach
 * the same bursts post none (the other half of each case).
 */

import { MessageChannel, type MessagePort } from "node:worker_threads";
import { wrap } from "comlink";
import { afterEach, describe, expect, it } from "vitest";
import type { RunOp, WorkerApi } from "../../src/shared/wire/protocol.js";
import { serveWorker } from "../../src/worker/serve-worker.js";
import { within } from "../fixtures/bounded.js";

const ports: MessagePort[] = [];
afterEach(() => {
  for (const port of ports.splice(0)) port.close();
});

/** A worker served in-process; counts the heartbeats it posts. */
function served(signOfLifeMs: number) {
  const main = new MessageChannel();
  const control = new MessageChannel();
  ports.push(main.port1, main.port2, control.port1, control.port2);
  const flag = new SharedArrayBuffer(4);
  const posted = new Int32Array(flag);
  let heartbeats = 0;
  main.port1.on("message", (data: { type?: unknown }) => {
    if (data?.type === "heartbeat") heartbeats++;
  });
  const done = serveWorker(main.port2, {
    heartbeatMs: 0,
    signOfLifeMs,
    control: { port: control.port2, flag },
  });
  return {
    api: wrap<WorkerApi>(main.port1 as unknown as Parameters<typeof wrap>[0]),
    /** Main's side of the control channel: the message, then the counter. */
    postControl(message: unknown) {
      control.port1.postMessage(message);
      Atomics.add(posted, 0, 1);
    },
    heartbeats: () => heartbeats,
    done,
  };
}

/** Lets the messages of both sides be delivered. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** Early aborts for sessions the worker does not serve: each is handled, and does nothing. */
const CONTROL_BURST = 50_000;
/** R4 removals for sessions the worker does not serve: each is answered ERR_SESSION_DISPOSED. */
const OPS_BURST = 5_000;

/** A worker served and past its start (its `hello` delivered), with its heartbeats so far. */
async function settled(signOfLifeMs: number) {
  const worker = served(signOfLifeMs);
  await settle();
  return { worker, before: worker.heartbeats() };
}

/** The sign of life's threshold: within the bursts' length, and out of their reach. */
const THRESHOLDS = [
  { signOfLifeMs: 1, expected: "some" },
  { signOfLifeMs: 60_000, expected: "none" },
];

/** Some heartbeats since `before`, or none, as `expected` says. */
function expectHeartbeats(worker: ReturnType<typeof served>, before: number, expected: string): void {
  const during = worker.heartbeats() - before;
  if (expected === "some") expect(during).toBeGreaterThan(0);
  else expect(during).toBe(0);
}

describe("serveWorker's sign of life", () => {
  it.each(THRESHOLDS)(
    "a burst of control messages handled in one task posts heartbeats from inside it ($expected with signOfLifeMs $signOfLifeMs)",
    async ({ signOfLifeMs, expected }) => {
      const { worker, before } = await settled(signOfLifeMs);
      const start = performance.now();
      for (let i = 0; i < CONTROL_BURST; i++) worker.postControl({ type: "abort", sessionId: `gone-${i}`, runId: 1 });
      // Every queued message of a port is handed over in one task: the worker's handling is one
      // long stretch, far longer than 1 ms.
      await settle();
      expect(performance.now() - start).toBeGreaterThan(5);
      expectHeartbeats(worker, before, expected);
    },
  );

  it.each(THRESHOLDS)(
    "one runOps call of many ops posts heartbeats while it is carried out ($expected with signOfLifeMs $signOfLifeMs)",
    async ({ signOfLifeMs, expected }) => {
      const { worker, before } = await settled(signOfLifeMs);
      const ops: RunOp[] = Array.from({ length: OPS_BURST }, (_, i) => ({
        kind: "pop_failed",
        sessionId: `gone-${i}`,
      }));
      const answer = await within(Promise.resolve(worker.api.runOps(ops)), 10_000, "the runOps answer");
      await settle();
      expect(answer.ok).toBe(true);
      if (answer.ok) {
        expect(answer.value).toHaveLength(OPS_BURST);
        expect(answer.value.every((result) => !result.ok && result.error.code === "ERR_SESSION_DISPOSED")).toBe(true);
      }
      expectHeartbeats(worker, before, expected);
    },
  );
});
