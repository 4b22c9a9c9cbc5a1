/**
 * `lifeline load --concurrency` (src/main/load/run/permits.ts): at most `limit` prompts in flight,
 * waiters served in order, and every waiter released when the run ends.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Permits } from "../../../../src/main/load/run/permits.js";

describe("concurrency permits", () => {
  it("never more than the limit are held, and every acquire is granted once permits come back", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 30 }), async (limit, users) => {
        const permits = new Permits(limit);
        let held = 0;
        let most = 0;
        await Promise.all(
          Array.from({ length: users }, async () => {
            expect(await permits.acquire()).toBe(true);
            held++;
            most = Math.max(most, held);
            await Promise.resolve();
            held--;
            permits.release();
          }),
        );
        expect(most).toBeLessThanOrEqual(limit);
        expect(held).toBe(0);
      }),
    );
  });

  it("a released permit goes to the longest waiter", async () => {
    const permits = new Permits(1);
    expect(await permits.acquire()).toBe(true);
    const order: string[] = [];
    const first = permits.acquire().then(() => order.push("first"));
    const second = permits.acquire().then(() => order.push("second"));
    permits.release();
    await first;
    permits.release();
    await second;
    expect(order).toEqual(["first", "second"]);
  });

  it("cancelAll lets every waiter go without a permit, and later acquires get none", async () => {
    const permits = new Permits(1);
    await permits.acquire();
    const waiting = permits.acquire();
    permits.cancelAll();
    expect(await waiting).toBe(false);
    expect(await permits.acquire()).toBe(false);
  });
});
