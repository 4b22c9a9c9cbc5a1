/**
 * B9: a thread's loop-delay readings keep every synchronous block (shared/loop-delay.ts), including
 * one that begins right after a reading, before the sampler's next tick: a worker's prompt that
 * arrives just after its report and runs its whole turn, a slow tool included, in one task.
 */
import { describe, expect, it } from "vitest";
import { LoopDelaySampler } from "../../src/shared/loop-delay.js";

const BLOCK_MS = 300;

function block(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // The synchronous block.
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a loop-delay sampler", () => {
  it("B9: a block that begins in the same task as a reading is in the next reading", async () => {
    const sampler = new LoopDelaySampler();
    try {
      await sleep(100);
      sampler.take();
      block(BLOCK_MS);
      await sleep(100);
      expect(sampler.take()?.max).toBeGreaterThanOrEqual((BLOCK_MS * 0.9) / 1000);
    } finally {
      sampler.stop();
    }
  });

  it("B9: an idle loop reads about one period, and a reading with no tick since the last is undefined", async () => {
    const sampler = new LoopDelaySampler();
    try {
      await sleep(200);
      const idle = sampler.take();
      expect(idle?.p50).toBeGreaterThanOrEqual(0.015);
      expect(sampler.take()).toBeUndefined();
    } finally {
      sampler.stop();
    }
  });
});
