/**
 * The run-op queue (workers/run-op-queue.ts) on its own: the answers of a burst arrive in one
 * message and settle a slice of the host's pacer at a time, in order, so a burst's continuations
 * (a retry's sleep, a prompt's wait) do not all run in the task that received the answer (P1).
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Remote } from "comlink";
import { describe, expect, it } from "vitest";
import { BoundedCalls } from "../../../src/main/workers/bounded-calls.js";
import { RunOpQueue } from "../../../src/main/workers/run-op-queue.js";
import { TurnPacer } from "../../../src/main/workers/turn-pacer.js";
import { LifelineError } from "../../../src/shared/errors.js";
import type { Result, RunOp, WorkerApi } from "../../../src/shared/wire/protocol.js";

/** A queue whose one message is answered when the test says, every op with its index. */
function answeredLater(pacer?: TurnPacer) {
  let answer: (() => void) | undefined;
  const sent: RunOp[][] = [];
  // The link's calls over a remote whose one method answers when the test says.
  const remote = {
    runOps: (ops: RunOp[]) => {
      sent.push(ops);
      return new Promise<Result<boolean | null>[]>((resolve) => {
        answer = () => resolve(ops.map((_, i) => ({ ok: true, value: i % 2 === 0 })));
      });
    },
  };
  const calls = new BoundedCalls(remote as unknown as Remote<WorkerApi>);
  const queue = new RunOpQueue(calls, Number.POSITIVE_INFINITY, () => undefined, pacer);
  return { queue, calls, sent, answer: () => answer?.() };
}

describe("RunOpQueue", () => {
  it("P1: a burst's answers settle a pacer's slice at a time, in the order of the ops", async () => {
    const { queue, sent, answer } = answeredLater(new TurnPacer(1_000));
    const settled: number[] = [];
    const ops = Array.from({ length: 200 }, (_, i) =>
      queue.add({ kind: "pop_failed", sessionId: `s-${i}` }).then((removed) => {
        settled.push(i);
        expect(removed).toBe(i % 2 === 0);
      }),
    );
    queue.flush();
    expect(sent.map((message) => message.length)).toEqual([200]);
    answer();
    // The answer's task: the first slice's quota (32) settles, with their continuations.
    await new Promise<void>((resolve) => queueMicrotask(resolve));
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(settled.length).toBeGreaterThan(0);
    expect(settled.length).toBeLessThanOrEqual(32);
    await Promise.all(ops);
    expect(settled).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it("without a pacer every answer settles at once", async () => {
    const { queue, answer } = answeredLater();
    const settled: number[] = [];
    const ops = Array.from({ length: 100 }, (_, i) =>
      queue.add({ kind: "pop_failed", sessionId: `s-${i}` }).then(() => settled.push(i)),
    );
    queue.flush();
    answer();
    await nextTurn();
    expect(settled).toHaveLength(100);
    await Promise.all(ops);
  });

  it("ops sent after the link's calls failed reject with that failure, unsent", async () => {
    const { queue, calls, sent } = answeredLater();
    calls.failAll(new LifelineError("ERR_WORKER_EXITED", "gone"));
    const op = queue.add({ kind: "pop_failed", sessionId: "s" });
    queue.flush();
    await expect(op).rejects.toThrow("gone");
    expect(sent).toEqual([]);
  });

  it("a link's death rejects the queued ops, unsent", async () => {
    const { queue, sent } = answeredLater(new TurnPacer(1_000));
    const op = queue.add({ kind: "pop_failed", sessionId: "s" });
    queue.failAll(new Error("gone"));
    await expect(op).rejects.toThrow("gone");
    await nextTurn();
    expect(sent).toEqual([]);
  });
});
