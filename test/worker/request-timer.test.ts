/**
 * X9, times taken where they happen: what a session's request timer makes of the moments of one
 * model request (src/worker/request-capture/request-timer.ts). The clock is vitest's fake
 * `performance`, advanced by hand, so every stamp and gap is known exactly.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RequestTimer } from "../../src/worker/request-capture/request-timer.js";

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["performance"] });
});
afterEach(() => {
  vi.useRealTimers();
});

const origin = () => performance.timeOrigin + performance.now();

describe("a request timer", () => {
  it("stamps the request's start, first byte, first token and end, and the gap before each later delta", () => {
    const timer = new RequestTimer();
    timer.call();
    vi.advanceTimersByTime(1);
    const start = origin();
    timer.fetching();
    vi.advanceTimersByTime(20);
    timer.responded();
    vi.advanceTimersByTime(30);
    timer.chunk();
    for (const gap of [2, 5, 3]) {
      vi.advanceTimersByTime(gap);
      timer.chunk();
    }
    vi.advanceTimersByTime(4);
    const timing = timer.end();
    expect(timing).toEqual({
      requestStartMs: start,
      firstByteMs: start + 20,
      firstTokenMs: start + 50,
      endMs: start + 64,
      chunks: 4,
      chunkGapsMs: [2, 5, 3],
    });
  });

  it("keeps the first HTTP request of a call as its start when the SDK retries, and the last response as its first byte", () => {
    const timer = new RequestTimer();
    timer.call();
    const start = origin();
    timer.fetching();
    vi.advanceTimersByTime(10);
    timer.responded();
    vi.advanceTimersByTime(100);
    timer.fetching();
    vi.advanceTimersByTime(10);
    timer.responded();
    expect(timer.end()).toMatchObject({ requestStartMs: start, firstByteMs: start + 120, chunks: 0, chunkGapsMs: [] });
  });

  it("starts at the stream function's call when the provider makes no HTTP request", () => {
    const timer = new RequestTimer();
    const start = origin();
    timer.call();
    vi.advanceTimersByTime(7);
    timer.chunk();
    const timing = timer.end();
    expect(timing).toMatchObject({ requestStartMs: start, firstTokenMs: start + 7, chunks: 1, chunkGapsMs: [] });
    expect(timing).not.toHaveProperty("firstByteMs");
  });

  it("has nothing to report for a reply made without a model call, nor twice for one call", () => {
    const timer = new RequestTimer();
    timer.chunk();
    timer.fetching();
    expect(timer.end()).toBeUndefined();
    timer.call();
    expect(timer.end()).toBeDefined();
    expect(timer.end()).toBeUndefined();
  });

  it("a new call forgets the previous one's deltas (a compaction's summary request, say)", () => {
    const timer = new RequestTimer();
    timer.call();
    timer.chunk();
    timer.chunk();
    timer.call();
    vi.advanceTimersByTime(3);
    timer.chunk();
    expect(timer.end()).toMatchObject({ chunks: 1, chunkGapsMs: [] });
  });
});
