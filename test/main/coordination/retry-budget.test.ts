/**
 * SPEC B8: the host-wide retry budget (src/main/coordination/retry-budget.ts), a pure unit driven
 * by an injected clock. The property pins the rule exactly: a retry is granted if and only if the
 * retries of the window, plus it, stay within ratio × first attempts of the window + the floor.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RetryBudget } from "../../../src/main/coordination/retry-budget.js";

type Op = { advance: number; kind: "deposit" | "withdraw" };

const config = fc.record({
  ratio: fc.constantFrom(0, 0.1, 0.2, 0.5, 1),
  minPerSecond: fc.constantFrom(0, 0.1, 1, 10),
  windowMs: fc.constantFrom(100, 1000, 10_000),
});
const ops = fc.array(
  fc.record({ advance: fc.nat({ max: 3000 }), kind: fc.constantFrom<Op["kind"]>("deposit", "withdraw", "withdraw") }),
  { maxLength: 300 },
);

describe("RetryBudget", () => {
  it("B8: a retry is granted exactly when the window's retries stay within ratio × first attempts + floor", () => {
    fc.assert(
      fc.property(config, ops, (settings, sequence) => {
        let now = 0;
        const budget = new RetryBudget(settings, () => now);
        const deposits: number[] = [];
        const granted: number[] = [];
        const floor = (settings.minPerSecond * settings.windowMs) / 1000;
        for (const op of sequence) {
          now += op.advance;
          const inWindow = (times: number[]) => times.filter((t) => t > now - settings.windowMs).length;
          if (op.kind === "deposit") {
            budget.deposit();
            deposits.push(now);
            continue;
          }
          const allowance = settings.ratio * inWindow(deposits) + floor;
          const before = inWindow(granted);
          const ok = budget.tryWithdraw();
          if (ok) {
            granted.push(now);
            // Safety: a grant never makes the window ending now hold more retries than the rule allows.
            expect(inWindow(granted)).toBeLessThanOrEqual(allowance + 1e-9);
          }
          // Exactness: refused only when one more would break the rule.
          expect(ok).toBe(before + 1 <= allowance + 1e-9);
          expect(budget.state().withdrawals).toBe(inWindow(granted));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("B8: Finagle's defaults allow 10 retries per second on a quiet host, and 20% of first attempts on a busy one", () => {
    let now = 0;
    const budget = new RetryBudget({ ratio: 0.2, minPerSecond: 10, windowMs: 10_000 }, () => now);
    let granted = 0;
    while (budget.tryWithdraw()) granted++;
    expect(granted).toBe(100);
    for (let i = 0; i < 1000; i++) budget.deposit();
    expect(budget.state()).toEqual({ deposits: 1000, withdrawals: 100, available: 200 });
    now += 10_000;
    // The window has moved past every retry and every first attempt.
    expect(budget.state()).toEqual({ deposits: 0, withdrawals: 0, available: 100 });
  });
});

describe("RetryBudget.recent (what a host replays into its fleet after a fallback)", () => {
  it("gives the ages of the first attempts and retries of the last ms that are still in the window", () => {
    let now = 0;
    const budget = new RetryBudget({ ratio: 1, minPerSecond: 0, windowMs: 1000 }, () => now);
    budget.deposit(); // at 0: leaves the window at 1000
    now = 700;
    budget.deposit();
    expect(budget.tryWithdraw()).toBe(true);
    now = 900;
    budget.deposit();
    now = 1100;
    expect(budget.recent(300)).toEqual({ deposits: [200], withdrawals: [] });
    expect(budget.recent(10_000)).toEqual({ deposits: [400, 200], withdrawals: [400] });
  });
});
