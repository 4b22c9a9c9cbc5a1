/**
 * `runLoad()`'s `concurrency` (`--concurrency`; src/main/load/run/run-load.ts takes a permit of
 * src/main/coordination/request-semaphore.ts per prompt), from the built dist/ (run `npm run build` first)
 * with real worker threads and the built-in mock, whose own count of requests open at once
 * (`report.mock.maxConcurrentRequests`) is the measure: one model request per prompt here.
 */
import { describe, expect, it } from "vitest";
import { runLoad } from "../../../../dist/main/load/index.js";

describe("runLoad concurrency", () => {
  it("never has more than `concurrency` prompts in flight, and every prompt is sent", async () => {
    const { report } = await runLoad({
      sessions: 6,
      prompts: 3,
      concurrency: 2,
      threads: 1,
      lifelineDir: false,
      outDir: false,
      mock: { tokens: 8, tokenDelayMs: 5 },
    });
    expect(report.totals.prompts.sent).toBe(18);
    expect(report.totals.prompts.succeeded).toBe(18);
    expect(report.mock?.maxConcurrentRequests).toBe(2);
  }, 60_000);

  it("the run's end lets go of the sessions still waiting for a permit: it ends on time", async () => {
    // One permit for six sessions, each prompt about 1 s long: at the 600 ms end five sessions wait.
    const { report } = await runLoad({
      sessions: 6,
      durationMs: 600,
      concurrency: 1,
      threads: 1,
      lifelineDir: false,
      outDir: false,
      mock: { tokens: 100, tokenDelayMs: 10 },
    });
    expect(report.status).toBe("completed");
    expect(report.totals.prompts.sent).toBe(1);
    expect(report.mock?.maxConcurrentRequests).toBe(1);
    // The prompt in flight is aborted at the end; nobody waits for a permit past it.
    expect(report.durationMs).toBeLessThan(3000);
  }, 60_000);
});
