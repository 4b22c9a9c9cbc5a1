/**
 * SPEC B8 and the stream-idle timeout on the real stack (STYLE 17, tier two): the built package,
 * a real piscina pool and worker threads, and the mock model server over HTTP on 127.0.0.1.
 * Every count is the mock server's own. Run `npm run build` first.
 *
 * No wall-clock waits "to let things happen": every wait is on an event or a promise, bounded by
 * {@link within}. Timings in scripts (a rate-limit window, token pacing) shape the traffic; no
 * assertion is about how long anything took.
 */
import { describe, expect, it, vi } from "vitest";
import {
  type AgentSession,
  createSessionHost,
  type SessionHost,
  type SessionHostOptions,
} from "../../../dist/main/index.js";
import { requestFailureOf } from "../../../dist/shared/failures/request-failure.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { nextEvent } from "../../fixtures/events.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { mockModel, workerApiModel } from "../../fixtures/models.mjs";

const CRASH_MODULE = new URL("../../fixtures/crash-provider.mjs", import.meta.url);
const STALL_MODEL = workerApiModel("lifeline-test-stall", "stall-1");
const CRASH_MODEL = workerApiModel("lifeline-test-crash", "crash-1");

const suite = mockServerSuite();
const { cleanups } = suite;

/** A host on the real pool, isolated from any user or project settings file. */
function realHost(options: SessionHostOptions = {}): SessionHost {
  const dir = tempDir(cleanups, "lifeline-coordination-");
  const host = createSessionHost({ lifelineDir: dir, cwd: dir, ...options });
  cleanups.push(() => host.close());
  return host;
}

function collect(session: AgentSession) {
  const events: { type: string; [key: string]: unknown }[] = [];
  session.subscribe((event) => events.push(event as (typeof events)[number]));
  return events;
}

/** The most model requests the mock server had open at once while `run` ran. */
async function peakConcurrency(run: () => Promise<unknown>): Promise<number> {
  let open = 0;
  let peak = 0;
  const offStart = suite.server.on("request_start", () => {
    open++;
    peak = Math.max(peak, open);
  });
  const offEnd = suite.server.on("request_end", () => {
    open--;
  });
  try {
    await run();
  } finally {
    offStart();
    offEnd();
  }
  return peak;
}

describe("the stream-idle timeout (retry.provider.idleTimeoutMs)", () => {
  it("B2: a stream that stalls after its headers is cut and retried as a transient failure", async () => {
    suite.server.setScript({ conversations: [{ match: "idle stall", steps: [{ type: "stall", afterTokens: 2 }] }] });
    const host = realHost({ settings: { retry: { baseDelayMs: 1, provider: { idleTimeoutMs: 300 } } } });
    const session = await host.createSession({ model: mockModel(suite.server.port), apiKey: "mock-key" });
    const events = collect(session);
    const since = suite.server.log.at(-1)?.seq ?? 0;
    const hungUp = suite.server.waitForRequestEnd((r) => r.conversation.includes("idle stall"), 20_000, since);
    const result = await within(session.prompt("idle stall"), 20_000, "the stalled prompt to be retried");
    expect((await hungUp).outcome).toBe("client_closed");
    expect(result.stopReason).toBe("stop");
    expect(result.retries).toBe(1);
    expect(suite.server.requests("idle stall")).toBe(2);
    const start = events.find((event) => event.type === "auto_retry_start");
    expect(start?.errorMessage).toMatch(/idle/i);
    const failed = session.history.find((m) => m.role === "assistant" && m.stopReason === "error");
    expect(failed?.role === "assistant" ? requestFailureOf(failed)?.network : undefined).toMatchObject({
      phase: "body",
      code: "ERR_STREAM_IDLE",
    });
    expect(events.find((event) => event.type === "auto_retry_end")).toMatchObject({ success: true, reason: "success" });
  });
});

describe("the retry budget (retry.budget)", () => {
  it("B8 R4: when the host's budget is spent the chain ends with reason budget_exhausted, after fewer requests", async () => {
    suite.server.setScript({ conversations: [{ match: "budget chain", steps: [503, 503, 503, "ok"] }] });
    // No ratio and a floor of one retry per 10 s: one retry, then the budget is spent.
    const budget = { ratio: 0, minPerSecond: 0.1, windowMs: 10_000 };
    const host = realHost({ settings: { retry: { baseDelayMs: 1, maxRetries: 5, budget } } });
    const session = await host.createSession({ model: mockModel(suite.server.port), apiKey: "mock-key" });
    const events = collect(session);
    const result = await within(session.prompt("budget chain"), 20_000, "the budget-limited prompt");
    expect(result.stopReason).toBe("error");
    expect(suite.server.requests("budget chain")).toBe(2);
    const end = events.find((event) => event.type === "auto_retry_end");
    expect(end).toMatchObject({ success: false, attempt: 1, reason: "budget_exhausted" });
    expect(end?.finalError).toMatch(/retry budget exhausted/i);
    expect(session.coordinationState.retryBudget).toEqual({ deposits: 1, withdrawals: 1, available: 0 });
  });
});

describe("the provider gate (retry.coordinate)", () => {
  /** N sessions against a provider that lets 2 requests through per second; the server's count. */
  async function storm(coordinate: boolean): Promise<{ requests: number; gateWaits: number }> {
    const tag = coordinate ? "gated" : "ungated";
    suite.server.setScript({ rateLimit: { requests: 2, windowMs: 1000 } });
    const host = realHost({
      threads: 2,
      settings: { retry: { baseDelayMs: 20, maxDelayMs: 300, maxRetries: 30, coordinate } },
    });
    const sessions = await Promise.all(
      Array.from({ length: 5 }, () => host.createSession({ model: mockModel(suite.server.port), apiKey: "mock-key" })),
    );
    let gateWaits = 0;
    for (const session of sessions) {
      session.subscribe((event) => {
        if (event.type === "provider_gate_wait") gateWaits++;
      });
    }
    const before = suite.server.requests(tag);
    const results = await within(
      Promise.all(sessions.map((session, i) => session.prompt(`storm ${tag} ${i}`))),
      60_000,
      `the ${tag} storm`,
    );
    for (const result of results) expect(result.stopReason).toBe("stop");
    return { requests: suite.server.requests(tag) - before, gateWaits };
  }

  it("B8: with coordinate on, sessions hitting a 429 with retry-after send fewer requests than without", async () => {
    const without = await storm(false);
    const withGate = await storm(true);
    expect(without.gateWaits).toBe(0);
    expect(withGate.gateWaits).toBeGreaterThan(0);
    expect(withGate.requests).toBeLessThan(without.requests);
  });
});

describe("new prompts at a closed gate", () => {
  it("B8 R9: a new prompt waits at its provider's closed gate, and abort() ends the wait with no request sent", async () => {
    suite.server.setScript({
      conversations: [{ match: "gate closer", steps: [{ type: "error", status: 429, retryAfterMs: 60_000 }] }],
    });
    const host = realHost({ settings: { retry: { enabled: false, coordinate: true } } });
    const closer = await host.createSession({ model: mockModel(suite.server.port), apiKey: "mock-key" });
    const waiter = await host.createSession({ model: mockModel(suite.server.port), apiKey: "mock-key" });
    const closed = await within(closer.prompt("gate closer"), 20_000, "the rate-limited prompt");
    expect(closed.stopReason).toBe("error");
    expect(waiter.coordinationState.providerGate?.closed).toBe(true);

    const waiting = nextEvent(waiter, "provider_gate_wait");
    const prompt = waiter.prompt("gate waiter");
    expect(await within(waiting, 5000, "the prompt to wait at the gate")).toMatchObject({
      provider: "mock",
      before: "prompt",
    });
    expect(waiter.isBusy).toBe(true);
    await waiter.abort();
    const result = await within(prompt, 5000, "the aborted prompt");
    expect(result.stopReason).toBe("aborted");
    expect(suite.server.requests("gate waiter")).toBe(0);
  });
});

describe("request permits (retry.maxConcurrentRequests)", () => {
  it("B8: with maxConcurrentRequests 2, the mock server never has more than 2 requests open across workers", async () => {
    suite.server.setScript({
      conversations: [{ match: "permits", steps: [] }],
      tokenDelayMs: 20,
      reply: "one two three four five six seven eight",
    });
    const host = realHost({ threads: 2, settings: { retry: { baseDelayMs: 1, maxConcurrentRequests: 2 } } });
    const sessions = await Promise.all(
      Array.from({ length: 6 }, () => host.createSession({ model: mockModel(suite.server.port), apiKey: "mock-key" })),
    );
    expect(host.workerCount).toBe(2);
    const before = suite.server.requests("permits");
    const peak = await peakConcurrency(() =>
      within(Promise.all(sessions.map((s, i) => s.prompt(`permits ${i}`))), 30_000, "six prompts under two permits"),
    );
    expect(suite.server.requests("permits") - before).toBe(6);
    // Six sessions start at once; without permits the server sees them all together.
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(2);
    expect(sessions[0]?.coordinationState.requestPermits).toEqual({ limit: 2, inUse: 0, waiting: 0 });
  });

  it("B8 X3: abort() ends a wait for a permit, and the place in the queue is given back", async () => {
    const host = realHost({ threads: 2, settings: { retry: { enabled: false, maxConcurrentRequests: 1 } } });
    const holder = await host.createSession({ model: STALL_MODEL, workerModule: CRASH_MODULE });
    const queued = await host.createSession({ model: STALL_MODEL, workerModule: CRASH_MODULE });
    const holding = nextEvent(holder, "message_update");
    const held = holder.prompt("hold the only permit");
    await within(holding, 10_000, "the holder to stream under its permit");
    const started = nextEvent(queued, "agent_start");
    const waiting = queued.prompt("wait for the permit");
    await within(started, 10_000, "the queued session's run to start");
    // The permit request is one message each way; the state shows the queued request once it is in.
    await vi.waitFor(() => expect(queued.coordinationState.requestPermits?.waiting).toBe(1), { timeout: 10_000 });
    await queued.abort();
    expect((await within(waiting, 5000, "the queued prompt after abort()")).stopReason).toBe("aborted");
    expect(queued.coordinationState.requestPermits).toEqual({ limit: 1, inUse: 1, waiting: 0 });
    await holder.abort();
    await within(held, 5000, "the holder's prompt after abort()");
    expect(holder.coordinationState.requestPermits).toEqual({ limit: 1, inUse: 0, waiting: 0 });
  });

  it("B8 X5: a permit held by a worker that dies is released, so the next request of the provider is sent", async () => {
    const host = realHost({
      threads: 1,
      settings: { retry: { enabled: false, maxConcurrentRequests: 1 }, supervision: { maxRestarts: 0 } },
    });
    // The holder streams (so its permit is granted and acknowledged) and never ends; a session of
    // another provider on the same worker then kills that worker.
    const holder = await host.createSession({ model: STALL_MODEL, workerModule: CRASH_MODULE });
    const crasher = await host.createSession({
      model: { ...CRASH_MODEL, provider: "lifeline-test-crasher" },
      workerModule: CRASH_MODULE,
    });
    const holding = nextEvent(holder, "message_update");
    const held = holder.prompt("hold the only permit").catch((error: unknown) => error);
    await within(holding, 10_000, "the holder to stream under its permit");
    expect(holder.coordinationState.requestPermits).toEqual({ limit: 1, inUse: 1, waiting: 0 });
    const crashed = crasher.prompt("crash the worker").catch((error: unknown) => error);
    expect(await within(held, 20_000, "the holder's prompt to settle")).toMatchObject({ code: "ERR_SESSION_CRASHED" });
    await within(crashed, 20_000, "the crasher's prompt to settle");

    const next = await host.createSession({ model: STALL_MODEL, workerModule: CRASH_MODULE });
    const streaming = nextEvent(next, "message_update");
    const prompt = next.prompt("the next request of the provider");
    await within(streaming, 10_000, "the next request to get the permit and stream");
    expect(next.coordinationState.requestPermits).toEqual({ limit: 1, inUse: 1, waiting: 0 });
    await next.abort();
    const result = await within(prompt, 5000, "the aborted prompt");
    expect(result.stopReason).toBe("aborted");
    expect(next.coordinationState.requestPermits).toEqual({ limit: 1, inUse: 0, waiting: 0 });
  });
});
