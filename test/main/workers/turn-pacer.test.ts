/**
 * The host's pacer of bursts (workers/turn-pacer.ts) on its own: turns run at once while the slice
 * has room, the rest later in the order given, one slice per event-loop iteration; a queued turn
 * can be cancelled; a `sleep(ms, signal)` ends on a turn and rejects when its signal aborts; turns given as objects
 * (`enqueue`) share the queue and its order with closures, and one that reads `cancelled` is skipped.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { TurnPacer } from "../../../src/main/workers/turn-pacer.js";

/** Resolves once the pacer has nothing queued, counting the event-loop iterations it took. */
async function drained(pacer: TurnPacer): Promise<number> {
  let turns = 0;
  while (pacer.waiting > 0) {
    await nextTurn();
    turns++;
  }
  return turns;
}

describe("TurnPacer", () => {
  it("runs a burst's first turns at once and the rest on later iterations, in order", async () => {
    const pacer = new TurnPacer(1_000);
    const ran: number[] = [];
    for (let i = 0; i < 200; i++) pacer.run(() => ran.push(i));
    // The first slice's quota (32 turns) ran inside the loop; the rest waits.
    expect(ran).toHaveLength(32);
    expect(pacer.waiting).toBe(168);
    const iterations = await drained(pacer);
    expect(iterations).toBeGreaterThan(1);
    expect(ran).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it("keeps a slice within its time budget", async () => {
    const pacer = new TurnPacer(2);
    let ran = 0;
    const busy = () => {
      const until = performance.now() + 1;
      while (performance.now() < until) {
        // a turn that costs 1 ms of main-thread time
      }
      ran++;
    };
    for (let i = 0; i < 10; i++) pacer.run(busy);
    // Two turns of 1 ms fill a 2 ms budget; the third finds no room.
    expect(ran).toBeLessThanOrEqual(3);
    await drained(pacer);
    expect(ran).toBe(10);
  });

  it("a cancelled turn never runs; a lone turn on a quiet pacer runs at once", async () => {
    const pacer = new TurnPacer(1_000);
    const ran: number[] = [];
    const queued = [];
    for (let i = 0; i < 40; i++) queued.push(pacer.run(() => ran.push(i)));
    expect(queued[35]?.cancel()).toBe(true);
    expect(queued[35]?.cancel()).toBe(false);
    await drained(pacer);
    expect(ran).toHaveLength(39);
    expect(ran).not.toContain(35);
    // Two iterations later the slice is over: the next turn runs inside the caller's task.
    await nextTurn();
    await nextTurn();
    let now = false;
    expect(pacer.run(() => (now = true))).toBeUndefined();
    expect(now).toBe(true);
  });

  it("sleep(ms, signal) ends on a turn after its timer, in order behind queued turns; rejects when aborted", async () => {
    const pacer = new TurnPacer(1_000);
    const ran: string[] = [];
    const abort = new AbortController();
    const aborted = pacer.sleep(0, abort.signal);
    abort.abort(new Error("stop"));
    await expect(aborted).rejects.toThrow("stop");
    const slept = pacer.sleep(5, new AbortController().signal).then(() => ran.push("slept"));
    // A burst fills the slice and queues; the sleep's turn, once its timer fires, comes after it.
    for (let i = 0; i < 100; i++) pacer.run(() => ran.push(`t${i}`));
    await slept;
    expect(ran.at(-1)).toBe("slept");
    expect(ran).toHaveLength(101);
    // Aborted once its timer fired but while its turn waits: it rejects, and the turn is skipped.
    const late = new AbortController();
    for (let i = 0; i < 5_000; i++) pacer.run(() => {});
    const waiting = pacer.sleep(0, late.signal);
    await new Promise((resolve) => setTimeout(resolve, 0));
    late.abort(new Error("late"));
    await expect(waiting).rejects.toThrow("late");
  });

  it("object turns (enqueue) keep the order of the queue they share with closures; a cancelled one is skipped", async () => {
    const pacer = new TurnPacer(1_000);
    const ran: string[] = [];
    const objectTurn = (name: string) => ({
      cancelled: false,
      paced() {
        ran.push(name);
      },
    });
    const atOnce: boolean[] = [];
    const turns = [];
    for (let i = 0; i < 40; i++) {
      if (i % 2 === 0) {
        const turn = objectTurn(`o${i}`);
        turns.push(turn);
        atOnce.push(pacer.enqueue(turn));
      } else pacer.run(() => ran.push(`c${i}`));
    }
    // The first slice's quota (32) ran at once, objects and closures alike; the rest waits.
    expect(atOnce.filter(Boolean)).toHaveLength(16);
    expect(ran).toHaveLength(32);
    const dropped = turns[17];
    if (dropped !== undefined) dropped.cancelled = true;
    await drained(pacer);
    const expected = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? `o${i}` : `c${i}`)).filter((n) => n !== "o34");
    expect(ran).toEqual(expected);
  });
});
