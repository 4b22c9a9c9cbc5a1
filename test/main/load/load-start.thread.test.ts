/**
 * `runLoad()`'s `beforeStart` (load-options.ts), from the built dist/ (run `npm run build` first)
 * with real worker threads and the built-in mock: the run's load and its clock begin only once
 * it resolves, in the closed and in the open model. A distributed run's
 * generators wait there for their common start instant (load-fleet/load-agent.ts).
 */
import { describe, expect, it } from "vitest";
import { runLoad } from "../../../dist/main/load/index.js";

/** A gate that holds the run for `holdMs` and notes when it was called and when it let go. */
function gate(holdMs: number) {
  const times = { calledAt: Number.NaN, releasedAt: Number.NaN };
  const beforeStart = async () => {
    times.calledAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, holdMs));
    times.releasedAt = Date.now();
  };
  return { times, beforeStart };
}

describe("runLoad beforeStart", () => {
  it("closed model: the run's clock and first prompt come after it", async () => {
    const { times, beforeStart } = gate(400);
    const calledBefore = Date.now();
    const { report } = await runLoad({ sessions: 3, prompts: 2, threads: 1, outDir: false, beforeStart });
    expect(times.calledAt).toBeGreaterThanOrEqual(calledBefore);
    expect(Date.parse(report.startedAt)).toBeGreaterThanOrEqual(times.releasedAt - 1);
    expect(report.totals.prompts.sent).toBe(6);
  }, 60_000);

  it("open model: the arrivals' schedule starts after it", async () => {
    const { times, beforeStart } = gate(400);
    const { report } = await runLoad({
      sessions: 5,
      durationMs: 1000,
      arrival: { rate: 5 },
      threads: 1,
      outDir: false,
      beforeStart,
    });
    expect(Date.parse(report.startedAt)).toBeGreaterThanOrEqual(times.releasedAt - 1);
    expect(report.totals.arrivals?.offered).toBe(5);
  }, 60_000);
});
