/**
 * SPEC B8: the provider gate (src/main/coordination/provider-gate.ts), a pure unit driven by an
 * injected clock and sleep. No waiter passes before the latest reopening time set before it
 * passed, and none is held after the gate has reopened.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ProviderGate } from "../../../src/main/coordination/provider-gate.js";

/** A fake clock whose sleeps fire when the test advances it. */
function fakeTime() {
  const clock = { now: 0, timers: [] as { at: number; fire: () => void }[] };
  const sleep = (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const index = clock.timers.indexOf(timer);
        if (index >= 0) clock.timers.splice(index, 1);
        reject(signal.reason);
      };
      const timer = {
        at: clock.now + ms,
        fire: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      clock.timers.push(timer);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  const flush = async () => {
    for (let i = 0; i < 20; i++) await Promise.resolve();
  };
  /** Advances to `target`, firing due timers in time order, each followed by its continuations. */
  const advanceTo = async (target: number) => {
    for (;;) {
      clock.timers.sort((a, b) => a.at - b.at);
      const next = clock.timers[0];
      if (next === undefined || next.at > target) break;
      clock.timers.shift();
      clock.now = next.at;
      next.fire();
      await flush();
    }
    clock.now = target;
    await flush();
  };
  return { clock, sleep, advanceTo, flush };
}

type Op = { at: number } & (
  | { kind: "close"; key: "a" | "b"; ms: number }
  | { kind: "wait"; key: "a" | "b" }
  | { kind: "abort" }
);

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    at: fc.nat({ max: 50 }),
    kind: fc.constant("close" as const),
    key: fc.constantFrom("a" as const, "b" as const),
    ms: fc.nat({ max: 200 }),
  }),
  fc.record({
    at: fc.nat({ max: 50 }),
    kind: fc.constant("wait" as const),
    key: fc.constantFrom("a" as const, "b" as const),
  }),
  fc.record({ at: fc.nat({ max: 50 }), kind: fc.constant("abort" as const) }),
);

describe("ProviderGate", () => {
  it("B8: no waiter passes before its gate reopens, and each passes as soon as it has", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const time = fakeTime();
        const gate = new ProviderGate({ now: () => time.clock.now, sleep: time.sleep });
        const closes: { key: string; seq: number; until: number }[] = [];
        const waiters: {
          key: string;
          start: number;
          abort: AbortController;
          passed?: { at: number; seq: number };
          aborted?: boolean;
        }[] = [];
        let seq = 0;
        for (const step of ops) {
          await time.advanceTo(time.clock.now + step.at);
          if (step.kind === "close") {
            gate.close(step.key, step.ms);
            if (step.ms > 0) closes.push({ key: step.key, seq: seq++, until: time.clock.now + step.ms });
          } else if (step.kind === "wait") {
            const waiter: (typeof waiters)[number] = {
              key: step.key,
              start: time.clock.now,
              abort: new AbortController(),
            };
            waiters.push(waiter);
            gate.wait(step.key, waiter.abort.signal).then(
              () => {
                waiter.passed = { at: time.clock.now, seq: seq++ };
              },
              () => {
                waiter.aborted = true;
              },
            );
          } else {
            const live = waiters.find((w) => w.passed === undefined && w.aborted !== true);
            live?.abort.abort(new Error("aborted"));
          }
          await time.flush();
        }
        await time.advanceTo(time.clock.now + 10_000);
        for (const waiter of waiters) {
          if (waiter.aborted === true) {
            expect(waiter.passed).toBeUndefined();
            continue;
          }
          const passed = waiter.passed;
          expect(passed).toBeDefined();
          if (passed === undefined) continue;
          const before = closes.filter((c) => c.key === waiter.key && c.seq < passed.seq);
          // Safety: every reopening time set before it passed is behind it.
          for (const close of before) expect(passed.at).toBeGreaterThanOrEqual(close.until);
          // Not late: it passed at its start or at the latest reopening time that held it.
          const held = Math.max(waiter.start, ...before.map((c) => c.until));
          expect(passed.at).toBe(held);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("B8: an aborted wait rejects at once with the signal's reason and leaves no timer", async () => {
    const time = fakeTime();
    const gate = new ProviderGate({ now: () => time.clock.now, sleep: time.sleep });
    gate.close("k", 1000);
    const abort = new AbortController();
    const waits: number[] = [];
    const waiting = gate.wait("k", abort.signal, (ms) => waits.push(ms));
    await time.flush();
    expect(waits).toEqual([1000]);
    abort.abort(new Error("abortRetry"));
    await expect(waiting).rejects.toThrow("abortRetry");
    expect(time.clock.timers).toHaveLength(0);
    expect(gate.remainingMs("other")).toBe(0);
  });
});
