/**
 * B9: the `lifeline.worker.slot` attribute stays small and stable whatever the workers' thread ids.
 */
import { describe, expect, it } from "vitest";
import { WorkerSlots } from "../../../src/main/telemetry/worker-slots.js";

describe("worker slots", () => {
  it("B9: live workers keep their slots, and a worker that replaces a dead one takes the lowest free slot", () => {
    const slots = new WorkerSlots();
    expect(slots.assign([7, 9, 12])).toEqual([0, 1, 2]);
    // 7 died; 9 and 12 keep theirs whatever their place in the list; 31 takes slot 0.
    expect(slots.assign([9, 12, 31])).toEqual([1, 2, 0]);
    expect(slots.assign([31, 12, 9])).toEqual([0, 2, 1]);
    // Two new workers beside one that stays: slots 0 and 2 are free, and thread ids never leak in.
    expect(slots.assign([9, 40, 41])).toEqual([1, 0, 2]);
  });
});
