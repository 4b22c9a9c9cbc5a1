/**
 * InFlightWork.openRun (src/main/workers/in-flight-work.ts): the run an early abort names on the
 * control channel is the session's run between its `startRun` and its `run_end`.
 */
import { describe, expect, it } from "vitest";
import { InFlightWork } from "../../../src/main/workers/in-flight-work.js";

describe("InFlightWork.openRun", () => {
  it("names the session's run between its start and its run_end, and none for other sessions", async () => {
    const work = new InFlightWork(() => {});
    let answer: () => void = () => {};
    const call = new Promise<void>((resolve) => {
      answer = resolve;
    });
    void work.track("startRun", ["s-1", 7], () => call);
    expect(work.openRun("s-1")).toBe(7);
    // A session whose id starts like another's is not taken for it.
    expect(work.openRun("s")).toBeUndefined();
    answer();
    await call;
    expect(work.openRun("s-1")).toBe(7);
    work.runEnded("s-1", 7);
    expect(work.openRun("s-1")).toBeUndefined();
  });
});
