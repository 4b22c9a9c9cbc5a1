/**
 * HandlerQueue in-process: one extension's serial queue for one session (order, failures,
 * timeouts, and the bound on a queue whose handlers fall behind). The real-stack behaviour is in
 * extensions.test.ts.
 */
import { describe, expect, it } from "vitest";
import { type HandlerFailure, HandlerQueue, MAX_QUEUED_EVENTS } from "../../../src/main/extensions/handler-queue.js";
import { within } from "../../fixtures/bounded.js";

type E = { type: string; n: number };

function queue(handlers: Record<string, ((event: E) => unknown)[]>, timeoutMs = 1000) {
  const failures: HandlerFailure[] = [];
  const q = new HandlerQueue<E>({
    handlersFor: (type) => handlers[type] ?? [],
    timeoutMs: () => timeoutMs,
    report: (failure) => failures.push(failure),
  });
  return { q, failures };
}

describe("HandlerQueue", () => {
  it("runs handlers in event order, one event at a time, never inside push()", async () => {
    const seen: string[] = [];
    const { q } = queue({
      a: [
        async (event) => {
          await Promise.resolve();
          seen.push(`a1:${event.n}`);
        },
        (event) => {
          seen.push(`a2:${event.n}`);
        },
      ],
      b: [(event) => seen.push(`b:${event.n}`)],
    });
    q.push({ type: "a", n: 1 });
    q.push({ type: "b", n: 2 });
    q.push({ type: "a", n: 3 });
    expect(seen).toEqual([]);
    await within(q.idle(), 1000, "idle");
    expect(seen).toEqual(["a1:1", "a2:1", "b:2", "a1:3", "a2:3"]);
  });

  it("reports a throw, a rejection and a timeout, and goes on with the next event", async () => {
    const seen: number[] = [];
    const { q, failures } = queue(
      {
        throws: [
          () => {
            throw new Error("sync boom");
          },
        ],
        rejects: [() => Promise.reject(new Error("async boom"))],
        hangs: [() => new Promise(() => {})],
        ok: [(event) => seen.push(event.n)],
      },
      20,
    );
    for (const [n, type] of ["throws", "rejects", "hangs", "ok"].entries()) q.push({ type, n });
    await within(q.idle(), 2000, "idle");
    expect(seen).toEqual([3]);
    expect(failures).toEqual([
      { eventType: "throws", error: "sync boom" },
      { eventType: "rejects", error: "async boom" },
      { eventType: "hangs", error: expect.stringContaining("did not settle within 20 ms") },
    ]);
  });

  it("a handler that settles after its timeout is not reported twice", async () => {
    let reject: (error: Error) => void = () => {};
    const { q, failures } = queue({ late: [() => new Promise((_, r) => (reject = r))] }, 10);
    q.push({ type: "late", n: 0 });
    await within(q.idle(), 2000, "idle");
    reject(new Error("too late"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(failures).toHaveLength(1);
  });

  it("a queue whose handlers fall behind by MAX_QUEUED_EVENTS drops new events and says so once", async () => {
    let handled = 0;
    const { q, failures } = queue({ e: [() => handled++] });
    for (let n = 0; n < MAX_QUEUED_EVENTS + 5; n++) q.push({ type: "e", n });
    await within(q.idle(), 5000, "idle");
    expect(handled).toBe(MAX_QUEUED_EVENTS);
    expect(failures).toEqual([{ eventType: "e", error: expect.stringContaining("fell 10000 events behind") }]);
    // Caught up: the next event is delivered again.
    q.push({ type: "e", n: -1 });
    await within(q.idle(), 1000, "idle");
    expect(handled).toBe(MAX_QUEUED_EVENTS + 1);
  });

  it("events nobody handles are not queued", () => {
    const { q } = queue({});
    q.push({ type: "x", n: 0 });
    return expect(q.idle()).resolves.toBeUndefined();
  });
});
