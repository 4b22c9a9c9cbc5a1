/**
 * SPEC B8 across a fleet, unit by unit, against a real redis-server (tier `redis`): several hosts'
 * `HostCoordination`s, each joined to the same fleet through its own connection, as separate
 * processes would be. The fleet budget is compared with the in-memory `RetryBudget` (the same
 * rule, fleet-wide); the gate and the permits are observed from the other hosts; Redis is stopped
 * and started again for the fallback. Waits are on events and promises, bounded by `within`.
 */
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { gateKey, HostCoordination } from "../../../src/main/coordination/host-coordination.js";
import { RetryBudget } from "../../../src/main/coordination/retry-budget.js";
import { SessionCoordination } from "../../../src/main/coordination/session-coordination.js";
import { connectFleet } from "../../../src/main/redis/fleet-connection.js";
import { abortableSleep } from "../../../src/main/retry/sleep.js";
import type { CoordinationFallbackEvent, SessionEvent } from "../../../src/shared/events.js";
import { DEFAULT_SETTINGS, parseSettings, type RetrySettings } from "../../../src/shared/settings/settings.js";
import { within } from "../../fixtures/bounded.js";
import { redisForFile } from "../../fixtures/redis-server.js";

const file = redisForFile();
const { cleanups } = file;

/** A fleet name no other test uses. */
function freshFleet(): string {
  return file.fleetName("unit");
}

/** One host's coordination, joined to fleet `name` on the test Redis. */
async function joinedHost(name: string, leaseMs = 10_000) {
  const settings = parseSettings({ fleet: { redis: file.redis.url, name, leaseMs } }, "test").fleet;
  if (settings === undefined) throw new Error("no fleet settings");
  const connection = await connectFleet(settings);
  const coordination = new HostCoordination({ now: () => performance.now(), sleep: abortableSleep });
  const announced: CoordinationFallbackEvent[] = [];
  await within(
    coordination.joinFleet(connection, (event) => announced.push(event)),
    5000,
    "the host to join",
  );
  const leave = async () => {
    coordination.leaveFleet();
    await connection.close();
  };
  cleanups.push(leave);
  return { coordination, connection, announced, leave };
}

/** A session's view of `host`'s coordination with `retry` settings. */
function sessionOf(host: HostCoordination, retry: Partial<RetrySettings>, apiKey = "key-1") {
  const settings: RetrySettings = { ...DEFAULT_SETTINGS.retry, ...retry };
  const events: SessionEvent[] = [];
  const coordination = new SessionCoordination(host, {
    provider: () => "p",
    baseUrl: () => "http://127.0.0.1:1/v1",
    apiKey: () => apiKey,
    settings: () => settings,
    emit: (event) => events.push(event),
  });
  return { coordination, events };
}

describe("the fleet's retry budget", () => {
  it("B8: decides every deposit and withdrawal of three hosts exactly as one RetryBudget would for all of them", async () => {
    const config = fc.record({
      ratio: fc.constantFrom(0, 0.1, 0.2, 0.5, 1),
      minPerSecond: fc.constantFrom(0, 0.05, 0.1, 1),
    });
    const ops = fc.array(
      fc.record({ host: fc.nat({ max: 2 }), kind: fc.constantFrom("deposit", "withdraw", "withdraw") }),
      { maxLength: 40 },
    );
    const hosts: Awaited<ReturnType<typeof joinedHost>>[] = [];
    const name = freshFleet();
    for (let i = 0; i < 3; i++) hosts.push(await joinedHost(name));
    let run = 0;
    await fc.assert(
      fc.asyncProperty(config, ops, async ({ ratio, minPerSecond }, sequence) => {
        // A window far longer than the run: no attempt leaves it, so a frozen clock is exact.
        // Each run has its own budget key (its window length), so runs do not see each other.
        const budget = { ratio, minPerSecond, windowMs: 600_000 + ++run };
        const reference = new RetryBudget(budget, () => 0);
        const views = hosts.map((host) => sessionOf(host.coordination, { budget }).coordination);
        for (const op of sequence) {
          const view = views[op.host];
          if (view === undefined) throw new Error("no such host");
          if (op.kind === "deposit") {
            view.depositFirstAttempt();
            reference.deposit();
            // Not awaited, a deposit counts before the same host's later commands only; a PING on
            // its connection orders it before the other hosts' next ones too, as the reference does.
            await hosts[op.host]?.connection.redis.ping();
            continue;
          }
          const refused = await view.withdrawRetry();
          expect(refused === undefined).toBe(reference.tryWithdraw());
        }
        await views[0]?.withdrawRetry();
        const state = views[0]?.state().retryBudget;
        expect(state?.source).toBe("fleet");
        expect(state?.deposits).toBe(reference.state().deposits);
      }),
      { numRuns: 25 },
    );
  }, 60_000);

  it("B8: refuses a retry fleet-wide with a message naming the fleet, and counts it in the host's own budget too", async () => {
    const name = freshFleet();
    const a = await joinedHost(name);
    const b = await joinedHost(name);
    const budget = { ratio: 0, minPerSecond: 0.1, windowMs: 10_000 };
    const viewA = sessionOf(a.coordination, { budget }).coordination;
    const viewB = sessionOf(b.coordination, { budget }).coordination;
    expect(await viewA.withdrawRetry()).toBeUndefined();
    expect(await viewB.withdrawRetry()).toBe(
      `Retry budget exhausted for provider "p" across fleet "${name}" (retry.budget: at most 0% of first attempts plus 0.1/s over 10 s)`,
    );
    expect(viewB.state().retryBudget).toEqual({ deposits: 0, withdrawals: 1, available: 0, source: "fleet" });
    // Host A's own budget counted its retry: a fallback would start from it.
    expect(a.coordination.budget("p", budget).state().withdrawals).toBe(1);
    expect(b.coordination.budget("p", budget).state().withdrawals).toBe(0);
  });

  it("B8: an attempt leaves the fleet's window after windowMs, on the Redis server's clock", async () => {
    const name = freshFleet();
    const a = await joinedHost(name);
    const budget = { ratio: 0, minPerSecond: 2, windowMs: 500 };
    const view = sessionOf(a.coordination, { budget }).coordination;
    expect(await view.withdrawRetry()).toBeUndefined();
    expect(typeof (await view.withdrawRetry())).toBe("string");
    // The retry taken leaves the window: a state refresh (every 250 ms at most) shows it gone.
    await vi.waitFor(() => expect(view.state().retryBudget?.withdrawals).toBe(0), { timeout: 5000, interval: 50 });
    expect(await view.withdrawRetry()).toBeUndefined();
  });
});

describe("the fleet's provider gates", () => {
  it("B8: a 429 seen by host A closes the gate of that endpoint and key for host B, and for host C joining later", async () => {
    const name = freshFleet();
    const a = await joinedHost(name);
    const b = await joinedHost(name);
    const viewA = sessionOf(a.coordination, { coordinate: true }).coordination;
    const viewB = sessionOf(b.coordination, { coordinate: true }).coordination;
    const otherKey = sessionOf(b.coordination, { coordinate: true }, "key-2").coordination;
    const closedAt = performance.now();
    viewA.closeGate(3000);
    await vi.waitFor(() => expect(viewB.gateClosed).toBe(true), { timeout: 5000, interval: 1 });
    const learnedMs = performance.now() - closedAt;
    console.info(`host B learned of host A's gate after ${learnedMs.toFixed(1)} ms`);
    expect(viewB.state().providerGate).toMatchObject({ closed: true, source: "fleet" });
    expect(viewB.state().providerGate?.reopensInMs).toBeLessThanOrEqual(3000);
    expect(otherKey.gateClosed).toBe(false);
    const c = await joinedHost(name);
    const viewC = sessionOf(c.coordination, { coordinate: true }).coordination;
    expect(viewC.gateClosed).toBe(true);
    // The key itself is never written: the gate is named by provider, endpoint and a hash of the key.
    const fields = await a.connection.redis.hkeys(a.connection.key("gates"));
    expect(fields).toEqual([gateKey("p", "http://127.0.0.1:1/v1", "key-1")]);
    expect(fields.join()).not.toContain("key-1");
  });
});

describe("the fleet's request permits", () => {
  it("B8: caps the requests in flight across hosts; a release anywhere wakes a waiting host, and a cancelled waiter takes nothing", async () => {
    const name = freshFleet();
    const [a, b, c] = [await joinedHost(name), await joinedHost(name), await joinedHost(name)];
    const owner = {};
    const sa = a.coordination.semaphore("p", 2);
    const sb = b.coordination.semaphore("p", 2);
    const sc = c.coordination.semaphore("p", 2);
    expect(await a.coordination.requestPermit(owner, 1, sa, undefined)).toBe(true);
    expect(await b.coordination.requestPermit(owner, 1, sb, undefined)).toBe(true);
    const waiting = c.coordination.requestPermit(owner, 1, sc, undefined);
    const cancelled = c.coordination.requestPermit(owner, 2, sc, undefined);
    await vi.waitFor(() => expect(c.coordination.fleet?.permits("p", 2).waiting).toBe(2), { timeout: 5000 });
    c.coordination.releasePermit(owner, 2);
    expect(await cancelled).toBe(false);
    a.coordination.releasePermit(owner, 1);
    expect(await within(waiting, 5000, "host C's permit after host A's release")).toBe(true);
    const held = await c.connection.redis.zcard(c.connection.key("permits", "p", "2"));
    expect(held).toBe(2);
    // A dead worker's permits go back to the fleet.
    c.coordination.releaseOwner(owner);
    b.coordination.releasePermit(owner, 1);
    await vi.waitFor(
      async () => expect(await c.connection.redis.zcard(c.connection.key("permits", "p", "2"))).toBe(0),
      {
        timeout: 5000,
      },
    );
  });

  it("B8: a host that stops renewing loses its permits within leaseMs plus the poll, and a living host keeps them", async () => {
    const name = freshFleet();
    const leaseMs = 600;
    const holder = await joinedHost(name, leaseMs);
    const waiter = await joinedHost(name, leaseMs);
    const owner = {};
    expect(await holder.coordination.requestPermit(owner, 1, holder.coordination.semaphore("p", 1), undefined)).toBe(
      true,
    );
    const waiting = waiter.coordination.requestPermit(owner, 1, waiter.coordination.semaphore("p", 1), undefined);
    let granted = false;
    void waiting.then(() => {
      granted = true;
    });
    // Renewed while the holder lives: its lease's expiry moves on four times (more than leaseMs).
    const permitsKey = holder.connection.key("permits", "p", "1");
    let lastExpiry = Number.NEGATIVE_INFINITY;
    let renewals = 0;
    await vi.waitFor(
      async () => {
        const [, score] = await holder.connection.redis.zrange(permitsKey, "0", "-1", "WITHSCORES");
        const expiry = Number(score);
        if (expiry > lastExpiry) {
          if (lastExpiry !== Number.NEGATIVE_INFINITY) renewals++;
          lastExpiry = expiry;
        }
        expect(renewals).toBeGreaterThanOrEqual(4);
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(granted).toBe(false);
    // The holder dies without a word: no release, no more renewals.
    const diedAt = performance.now();
    await holder.leave();
    expect(await within(waiting, leaseMs + 5000, "the dead host's permit")).toBe(true);
    console.info(
      `a dead host's permit came back after ${(performance.now() - diedAt).toFixed(0)} ms (leaseMs ${leaseMs})`,
    );
  });

  it("B8: the permit script holds a request at a gate closed fleet-wide, until it reopens", async () => {
    const name = freshFleet();
    const a = await joinedHost(name);
    const b = await joinedHost(name);
    const key = gateKey("p", "http://127.0.0.1:1/v1", "key-1");
    // Only in Redis (as if host B had missed the message): the script itself finds it closed.
    await a.connection.redis.hset(a.connection.key("gates"), key, String(Date.now() + 400));
    const owner = {};
    const asked = performance.now();
    expect(
      await within(b.coordination.requestPermit(owner, 1, b.coordination.semaphore("p", 1), key), 5000, "the permit"),
    ).toBe(true);
    expect(performance.now() - asked).toBeGreaterThanOrEqual(300);
  });
});

describe("a host that loses its fleet's Redis", () => {
  it("B8: falls back to its own decisions, says so to its sessions, and rejoins when Redis returns", async () => {
    const name = freshFleet();
    const a = await joinedHost(name);
    const budget = { ratio: 0, minPerSecond: 0.1, windowMs: 10_000 };
    const view = sessionOf(a.coordination, { budget, coordinate: true }).coordination;
    expect(view.state().providerGate?.source).toBe("fleet");
    await file.redis.stop();
    try {
      await vi.waitFor(() => expect(a.announced.map((e) => e.type)).toEqual(["coordination_fallback_start"]), {
        timeout: 5000,
      });
      expect(a.coordination.fleet?.source).toBe("local");
      expect(view.state().providerGate?.source).toBe("local");
      // The host's own budget decides: one retry of its floor, then refused.
      expect(await within(Promise.resolve(view.withdrawRetry()), 2000, "a local decision")).toBeUndefined();
      expect(view.withdrawRetry()).toMatch(/^Retry budget exhausted for provider "p" \(/);
      const owner = {};
      expect(
        await within(
          a.coordination.requestPermit(owner, 1, a.coordination.semaphore("p", 1), undefined),
          2000,
          "a local permit",
        ),
      ).toBe(true);
      a.coordination.releasePermit(owner, 1);
    } finally {
      await file.redis.start();
    }
    await vi.waitFor(() => expect(a.announced.map((e) => e.type)).toContain("coordination_fallback_end"), {
      timeout: 10_000,
    });
    expect(a.announced[0]).toMatchObject({ type: "coordination_fallback_start", fleet: name });
    expect(a.announced[1]).toMatchObject({ type: "coordination_fallback_end", fleet: name });
    expect(a.coordination.fleet?.source).toBe("fleet");
    expect(view.state().providerGate?.source).toBe("fleet");
  });
});

describe("what a host decided alone, when it rejoins", () => {
  it("B8: goes into the fleet's budget and gates: its first attempts, retries and a gate a 429 closed during the fallback", async () => {
    const name = freshFleet();
    const a = await joinedHost(name);
    const b = await joinedHost(name);
    const budget = { ratio: 0.5, minPerSecond: 0, windowMs: 60_000 };
    const alone = sessionOf(a.coordination, { budget, coordinate: true }).coordination;
    await file.redis.stop();
    try {
      await vi.waitFor(() => expect(a.coordination.fleet?.source).toBe("local"), { timeout: 5000 });
      for (let i = 0; i < 4; i++) alone.depositFirstAttempt();
      // Decided by the host's own budget: ratio 0.5 of 4 first attempts.
      for (let i = 0; i < 2; i++) {
        expect(await within(Promise.resolve(alone.withdrawRetry()), 2000, "a local decision")).toBeUndefined();
      }
      alone.closeGate(30_000);
    } finally {
      await file.redis.start();
    }
    for (const host of [a, b]) {
      await vi.waitFor(() => expect(host.coordination.fleet?.source).toBe("fleet"), { timeout: 10_000, interval: 50 });
    }
    // Host B never saw any of it but through Redis.
    const fleetBudget = () => b.coordination.fleet?.budget("p", budget).state();
    await vi.waitFor(() => expect(fleetBudget()).toMatchObject({ deposits: 4, withdrawals: 2, available: 0 }), {
      timeout: 5000,
      interval: 100,
    });
    const key = gateKey("p", "http://127.0.0.1:1/v1", "key-1");
    await vi.waitFor(() => expect(b.coordination.gate.remainingMs(key)).toBeGreaterThan(20_000), { timeout: 5000 });
    // Decided in the fleet from now on: two more first attempts make room for exactly one retry.
    const view = sessionOf(b.coordination, { budget, coordinate: true }).coordination;
    view.depositFirstAttempt();
    view.depositFirstAttempt();
    expect(await view.withdrawRetry()).toBeUndefined();
    expect(await view.withdrawRetry()).toMatch(/across fleet/);
  });
});

describe("a host whose fleet's Redis hangs", () => {
  it("B8: decides alone after the command bound instead of waiting, and rejoins when Redis answers again", async () => {
    const name = freshFleet();
    const a = await joinedHost(name);
    const budget = { ratio: 0, minPerSecond: 0.1, windowMs: 10_000 };
    const view = sessionOf(a.coordination, { budget }).coordination;
    const pid = Number(/process_id:(\d+)/.exec(await a.connection.redis.info("server"))?.[1]);
    // Stopped, not gone: the connection stays open and a command just gets no answer.
    process.kill(pid, "SIGSTOP");
    try {
      expect(await within(Promise.resolve(view.withdrawRetry()), 5000, "a decision while Redis hangs")).toBeUndefined();
      expect(a.announced).toEqual([
        { type: "coordination_fallback_start", fleet: name, reason: expect.stringMatching(/did not answer/) },
      ]);
      expect(a.coordination.fleet?.source).toBe("local");
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await vi.waitFor(() => expect(a.coordination.fleet?.source).toBe("fleet"), { timeout: 10_000, interval: 50 });
    expect(a.announced.map((event) => event.type)).toEqual([
      "coordination_fallback_start",
      "coordination_fallback_end",
    ]);
  });
});

describe("two fleets on one Redis", () => {
  it("B8: share no budget, gate or permits", async () => {
    const one = await joinedHost(freshFleet());
    const two = await joinedHost(freshFleet());
    const budget = { ratio: 0, minPerSecond: 0.1, windowMs: 10_000 };
    const viewOne = sessionOf(one.coordination, { budget, coordinate: true }).coordination;
    const viewTwo = sessionOf(two.coordination, { budget, coordinate: true }).coordination;
    expect(await viewOne.withdrawRetry()).toBeUndefined();
    expect(await viewTwo.withdrawRetry()).toBeUndefined();
    viewOne.closeGate(5000);
    const owner = {};
    expect(await one.coordination.requestPermit(owner, 1, one.coordination.semaphore("p", 1), undefined)).toBe(true);
    expect(
      await within(
        two.coordination.requestPermit(owner, 1, two.coordination.semaphore("p", 1), undefined),
        2000,
        "the other fleet's permit",
      ),
    ).toBe(true);
    // A third host of fleet one sees its gate closed; fleet two's host never does.
    const third = await joinedHost(one.coordination.fleet?.name ?? "");
    expect(sessionOf(third.coordination, { coordinate: true }).coordination.gateClosed).toBe(true);
    expect(viewTwo.gateClosed).toBe(false);
  });
});
