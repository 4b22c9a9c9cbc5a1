/**
 * The hang watchdog as a pure unit (SPEC X8): injected clock, tick and "after I/O" step.
 */
import { describe, expect, it } from "vitest";
import { tickIntervalMs, Watchdog, type Watched } from "../../../src/main/workers/watchdog.js";

class FakeLink implements Watched {
  lastSeenAt = 0;
  allowanceMs = 0;
  isDead = false;
}

function harness(hangTimeoutMs = 1000) {
  let now = 0;
  const links: FakeLink[] = [];
  const hung: { link: FakeLink; silentMs: number }[] = [];
  const deferred: (() => void)[] = [];
  let ticking = false;
  const watchdog = new Watchdog<FakeLink>({
    hangTimeoutMs,
    links: () => links,
    onHung: (link, silentMs) => hung.push({ link, silentMs }),
    now: () => now,
    afterIo: (fn) => deferred.push(fn),
    every: () => {
      ticking = true;
      return () => {
        ticking = false;
      };
    },
  });
  return {
    watchdog,
    links,
    hung,
    /** Advances the clock by `ms` in ticks of the watchdog's interval, running each tick and its I/O step. */
    advance(ms: number) {
      const step = tickIntervalMs(hangTimeoutMs);
      for (let passed = 0; passed < ms; passed += step) {
        now += step;
        watchdog.tick();
        for (const fn of deferred.splice(0)) fn();
      }
    },
    at: () => now,
    setNow: (value: number) => {
      now = value;
    },
    deferred,
    isTicking: () => ticking,
  };
}

describe("watchdog", () => {
  it("X8: reports a worker silent for longer than hangTimeoutMs, and not one that keeps talking", () => {
    const h = harness(1000);
    const silent = new FakeLink();
    const talking = new FakeLink();
    h.links.push(silent, talking);
    h.watchdog.start();
    for (let i = 0; i < 8; i++) {
      h.advance(250);
      talking.lastSeenAt = h.at();
    }
    expect(h.hung.map((entry) => entry.link)).toContain(silent);
    expect(h.hung.map((entry) => entry.link)).not.toContain(talking);
    expect(h.hung[0]?.silentMs).toBeGreaterThan(1000);
  });

  it("X8: a message delivered with the I/O after a suspicious tick clears the suspicion", () => {
    const h = harness(1000);
    const link = new FakeLink();
    h.links.push(link);
    h.watchdog.start();
    h.advance(1000);
    h.setNow(1250);
    h.watchdog.tick();
    expect(h.deferred).toHaveLength(1);
    link.lastSeenAt = 1250; // a heartbeat that was queued behind the timer
    for (const fn of h.deferred.splice(0)) fn();
    expect(h.hung).toEqual([]);
  });

  it("X8: a tick that itself ran late (the main thread was blocked) judges nothing", () => {
    const h = harness(1000);
    const link = new FakeLink();
    h.links.push(link);
    h.watchdog.start();
    h.setNow(5000); // the host was blocked for 5 s: heartbeats are queued, unread
    h.watchdog.tick();
    expect(h.deferred).toHaveLength(0);
    expect(h.hung).toEqual([]);
  });

  it("X8: a worker's allowance (a setup() running) extends its limit; dead links are ignored", () => {
    const h = harness(1000);
    const opening = new FakeLink();
    opening.allowanceMs = 5000;
    const dead = new FakeLink();
    dead.isDead = true;
    h.links.push(opening, dead);
    h.watchdog.start();
    h.advance(4000);
    expect(h.hung).toEqual([]);
    h.advance(3000);
    expect(new Set(h.hung.map((entry) => entry.link))).toEqual(new Set([opening]));
  });

  it("start and stop are idempotent and stop the tick", () => {
    const h = harness();
    h.watchdog.start();
    h.watchdog.start();
    expect(h.isTicking()).toBe(true);
    h.watchdog.stop();
    h.watchdog.stop();
    expect(h.isTicking()).toBe(false);
  });

  it("ticks at a quarter of the timeout, between 10 ms and 1 s", () => {
    expect(tickIntervalMs(15_000)).toBe(1000);
    expect(tickIntervalMs(400)).toBe(100);
    expect(tickIntervalMs(20)).toBe(10);
  });
});
