/**
 * SPEC B8 through the retry controller: the host's retry budget and provider gate as a session's
 * chains see them (SessionCoordination over one HostCoordination), with injected clocks and sleeps;
 * and the permit bookkeeping of the host's workers. No worker, no real time.
 */
import { describe, expect, it } from "vitest";
import { HostCoordination } from "../../../src/main/coordination/host-coordination.js";
import { SessionCoordination } from "../../../src/main/coordination/session-coordination.js";
import { type RetryActions, RetryController, type RetryMessage } from "../../../src/main/retry/retry-controller.js";
import type { RetryEvent, SessionEvent } from "../../../src/shared/events.js";
import { attachRequestFailure, type RequestFailure } from "../../../src/shared/failures/request-failure.js";
import { DEFAULT_SETTINGS, type RetrySettings } from "../../../src/shared/settings/settings.js";
import { within } from "../../fixtures/bounded.js";
import { ManualSleep } from "../../fixtures/in-process-host.js";

const NOW = Date.parse("2026-12-01T00:00:00Z");

function failure(errorMessage: string, request?: RequestFailure): RetryMessage {
  const message: RetryMessage = { role: "assistant", provider: "p", stopReason: "error", errorMessage };
  if (request !== undefined) attachRequestFailure(message, request, NOW);
  return message;
}

/** One host's coordination on a manual clock; its gate sleeps are `gateSleep`'s. */
function host() {
  const clock = { now: 0 };
  const gateSleep = new ManualSleep();
  const coordination = new HostCoordination({ now: () => clock.now, sleep: gateSleep.sleep });
  return { clock, gateSleep, coordination };
}

/** A session's controller on `shared`, with its own retry sleep and events. */
function session(shared: ReturnType<typeof host>, overrides: Partial<RetrySettings>, apiKey = "key-1") {
  const settings: RetrySettings = { ...DEFAULT_SETTINGS.retry, baseDelayMs: 10, ...overrides };
  const sleep = new ManualSleep();
  const events: (RetryEvent | SessionEvent)[] = [];
  const log: string[] = [];
  const coordination = new SessionCoordination(shared.coordination, {
    provider: () => "p",
    baseUrl: () => "http://127.0.0.1:1/v1",
    apiKey: () => apiKey,
    settings: () => settings,
    emit: (event) => events.push(event),
  });
  const controller = new RetryController({
    sessionId: "s",
    settings: () => settings,
    sleep: sleep.sleep,
    now: () => NOW,
    random: () => 0.5,
    isOverflow: () => false,
    emit: (event) => events.push(event),
    coordination,
  });
  const actions: RetryActions = {
    removeFailedMessage: async () => {},
    restoreFailedMessage: async () => {},
    continueRun: async () => {
      log.push("continue");
    },
  };
  const fail = (message: RetryMessage) => {
    const decision = controller.onAgentEnd(message);
    return { decision, running: decision.kind === "retry" ? controller.execute(decision, actions) : Promise.resolve() };
  };
  return { controller, coordination, sleep, events, log, fail };
}

describe("retry chains under the host's coordination", () => {
  it("B8 R4: a spent retry budget ends the chain with reason budget_exhausted, and finalError says so", async () => {
    const shared = host();
    // A floor of one retry per 10 s window and no ratio: the second retry is over budget.
    const a = session(shared, { budget: { ratio: 0, minPerSecond: 0.1, windowMs: 10_000 } });
    a.coordination.depositFirstAttempt();
    const first = a.fail(failure("503 Service Unavailable"));
    expect(first.decision.kind).toBe("retry");
    await a.sleep.release();
    await first.running;
    const second = a.fail(failure("503 Service Unavailable"));
    expect(second.decision).toEqual({ kind: "none", failure: "budget_exhausted" });
    const end = a.events.at(-1);
    expect(end).toMatchObject({ type: "auto_retry_end", success: false, attempt: 1, reason: "budget_exhausted" });
    expect((end as { finalError: string }).finalError).toMatch(
      /^Retry budget exhausted for provider "p" \(retry\.budget: at most 0% of first attempts plus 0\.1\/s over 10 s\); not retrying: 503 Service Unavailable$/,
    );
    expect(a.coordination.state().retryBudget).toEqual({ deposits: 1, withdrawals: 1, available: 0 });
  });

  it("B8: the budget is the host's: another session of the provider finds it spent", () => {
    const shared = host();
    const budget = { ratio: 0, minPerSecond: 0.1, windowMs: 10_000 };
    const a = session(shared, { budget });
    const b = session(shared, { budget });
    expect(a.fail(failure("503")).decision.kind).toBe("retry");
    expect(b.fail(failure("503")).decision).toEqual({ kind: "none", failure: "budget_exhausted" });
  });

  it("B8 R8: a 429 with a retry hint closes the gate for the host; another session's retry waits there and abortRetry ends the wait", async () => {
    const shared = host();
    const a = session(shared, { coordinate: true });
    const b = session(shared, { coordinate: true });
    const limited = failure("429 Too Many Requests", { status: 429, headers: { "retry-after-ms": "5000" } });
    const chainA = a.fail(limited);
    expect(chainA.decision.kind).toBe("retry");
    expect(b.coordination.gateClosed).toBe(true);
    expect(b.coordination.state().providerGate).toEqual({ closed: true, reopensInMs: 5000 });

    const chainB = b.fail(failure("503 Service Unavailable"));
    await b.sleep.release();
    // Its backoff is over, but the gate holds it: the event says for how long.
    await within(shared.gateSleep.waitForSleep(), 5000, "the retry to wait at the gate");
    expect(b.events.filter((e) => e.type === "provider_gate_wait")).toEqual([
      { type: "provider_gate_wait", provider: "p", before: "retry", waitMs: 5000 },
    ]);
    expect(b.log).toEqual([]);
    b.controller.abortRetry();
    await chainB.running;
    expect(b.log).toEqual([]);
    expect(b.events.at(-1)).toMatchObject({
      type: "auto_retry_end",
      reason: "cancelled",
      finalError: "Retry cancelled",
    });
    expect(shared.gateSleep.pending).toBe(0);

    // When the gate's time has passed, a waiting retry goes on.
    await a.sleep.release();
    await shared.gateSleep.waitForSleep();
    shared.clock.now = 5000;
    await shared.gateSleep.release();
    await chainA.running;
    expect(a.log).toEqual(["continue"]);
  });

  it("B8: a 503, a 429 without a hint, another key, or coordinate off leave the gate open", () => {
    const shared = host();
    const other = session(shared, { coordinate: true }, "key-2");
    const a = session(shared, { coordinate: true });
    a.fail(failure("503", { status: 503, headers: { "retry-after": "5" } }));
    a.controller.abortRetry();
    a.fail(failure("429", { status: 429 }));
    a.controller.abortRetry();
    expect(a.coordination.gateClosed).toBe(false);
    const off = session(shared, { coordinate: false });
    off.fail(failure("429", { status: 429, headers: { "retry-after": "5" } }));
    expect(a.coordination.gateClosed).toBe(false);
    a.fail(failure("529", { status: 529, headers: { "retry-after": "5" } }));
    expect(a.coordination.gateClosed).toBe(true);
    expect(other.coordination.gateClosed).toBe(false);
  });
});

describe("a budget that answers later (a fleet's)", () => {
  /** A controller whose budget answers each withdrawal with a promise the test settles. */
  function laterBudget() {
    const settings: RetrySettings = { ...DEFAULT_SETTINGS.retry, baseDelayMs: 10 };
    const answers: ((refusal: string | undefined) => void)[] = [];
    const sleep = new ManualSleep();
    const events: RetryEvent[] = [];
    const log: string[] = [];
    const controller = new RetryController({
      sessionId: "s",
      settings: () => settings,
      sleep: sleep.sleep,
      now: () => NOW,
      random: () => 0.5,
      isOverflow: () => false,
      emit: (event) => events.push(event),
      coordination: {
        withdrawRetry: () => new Promise<string | undefined>((resolve) => answers.push(resolve)),
        closeGate: () => {},
        waitAtGate: async () => {},
      },
    });
    const actions: RetryActions = {
      removeFailedMessage: async () => {
        log.push("remove");
      },
      restoreFailedMessage: async () => {},
      continueRun: async () => {
        log.push("continue");
      },
    };
    return { controller, answers, sleep, events, log, actions };
  }

  it("B8 R8: a refusal ends the chain in execute, after the auto_retry_start its agent_end promised, and nothing is sent", async () => {
    const { controller, answers, events, log, actions } = laterBudget();
    const decision = controller.onAgentEnd(failure("503 Service Unavailable"));
    expect(decision.kind).toBe("retry");
    if (decision.kind !== "retry") return;
    const running = controller.execute(decision, actions);
    answers[0]?.('Retry budget exhausted for provider "p" across fleet "f" (…)');
    await running;
    expect(events.map((event) => event.type)).toEqual(["auto_retry_start", "auto_retry_end"]);
    expect(events[1]).toMatchObject({ success: false, attempt: 0, reason: "budget_exhausted" });
    expect((events[1] as { finalError: string }).finalError).toMatch(
      /across fleet "f".*; not retrying: 503 Service Unavailable$/,
    );
    expect(log).toEqual([]);
    expect(controller.isRetrying).toBe(false);
  });

  it("B8: an allowance lets the retry go on as with a host's budget", async () => {
    const { controller, answers, sleep, events, log, actions } = laterBudget();
    const decision = controller.onAgentEnd(failure("503 Service Unavailable"));
    if (decision.kind !== "retry") throw new Error("expected a retry");
    const running = controller.execute(decision, actions);
    answers[0]?.(undefined);
    await within(sleep.waitForSleep(), 5000, "the backoff");
    await sleep.release();
    await running;
    expect(events.map((event) => event.type)).toEqual(["auto_retry_start"]);
    expect(log).toEqual(["remove", "continue"]);
  });
});

describe("the host's request permits", () => {
  it("B8: a worker's permits are released when it dies, and a request cancelled while it waits never holds one", async () => {
    const { coordination } = host();
    const semaphore = coordination.semaphore("p", 1);
    const dead = {};
    const alive = {};
    expect(await coordination.requestPermit(dead, 1, semaphore, undefined)).toBe(true);
    const waiting = coordination.requestPermit(alive, 1, semaphore, undefined);
    const cancelled = coordination.requestPermit(alive, 2, semaphore, undefined);
    coordination.releasePermit(alive, 2);
    expect(await cancelled).toBe(false);
    coordination.releaseOwner(dead);
    expect(await waiting).toBe(true);
    expect(coordination.permitsHeld).toBe(1);
    coordination.releasePermit(alive, 1);
    coordination.releasePermit(alive, 1);
    expect(semaphore.inUse).toBe(0);
    expect(coordination.permitsHeld).toBe(0);
  });
});
