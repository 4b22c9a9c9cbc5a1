/**
 * The load tool's timeline (timeline.ts): each point's event-loop delay holds every stall of its
 * interval, including one that begins in the same task as the previous point's sample, before the
 * sampler ticks again (Node's own sampler forgets its last tick when reset, and lost those).
 */
import { describe, expect, it } from "vitest";
import { emptyLoadCounters } from "../../../../src/main/load/metrics/load-metrics.js";
import { Timeline } from "../../../../src/main/load/metrics/timeline.js";

const BLOCK_MS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the timeline's loop delay", () => {
  it("a stall that begins right after a point is in the next point", async () => {
    const timeline = new Timeline(emptyLoadCounters());
    try {
      await sleep(100);
      timeline.sample(100);
      const until = Date.now() + BLOCK_MS;
      while (Date.now() < until) {
        // The stall, in the sample's own task.
      }
      await sleep(100);
      const point = timeline.sample(500);
      expect(point.loopDelayMaxMs).toBeGreaterThanOrEqual(BLOCK_MS * 0.9 - 10);
      // The whole run's figures hold it too.
      expect(timeline.loopDelay().max).toBeGreaterThanOrEqual(BLOCK_MS * 0.9 - 10);
    } finally {
      timeline.stop();
    }
  });
});
