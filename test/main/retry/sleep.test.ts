/**
 * The retry controller's main-thread sleep (X2) for every delay the settings allow.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { abortableSleep } from "../../../src/main/retry/sleep.js";
import { MAX_TIMER_MS } from "../../../src/shared/timer-ms.js";

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** Whether `promise` has settled once pending callbacks have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

describe("abortableSleep", () => {
  it("regression: a delay above 2^31-1 ms no longer overflows Node's timer to 1 ms; it is slept in parts", async () => {
    const warnings = vi.spyOn(process, "emitWarning");
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const sleeping = abortableSleep(MAX_TIMER_MS + 5000, new AbortController().signal);
    expect(warnings.mock.calls.filter((call) => String(call[1]).includes("TimeoutOverflow"))).toEqual([]);
    expect(await settled(sleeping)).toBe(false);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS);
    expect(await settled(sleeping)).toBe(false);
    await vi.advanceTimersByTimeAsync(5000);
    expect(await settled(sleeping)).toBe(true);
  });

  it("an abort ends a long sleep at once, in whichever part it is", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const abort = new AbortController();
    const sleeping = abortableSleep(3 * MAX_TIMER_MS, abort.signal);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS + 10);
    abort.abort(new Error("cancelled"));
    await expect(sleeping).rejects.toThrow("cancelled");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a signal aborted before the call rejects without starting a timer", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const abort = new AbortController();
    abort.abort(new Error("already"));
    await expect(abortableSleep(10, abort.signal)).rejects.toThrow("already");
    expect(vi.getTimerCount()).toBe(0);
  });
});
