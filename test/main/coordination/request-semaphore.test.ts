/**
 * The counting semaphore (src/main/coordination/request-semaphore.ts) of SPEC B8's
 * `retry.maxConcurrentRequests` and of `lifeline load --concurrency`. Never more than N permits
 * out; every permit released exactly once; waiters served first come, first served; a dead
 * owner's permits return; once closed (a load run ending) every waiter, now and later, is refused.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RequestSemaphore } from "../../../src/main/coordination/request-semaphore.js";

type Op =
  | { kind: "acquire"; owner: number; abortable: boolean }
  | { kind: "release"; pick: number }
  | { kind: "abort"; pick: number }
  | { kind: "releaseOwner"; owner: number }
  | { kind: "close" };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant("acquire" as const), owner: fc.nat({ max: 2 }), abortable: fc.boolean() }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("release" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("abort" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("releaseOwner" as const), owner: fc.nat({ max: 2 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "close" as const }) },
);

const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe("RequestSemaphore", () => {
  it("never more than N permits out, each released once, waiters served in arrival order, none after close", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.array(op, { maxLength: 60 }), async (permits, ops) => {
        const semaphore = new RequestSemaphore(permits);
        const owners = [{}, {}, {}];
        const requests: {
          order: number;
          owner: number;
          abort?: AbortController;
          granted?: { id: number; at: number };
          settled?: boolean;
        }[] = [];
        const held = new Map<number, number>(); // permit id → owner index
        const released = new Set<number>();
        let grants = 0;
        let closedAt: number | undefined; // requests.length when closed
        for (const step of ops) {
          if (step.kind === "acquire") {
            const request: (typeof requests)[number] = { order: requests.length, owner: step.owner };
            if (step.abortable) request.abort = new AbortController();
            requests.push(request);
            semaphore.acquire(owners[step.owner] as object, request.abort?.signal).then(
              (id) => {
                request.granted = { id, at: grants++ };
                held.set(id, request.owner);
              },
              () => {
                request.settled = true;
              },
            );
          } else if (step.kind === "release") {
            const ids = [...held.keys(), ...released];
            const id = ids[step.pick % Math.max(1, ids.length)];
            if (id !== undefined) {
              const first = held.has(id);
              expect(semaphore.release(id)).toBe(first);
              held.delete(id);
              released.add(id);
            }
          } else if (step.kind === "abort") {
            const waiting = requests.filter(
              (r) => r.abort !== undefined && r.granted === undefined && r.settled !== true,
            );
            waiting[step.pick % Math.max(1, waiting.length)]?.abort?.abort(new Error("abort"));
          } else if (step.kind === "close") {
            semaphore.close(new Error("closed"));
            closedAt ??= requests.length;
          } else {
            const owner = owners[step.owner] as object;
            const mine = [...held].filter(([, index]) => index === step.owner).map(([id]) => id);
            expect(semaphore.releaseOwner(owner)).toBe(mine.length);
            for (const id of mine) {
              held.delete(id);
              released.add(id);
            }
            for (const request of requests)
              if (request.owner === step.owner && request.granted === undefined) request.settled = true;
          }
          await flush();
          expect(semaphore.inUse).toBe(held.size);
          expect(semaphore.inUse).toBeLessThanOrEqual(permits);
          // Work-conserving: nobody waits while a permit is free; nobody waits once closed.
          if (semaphore.inUse < permits || closedAt !== undefined) expect(semaphore.waiting).toBe(0);
          // Closed: every request not granted was refused, and none made since was granted.
          if (closedAt !== undefined) {
            expect(requests.every((r) => r.granted !== undefined || r.settled === true)).toBe(true);
            expect(requests.filter((r) => r.order >= (closedAt ?? 0) && r.granted !== undefined)).toEqual([]);
          }
        }
        // FIFO: among granted requests, arrival order is grant order.
        const granted = requests.filter((r) => r.granted !== undefined);
        const byGrant = [...granted].sort((a, b) => (a.granted?.at ?? 0) - (b.granted?.at ?? 0));
        expect(byGrant.map((r) => r.order)).toEqual(granted.map((r) => r.order));
      }),
      { numRuns: 300 },
    );
  });

  it("B8: a dead owner's waiters are rejected, not left pending", async () => {
    const semaphore = new RequestSemaphore(1);
    const worker = {};
    await semaphore.acquire(worker);
    const waiting = semaphore.acquire(worker);
    expect(semaphore.releaseOwner(worker)).toBe(1);
    await expect(waiting).rejects.toThrow(/gone/);
    expect(semaphore.inUse).toBe(0);
  });

  it("every acquire is granted once permits come back, never more than the limit at once", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 30 }), async (limit, users) => {
        const semaphore = new RequestSemaphore(limit);
        let held = 0;
        let most = 0;
        await Promise.all(
          Array.from({ length: users }, async () => {
            const id = await semaphore.acquire(semaphore);
            held++;
            most = Math.max(most, held);
            await Promise.resolve();
            held--;
            expect(semaphore.release(id)).toBe(true);
          }),
        );
        expect(most).toBeLessThanOrEqual(limit);
        expect(held).toBe(0);
        expect(semaphore.inUse).toBe(0);
      }),
    );
  });

  it("a released permit goes to the longest waiter", async () => {
    const semaphore = new RequestSemaphore(1);
    const owner = {};
    const held = await semaphore.acquire(owner);
    const order: string[] = [];
    const first = semaphore.acquire(owner).then((id) => {
      order.push("first");
      return id;
    });
    const second = semaphore.acquire(owner).then((id) => {
      order.push("second");
      return id;
    });
    semaphore.release(held);
    semaphore.release(await first);
    semaphore.release(await second);
    expect(order).toEqual(["first", "second"]);
  });

  it("close refuses every waiter and every later acquire with its reason; held permits stay until released", async () => {
    const semaphore = new RequestSemaphore(1);
    const run = {};
    const held = await semaphore.acquire(run);
    const waiting = semaphore.acquire(run);
    const ended = new Error("The load run ended.");
    semaphore.close(ended);
    await expect(waiting).rejects.toBe(ended);
    await expect(semaphore.acquire(run)).rejects.toBe(ended);
    expect(semaphore.waiting).toBe(0);
    expect(semaphore.inUse).toBe(1);
    expect(semaphore.release(held)).toBe(true);
    expect(semaphore.inUse).toBe(0);
    await expect(semaphore.acquire({})).rejects.toBe(ended);
  });
});
