/**
 * SPEC B8 across a fleet on the real stack: three (or more) lifeline host processes of the built
 * package (`test/fixtures/fleet-host.mjs`; run `npm run build` first), one real redis-server, and
 * the mock model server over HTTP. Every count and time of a model request is the mock server's
 * own. Each case also runs, or states, what the same hosts do without a fleet, so that it can fail.
 *
 * Waits are on events, records and Redis state, bounded by `within`/`vi.waitFor`; the times
 * printed (a gate's hold, a dead host's permits) are measurements for docs/fleet.md, and only the
 * lease bound the docs state is asserted, with slack for a loaded machine.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { MockRequestRecord } from "../../../src/mock-server/index.js";
import { within } from "../../fixtures/bounded.js";
import { type FleetHost, type HostPromptResult, startFleetHost } from "../../fixtures/fleet-host.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { startRedis, type TestRedis } from "../../fixtures/redis-server.js";

const suite = mockServerSuite();
const { cleanups } = suite;
let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.dispose();
});

let fleets = 0;
function freshFleet(): string {
  return `hosts${++fleets}x${process.pid}`;
}

/** `count` hosts with `retry` settings, in fleet `fleet` (none: each on its own), `sessions` sessions each. */
async function hosts(count: number, retry: object, fleet: object | undefined, sessions = 1): Promise<FleetHost[]> {
  const settings = fleet === undefined ? { retry } : { retry, fleet };
  return Promise.all(
    Array.from({ length: count }, () => startFleetHost(cleanups, { settings, mockPort: suite.server.port, sessions })),
  );
}

/** The first request the mock server logged whose conversation contains `text`. */
function firstRequest(text: string): MockRequestRecord {
  const record = suite.server.log.find((r) => r.conversation.includes(text));
  if (record === undefined) throw new Error(`no request of "${text}" reached the mock server`);
  return record;
}

describe("a fleet's retry budget, across three hosts", () => {
  it("B8: fleet-wide retries stay within ratio × fleet-wide first attempts + the floor; without a fleet each host spends its own", async () => {
    suite.server.setScript({ faults: [{ probability: 1, step: 503 }] });
    // 10% of first attempts plus 0.05/s over a minute (3 retries), for the fleet or for each host.
    const retry = { baseDelayMs: 1, maxRetries: 3, budget: { ratio: 0.1, minPerSecond: 0.05, windowMs: 60_000 } };
    const run = async (tag: string, fleet: object | undefined) => {
      const group = await hosts(3, retry, fleet, 2);
      await Promise.all(
        group.flatMap((host, h) =>
          [0, 1].map(async (session) => {
            for (let p = 0; p < 10; p++) await host.prompt(session, `${tag} h${h} s${session} p${p}`);
          }),
        ),
      );
      const firstAttempts = 3 * 2 * 10;
      return { firstAttempts, retries: suite.server.requests(tag) - firstAttempts };
    };
    const fleet = await run("budget-fleet", { redis: redis.url, name: freshFleet() });
    const alone = await run("budget-alone", undefined);
    console.info(`retries: ${fleet.retries} in a fleet, ${alone.retries} without (of 60 first attempts each)`);
    expect(fleet.retries).toBeLessThanOrEqual(0.1 * fleet.firstAttempts + 3);
    expect(fleet.retries).toBeGreaterThan(0);
    // Each host alone allows 0.1 × 20 + 3 = 5: three times the fleet's floor, and more than the fleet's bound.
    expect(alone.retries).toBe(15);
  }, 90_000);
});

describe("a prompt's retries, when the budget refuses one", () => {
  it("B8: a prompt's retries are the retry requests the server received, with a fleet's budget and with the host's own", async () => {
    // Seven 503s; a zero ratio leaves the floor's 3 retries (0.05/s over a minute), so the fourth
    // retry is refused: by Redis after its auto_retry_start was promised, or by the host at once.
    const refused = (tag: string) => ({ match: tag, steps: Array.from({ length: 7 }, () => 503) });
    suite.server.setScript({ conversations: [refused("refused-fleet"), refused("refused-alone")] });
    const retry = { baseDelayMs: 1, maxRetries: 6, budget: { ratio: 0, minPerSecond: 0.05, windowMs: 60_000 } };
    const cases = [
      ["refused-fleet", { redis: redis.url, name: freshFleet() }],
      ["refused-alone", undefined],
    ] as const;
    for (const [tag, fleet] of cases) {
      const [host] = await hosts(1, retry, fleet);
      const result = await host?.prompt(0, tag);
      const received = suite.server.requests(tag);
      // The first attempt and the floor's 3 retries reached the server.
      expect(received, tag).toBe(4);
      expect(result, tag).toMatchObject({ stopReason: "error", retries: received - 1 });
      // The refused retry was announced all the same: the retries are not the auto_retry_starts.
      const starts = host?.events("auto_retry_start").length ?? 0;
      expect(host?.events("auto_retry_end").at(-1)?.event, tag).toMatchObject({
        reason: "budget_exhausted",
        attempt: 3,
      });
      expect(starts, tag).toBe(fleet === undefined ? 3 : 4);
    }
  }, 60_000);
});

describe("a fleet's provider gate, across three hosts", () => {
  it("B8: a 429 with a hint seen by host A holds hosts B's and C's next requests until the hint's time", async () => {
    const hintMs = 1500;
    suite.server.setScript({
      conversations: [{ match: "gate-a", steps: [{ type: "error", status: 429, retryAfterMs: hintMs }] }],
    });
    const [a, b, c] = await hosts(3, { baseDelayMs: 1, coordinate: true }, { redis: redis.url, name: freshFleet() });
    if (a === undefined || b === undefined || c === undefined) throw new Error("three hosts");
    const limited = suite.server.waitForRequestEnd((r) => r.conversation.includes("gate-a") && r.status === 429);
    const promptA = a.prompt(0, "gate-a");
    const t429 = (await limited).endedAt ?? 0;
    // B and C know of the gate (they were told; nothing of theirs has been sent yet).
    for (const host of [b, c]) {
      await vi.waitFor(
        async () => expect((await host.state()).providerGate).toMatchObject({ closed: true, source: "fleet" }),
        {
          timeout: 5000,
          interval: 10,
        },
      );
    }
    const results = await Promise.all([b.prompt(0, "gate-b"), c.prompt(0, "gate-c"), promptA]);
    expect(results.map((r) => r.stopReason)).toEqual(["stop", "stop", "stop"]);
    for (const [host, text] of [
      [b, "gate-b"],
      [c, "gate-c"],
    ] as const) {
      const held = firstRequest(text).startedAt - t429;
      console.info(
        `host ${text.slice(-1).toUpperCase()}'s request reached the server ${held} ms after host A's 429 (hint ${hintMs} ms)`,
      );
      expect(held).toBeGreaterThanOrEqual(hintMs);
      expect(host.events("provider_gate_wait").map((e) => e.event)).toEqual([
        expect.objectContaining({ type: "provider_gate_wait", before: "prompt" }),
      ]);
    }
    // Host A's own retry waited for its hint too.
    const retried = suite.server.log.filter((r) => r.conversation.includes("gate-a"));
    expect(retried).toHaveLength(2);
    expect((retried[1]?.startedAt ?? 0) - t429).toBeGreaterThanOrEqual(hintMs);
  }, 60_000);
});

describe("a fleet's request permits, across three hosts", () => {
  it("B8: cap the requests in flight fleet-wide; a SIGKILLed host's permits come back within leaseMs + the poll", async () => {
    const leaseMs = 1000;
    const limit = 2;
    const retry = { baseDelayMs: 1, maxConcurrentRequests: limit };
    const fleet = { redis: redis.url, name: freshFleet(), leaseMs };
    suite.server.setScript({
      tokenDelayMs: 20,
      conversations: [{ match: "permit-hold", steps: ["stall"] }],
    });
    suite.server.reset();
    // Sessions 0–2 of each host for the cap, 3 and 4 for the kill: the mock names a conversation
    // after a session's first prompt, so each phase has sessions of its own.
    const [a, b, c] = await hosts(3, retry, fleet, 5);
    if (a === undefined || b === undefined || c === undefined) throw new Error("three hosts");
    // Nine sessions at once against a fleet-wide limit of 2.
    const nine = [a, b, c].flatMap((host, h) => [0, 1, 2].map((s) => host.prompt(s, `permit-cap h${h} s${s}`)));
    expect((await Promise.all(nine)).every((r) => r.stopReason === "stop")).toBe(true);
    expect(suite.server.stats().maxInFlight).toBe(limit);

    // Host A holds both permits with requests that never end; B and C wait for them.
    const holding = Promise.all([a.prompt(3, "permit-hold 1"), a.prompt(4, "permit-hold 2")]).catch(() => {});
    await vi.waitFor(
      () => expect(suite.server.log.filter((r) => r.conversation.includes("permit-hold"))).toHaveLength(2),
      {
        timeout: 10_000,
      },
    );
    const waiting = [b.prompt(3, "permit-after b"), c.prompt(3, "permit-after c")];
    // A's leases are renewed while it lives: their expiry moves on four times (more than leaseMs)
    // and B and C still send nothing.
    const observer = new Redis(redis.url);
    cleanups.push(() => observer.quit().then(() => {}));
    const key = `lifeline:${fleet.name}:permits:mock:${limit}`;
    let lastExpiry = "";
    let renewals = 0;
    await vi.waitFor(
      async () => {
        const expiries = (await observer.zrange(key, "0", "-1", "WITHSCORES")).filter((_, i) => i % 2 === 1).join();
        if (expiries !== lastExpiry && lastExpiry !== "") renewals++;
        lastExpiry = expiries;
        expect(renewals).toBeGreaterThanOrEqual(4);
      },
      { timeout: 15_000, interval: 25 },
    );
    expect((await b.state(3)).requestPermits).toMatchObject({ limit, inUse: limit, source: "fleet" });
    expect(suite.server.log.filter((r) => r.conversation.includes("permit-after"))).toHaveLength(0);

    const killedAt = Date.now();
    await a.kill();
    await holding;
    const results = await within(Promise.all(waiting), leaseMs + 10_000, "B's and C's prompts after A died");
    expect(results.map((r) => r.stopReason)).toEqual(["stop", "stop"]);
    const backAfter =
      Math.max(firstRequest("permit-after b").startedAt, firstRequest("permit-after c").startedAt) - killedAt;
    console.info(
      `a SIGKILLed host's permits reached the other hosts' requests ${backAfter} ms after the kill (leaseMs ${leaseMs})`,
    );
    // The stated bound: leaseMs + the poll (min(250, leaseMs/4)), with a second's slack for a loaded machine.
    expect(backAfter).toBeLessThanOrEqual(leaseMs + 250 + 1000);
    expect(suite.server.stats().maxInFlight).toBe(limit);

    // The same nine sessions without a fleet: each host caps only itself.
    suite.server.reset();
    const alone = await hosts(3, retry, undefined, 3);
    await Promise.all(alone.flatMap((host, h) => [0, 1, 2].map((s) => host.prompt(s, `permit-alone h${h} s${s}`))));
    expect(suite.server.stats().maxInFlight).toBeGreaterThan(limit);
  }, 90_000);
});

describe("a host stalled past its lease with a request in flight", () => {
  it("B8: the fleet has one request more than the limit while another host's request runs, and none once the stalled host renews", async () => {
    const leaseMs = 1000;
    const retry = { baseDelayMs: 1, maxConcurrentRequests: 1 };
    const fleet = { redis: redis.url, name: freshFleet(), leaseMs };
    suite.server.setScript({
      tokenDelayMs: 5,
      conversations: [
        // About 6 s of streaming: A's request outlives its stall by seconds.
        { match: "stalled-long", steps: [{ type: "ok", tokens: 60, tokenDelayMs: 100 }] },
        { match: "during-stall", steps: [{ type: "ok", tokens: 5 }] },
      ],
    });
    suite.server.reset();
    const [a, b, c] = await hosts(3, retry, fleet, 1);
    if (a === undefined || b === undefined || c === undefined) throw new Error("three hosts");
    const long = a.prompt(0, "stalled-long");
    await vi.waitFor(() => firstRequest("stalled-long"), { timeout: 10_000 });
    // A's whole process stops: no renewal, as a host whose event loop is blocked.
    const stoppedAt = Date.now();
    a.child.kill("SIGSTOP");
    let during: HostPromptResult;
    try {
      during = await within(b.prompt(0, "during-stall 1"), leaseMs + 10_000, "B's prompt while A is stopped");
    } finally {
      a.child.kill("SIGCONT");
    }
    expect(during.stopReason).toBe("stop");
    const tookOver = firstRequest("during-stall 1").startedAt - stoppedAt;
    // A renews again (every leaseMs / 3): the set has room, so it takes its place back and C waits.
    await new Promise((resolve) => setTimeout(resolve, leaseMs));
    const afterRenewal = c.prompt(0, "during-stall 2");
    const longResult = await within(long, 20_000, "A's long prompt");
    expect(longResult.stopReason).toBe("stop");
    expect((await within(afterRenewal, 10_000, "C's prompt")).stopReason).toBe("stop");
    const aEnd = suite.server.log.find((r) => r.conversation.includes("stalled-long"))?.endedAt ?? 0;
    const cStart = firstRequest("during-stall 2").startedAt;
    console.info(
      `a host stopped ${tookOver} ms before another host's request took its lapsed permit (leaseMs ${leaseMs}); ` +
        `max in flight ${suite.server.stats().maxInFlight} with a limit of 1; the next host's request started ${cStart - aEnd} ms after the stalled host's request ended`,
    );
    expect(suite.server.stats().maxInFlight).toBe(2);
    // Without the renewal taking the lapsed permit back, C would have started while A still streamed.
    expect(cStart).toBeGreaterThanOrEqual(aEnd);
  }, 60_000);
});

describe("a fleet whose Redis stops mid-run", () => {
  it("B8: prompts in flight finish, decisions fall back to each host and return to the fleet when Redis is back", async () => {
    const own = await startRedis();
    cleanups.push(() => own.dispose());
    suite.server.setScript({
      conversations: [{ match: "outage slow", steps: [{ type: "ok", tokens: 20, tokenDelayMs: 50 }] }],
    });
    const retry = { baseDelayMs: 1, coordinate: true, maxConcurrentRequests: 2, budget: {} };
    const [a, b] = await hosts(2, retry, { redis: own.url, name: freshFleet(), leaseMs: 1000 });
    if (a === undefined || b === undefined) throw new Error("two hosts");
    const inFlight = [a.prompt(0, "outage slow a"), b.prompt(0, "outage slow b")];
    await vi.waitFor(
      () => expect(suite.server.log.filter((r) => r.conversation.includes("outage slow"))).toHaveLength(2),
      {
        timeout: 10_000,
      },
    );
    await own.stop();
    for (const host of [a, b]) {
      expect(await host.waitForEvent("coordination_fallback_start", 10_000)).toMatchObject({
        fleet: expect.any(String),
      });
    }
    expect((await Promise.all(inFlight)).map((r) => r.stopReason)).toEqual(["stop", "stop"]);
    // While Redis is away each host decides alone, and says so.
    expect((await a.prompt(0, "outage during")).stopReason).toBe("stop");
    const local = await a.state();
    expect([local.retryBudget?.source, local.providerGate?.source, local.requestPermits?.source]).toEqual([
      "local",
      "local",
      "local",
    ]);
    await own.start();
    for (const host of [a, b]) {
      const end = await host.waitForEvent("coordination_fallback_end", 15_000);
      expect(end).toMatchObject({ type: "coordination_fallback_end", fallbackMs: expect.any(Number) });
    }
    expect((await b.prompt(0, "outage after")).stopReason).toBe("stop");
    await vi.waitFor(
      async () => {
        const state = await b.state();
        expect([state.retryBudget?.source, state.providerGate?.source, state.requestPermits?.source]).toEqual([
          "fleet",
          "fleet",
          "fleet",
        ]);
      },
      { timeout: 5000, interval: 50 },
    );
  }, 90_000);
});

describe("two fleets on one Redis", () => {
  it("B8: do not share gates or permits", async () => {
    suite.server.setScript({
      conversations: [
        { match: "two-fleets limited", steps: [{ type: "error", status: 429, retryAfterMs: 4000 }] },
        { match: "two-fleets hold", steps: ["stall"] },
      ],
    });
    const retry = { baseDelayMs: 1, coordinate: true, maxConcurrentRequests: 1 };
    const [x] = await hosts(1, retry, { redis: redis.url, name: freshFleet() }, 2);
    const [y] = await hosts(1, retry, { redis: redis.url, name: freshFleet() });
    if (x === undefined || y === undefined) throw new Error("two hosts");
    const limited = suite.server.waitForRequestEnd(
      (r) => r.conversation.includes("two-fleets limited") && r.status === 429,
    );
    const retrying = x.prompt(0, "two-fleets limited");
    const t429 = (await limited).endedAt ?? 0;
    await vi.waitFor(async () => expect((await x.state(1)).providerGate?.closed).toBe(true), {
      timeout: 5000,
      interval: 10,
    });
    expect((await y.state()).providerGate?.closed).toBe(false);
    expect((await y.prompt(0, "two-fleets free")).stopReason).toBe("stop");
    // Sent before fleet X's hint was over: nothing held it.
    expect(firstRequest("two-fleets free").startedAt - t429).toBeLessThan(4000);
    expect(y.events("provider_gate_wait")).toEqual([]);
    await retrying;
    // Fleet X's only permit held by a request that never ends; fleet Y's request goes through.
    void x.prompt(1, "two-fleets hold").catch(() => {});
    await vi.waitFor(
      () => expect(suite.server.log.some((r) => r.conversation.includes("two-fleets hold"))).toBe(true),
      {
        timeout: 10_000,
      },
    );
    expect((await within(y.prompt(0, "two-fleets second"), 10_000, "fleet Y's prompt")).stopReason).toBe("stop");
  }, 60_000);
});
