/**
 * The default worker-thread count (`defaultThreads`, the `threads` option's default): one core
 * left to the main thread, at least one worker, and at most as many as the main thread serves
 * within half its time, as bench section (n) measured (docs/performance-history.md, "(n) worker threads").
 * The core count is passed in, so these hold whatever machine runs them.
 */
import { describe, expect, it } from "vitest";
import { defaultThreads } from "../../../src/main/host/host-options.js";

describe("defaultThreads", () => {
  it.each([
    [1, 1],
    [2, 1],
    [4, 3],
    [16, 4],
    [64, 4],
  ])("gives %i cores %i worker(s)", (cores, threads) => {
    expect(defaultThreads(cores)).toBe(threads);
  });

  it("never gives fewer than one worker, even for a bogus core count", () => {
    expect(defaultThreads(0)).toBe(1);
  });
});
