/**
 * InFlightWork (src/main/workers/in-flight-work.ts) for aborts: the run an early abort names on the
 * control channel is the session's run between its `startRun` and its `run_end` (openRun), and
 * abort() resolves once that run is over for the link (whenOver).
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
    void work.track("startRun", ["s-1", 7], call);
    expect(work.openRun("s-1")).toBe(7);
    // A session whose id starts like another's is not taken for it.
    expect(work.openRun("s")).toBeUndefined();
    answer();
    await call;
    expect(work.openRun("s-1")).toBe(7);
    work.runEnded("s-1", 7);
    expect(work.openRun("s-1")).toBeUndefined();
  });

  it("names the newest of a session's open runs, and counts each run once", () => {
    const work = new InFlightWork(() => {});
    const never = () => new Promise<void>(() => {});
    void work.track("startRun", ["s", 3], never());
    void work.track("startRun", ["s", 4], never());
    void work.track("startRun", ["s", 3], never());
    expect(work.openRun("s")).toBe(4);
    // Three pending calls and two open runs.
    expect(work.count).toBe(5);
    work.runEnded("s", 4);
    expect(work.openRun("s")).toBe(3);
    work.sessionDetached("s");
    expect(work.openRun("s")).toBeUndefined();
    expect(work.count).toBe(3);
  });

  it("whenOver resolves at the run's run_end, at once for a run not open, and on a detach", async () => {
    const work = new InFlightWork(() => {});
    void work.track("startRun", ["s", 1], new Promise<void>(() => {}));
    void work.track("startRun", ["t", 1], new Promise<void>(() => {}));
    let over = false;
    const ended = work.whenOver("s", 1).then(() => {
      over = true;
    });
    await Promise.resolve();
    expect(over).toBe(false);
    work.runEnded("s", 1);
    await ended;
    expect(over).toBe(true);
    await work.whenOver("s", 2);
    const detached = work.whenOver("t", 1);
    work.sessionDetached("t");
    await detached;
  });
});
