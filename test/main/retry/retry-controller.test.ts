/**
 * The retry controller as a pure unit: injected sleep, clock and randomness; no worker.
 */
import { describe, expect, it } from "vitest";
import type { AuthStorage } from "../../../src/main/auth/auth-storage.js";
import { type RetryActions, RetryController, type RetryMessage } from "../../../src/main/retry/retry-controller.js";
import type { RetryEvent } from "../../../src/shared/events.js";
import { DEFAULT_SETTINGS, type RetrySettings } from "../../../src/shared/settings/settings.js";
import { ManualSleep } from "../../fixtures/in-process-host.js";

function failure(errorMessage: string): RetryMessage {
  return { role: "assistant", provider: "p", stopReason: "error", errorMessage };
}
const success: RetryMessage = { role: "assistant", provider: "p", stopReason: "stop" };

function harness(overrides: Partial<RetrySettings> = {}, extra: { random?: number; authStorage?: AuthStorage } = {}) {
  const settings: RetrySettings = { ...DEFAULT_SETTINGS.retry, ...overrides };
  const clock = new ManualSleep();
  const events: RetryEvent[] = [];
  const log: string[] = [];
  const controller = new RetryController({
    sessionId: "s1",
    settings: () => settings,
    sleep: clock.sleep,
    now: () => Date.parse("2026-11-30T00:00:00Z"),
    random: () => extra.random ?? 0.5,
    isOverflow: (m) => /too long/.test(m.errorMessage ?? ""),
    emit: (event) => events.push(event),
    ...(extra.authStorage === undefined ? {} : { authStorage: extra.authStorage }),
  });
  const actions: RetryActions = {
    removeFailedMessage: async () => {
      log.push("remove");
    },
    restoreFailedMessage: async () => {
      log.push("restore");
    },
    continueRun: async () => {
      log.push("continue");
    },
  };
  /** Feeds one failed run through decide + execute; returns the decision. */
  const fail = async (text: string) => {
    const decision = controller.onAgentEnd(failure(text));
    if (decision.kind === "retry") {
      const running = controller.execute(decision, actions);
      return { decision, running };
    }
    return { decision, running: Promise.resolve() };
  };
  return { controller, clock, events, log, settings, actions, fail };
}

describe("RetryController", () => {
  it("R6 R7: delays double from baseDelayMs and attempts are 1-based", async () => {
    const { controller, clock, events, fail } = harness();
    for (let i = 0; i < 3; i++) {
      const { running } = await fail("503 Service Unavailable");
      await clock.release();
      await running;
      expect(controller.attempt).toBe(i + 1);
    }
    expect(clock.delays).toEqual([2000, 4000, 8000]);
    expect(events.map((e) => (e.type === "auto_retry_start" ? e.attempt : -1))).toEqual([1, 2, 3]);
    const { decision } = await fail("503 Service Unavailable");
    expect(decision).toEqual({ kind: "none", failure: "exhausted" });
    expect(events.at(-1)).toEqual({
      type: "auto_retry_end",
      success: false,
      attempt: 3,
      reason: "exhausted",
      finalError: "503 Service Unavailable",
    });
    expect(controller.attempt).toBe(0);
    expect(controller.isRetrying).toBe(false);
  });

  it("R4: the flow is start event, remove, sleep, continue", async () => {
    const { clock, events, log, fail } = harness();
    const { running } = await fail("overloaded");
    await clock.waitForSleep();
    expect(events).toEqual([
      { type: "auto_retry_start", attempt: 1, maxAttempts: 3, delayMs: 2000, errorMessage: "overloaded" },
    ]);
    expect(log).toEqual(["remove"]);
    await clock.release();
    await running;
    expect(log).toEqual(["remove", "continue"]);
  });

  it("R5: the first successful message after retries began ends the chain with success", async () => {
    const { controller, clock, events, fail } = harness();
    const { running } = await fail("503");
    await clock.release();
    await running;
    const waiting = controller.waitForChain();
    controller.onMessageEnd(success);
    await waiting;
    expect(events.at(-1)).toEqual({ type: "auto_retry_end", success: true, attempt: 1, reason: "success" });
    expect(controller.isRetrying).toBe(false);
  });

  it("B3: an aborted message never counts as a retry success", async () => {
    const { controller, clock, events, fail } = harness();
    const { running } = await fail("503");
    await clock.release();
    await running;
    controller.onMessageEnd({ role: "assistant", provider: "p", stopReason: "aborted" });
    expect(controller.isRetrying).toBe(true);
    controller.onAgentEnd({
      role: "assistant",
      provider: "p",
      stopReason: "aborted",
      errorMessage: "Request was aborted",
    });
    expect(events.at(-1)).toEqual({
      type: "auto_retry_end",
      success: false,
      attempt: 1,
      reason: "non_retryable",
      finalError: "Request was aborted",
    });
  });

  it("R8: abortRetry() in the sleep emits 'Retry cancelled', restores the message and clears the timer", async () => {
    const { controller, clock, events, log, fail } = harness();
    const { running } = await fail("503");
    await clock.waitForSleep();
    const waiting = controller.waitForChain();
    controller.abortRetry();
    await waiting;
    await running;
    expect(events.at(-1)).toEqual({
      type: "auto_retry_end",
      success: false,
      attempt: 1,
      reason: "cancelled",
      finalError: "Retry cancelled",
    });
    expect(clock.pending).toBe(0);
    expect(log).toEqual(["remove", "restore"]);
    expect(controller.attempt).toBe(0);
  });

  it("B3: abortRetry() with a retried run in flight makes that run's failure final", async () => {
    const { controller, clock, events, fail } = harness();
    const { running } = await fail("503");
    await clock.release();
    await running;
    controller.abortRetry();
    expect(events.at(-1)).toMatchObject({ type: "auto_retry_end", finalError: "Retry cancelled" });
    const count = events.length;
    expect(controller.onAgentEnd(failure("503"))).toEqual({ kind: "none", failure: "cancelled" });
    expect(events).toHaveLength(count);
    // The next failure after that starts a fresh chain (R15).
    expect(controller.onAgentEnd(failure("503"))).toMatchObject({ kind: "retry", attempt: 1 });
  });

  it("R8: abortRetry() when idle does nothing", () => {
    const { controller, events } = harness();
    controller.abortRetry();
    expect(events).toEqual([]);
  });

  it("R4 R15: disabled retry, context overflow and non-retryable errors never start a chain", () => {
    const { controller, events, settings } = harness();
    expect(controller.onAgentEnd(failure("400 Bad Request"))).toEqual({ kind: "none", failure: "fatal" });
    expect(controller.onAgentEnd(failure("prompt is too long: 5 > 4"))).toEqual({ kind: "none", failure: "overflow" });
    settings.enabled = false;
    expect(controller.onAgentEnd(failure("503"))).toEqual({ kind: "none", failure: "disabled" });
    expect(events).toEqual([]);
  });

  it("B3: a non-retryable failure inside a chain ends it with that error", async () => {
    const { controller, clock, events, fail } = harness();
    const { running } = await fail("503");
    await clock.release();
    await running;
    controller.onAgentEnd(failure("401 Unauthorized"));
    expect(events.at(-1)).toEqual({
      type: "auto_retry_end",
      success: false,
      attempt: 1,
      reason: "non_retryable",
      finalError: "401 Unauthorized",
    });
    expect(controller.isRetrying).toBe(false);
  });

  it("R7: maxRetries 0 ends the chain at once, reporting 0 attempts", () => {
    const { controller, events } = harness({ maxRetries: 0 });
    expect(controller.onAgentEnd(failure("503"))).toEqual({ kind: "none", failure: "exhausted" });
    expect(events).toEqual([
      { type: "auto_retry_end", success: false, attempt: 0, reason: "exhausted", finalError: "503" },
    ]);
  });

  it("R4: usage limits go to the auth storage with the parsed hint; a switch makes the delay 0", async () => {
    const seen: unknown[] = [];
    const storage: AuthStorage = {
      markUsageLimitReached: (provider, sessionId, info) => {
        seen.push({ provider, sessionId, info });
        return true;
      },
    };
    const { clock, events, fail } = harness({}, { authStorage: storage });
    const { running } = await fail("You hit your usage limit. retry-after-ms: 1500");
    await clock.release();
    await running;
    expect(seen).toEqual([{ provider: "p", sessionId: "s1", info: { retryAfterMs: 1500 } }]);
    expect(clock.delays).toEqual([0]);
    expect(events[0]).toMatchObject({ type: "auto_retry_start", delayMs: 0 });
  });

  it("R4: an auth storage that throws counts as no switch and the chain goes on", async () => {
    const storage: AuthStorage = {
      markUsageLimitReached: () => {
        throw new Error("storage down");
      },
    };
    const { clock, fail } = harness({}, { authStorage: storage });
    const { running } = await fail("usage limit reached");
    await clock.release();
    await running;
    expect(clock.delays).toEqual([2000]);
  });

  it("R8 B3: abortRetry() while the auth storage is answering emits the promised start, then ends the chain, and never sleeps", async () => {
    let answer: (value: boolean) => void = () => {};
    const storage: AuthStorage = {
      markUsageLimitReached: () =>
        new Promise<boolean>((resolve) => {
          answer = resolve;
        }),
    };
    const { controller, clock, events, fail } = harness({}, { authStorage: storage });
    const { running } = await fail("usage limit");
    await Promise.resolve();
    controller.abortRetry();
    answer(false);
    await running;
    expect(events).toEqual([
      { type: "auto_retry_start", attempt: 1, maxAttempts: 3, delayMs: 2000, errorMessage: "usage limit" },
      { type: "auto_retry_end", success: false, attempt: 1, reason: "cancelled", finalError: "Retry cancelled" },
    ]);
    expect(clock.delays).toEqual([]);
  });

  it("B6: with everything off, a server hint does not change the backoff", () => {
    const { controller } = harness();
    expect(controller.onAgentEnd(failure("429 Too Many Requests retry-after: 60"))).toMatchObject({ delayMs: 2000 });
  });

  it("B6: respectRetryAfter waits for the larger of backoff and hint", () => {
    const { controller } = harness({ respectRetryAfter: true });
    expect(controller.onAgentEnd(failure("429 retry-after: 60"))).toMatchObject({ delayMs: 60_000 });
    const small = harness({ respectRetryAfter: true });
    expect(small.controller.onAgentEnd(failure("429 retry-after-ms: 10"))).toMatchObject({ delayMs: 2000 });
  });

  it("B6: a hint above maxDelayMs fails the chain at once, saying what the server asked for", () => {
    const { controller, events } = harness({ respectRetryAfter: true, maxDelayMs: 30_000 });
    expect(controller.onAgentEnd(failure("429 retry-after: 120"))).toEqual({ kind: "none", failure: "over_cap" });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: "auto_retry_end", success: false, attempt: 0, reason: "over_cap" });
    expect((events[0] as { finalError: string }).finalError).toMatch(
      /retry after 120s, above retry.maxDelayMs \(30s\)/,
    );
  });

  it("B6: maxDelayMs caps the backoff", async () => {
    const { clock, fail } = harness({ maxDelayMs: 3000 });
    for (let i = 0; i < 3; i++) {
      const { running } = await fail("503");
      await clock.release();
      await running;
    }
    expect(clock.delays).toEqual([2000, 3000, 3000]);
  });

  it("B6: full jitter scales the backoff by the random draw; equal jitter keeps half", () => {
    const full = harness({ jitter: "full" }, { random: 0.25 });
    expect(full.controller.onAgentEnd(failure("503"))).toMatchObject({ delayMs: 500 });
    const equal = harness({ jitter: "equal" }, { random: 0.25 });
    expect(equal.controller.onAgentEnd(failure("503"))).toMatchObject({ delayMs: 1250 });
  });

  it("R11: waitForChain() resolves at once when idle and when the chain ends", async () => {
    const { controller, clock, fail } = harness();
    await controller.waitForChain();
    const { running } = await fail("503");
    const waiting = controller.waitForChain();
    let resolved = false;
    void waiting.then(() => {
      resolved = true;
    });
    await clock.waitForSleep();
    expect(resolved).toBe(false);
    controller.abortRetry();
    await waiting;
    await running;
    expect(resolved).toBe(true);
  });

  it("dispose() ends a live chain with the given error and stops the sleep", async () => {
    const { controller, clock, events, fail } = harness();
    const { running } = await fail("503");
    await clock.waitForSleep();
    controller.dispose("Worker exited");
    await running;
    expect(events.at(-1)).toEqual({
      type: "auto_retry_end",
      success: false,
      attempt: 1,
      reason: "cancelled",
      finalError: "Worker exited",
    });
    expect(clock.pending).toBe(0);
  });

  it.each([2000, 0])(
    "regression: with baseDelayMs %i the delay of a very long chain stays a finite number (capped at MAX_SAFE_INTEGER), never Infinity or NaN",
    (baseDelayMs) => {
      const { controller } = harness({ baseDelayMs, maxRetries: 2000 });
      const delays: number[] = [];
      for (let attempt = 1; attempt <= 1100; attempt++) {
        const decision = controller.onAgentEnd(failure("503 Service Unavailable"));
        if (decision.kind !== "retry") throw new Error(`attempt ${attempt} was not retried`);
        delays.push(decision.delayMs);
      }
      expect(delays.every((delay) => Number.isSafeInteger(delay) && delay >= 0)).toBe(true);
      expect(delays.at(-1)).toBe(baseDelayMs === 0 ? 0 : Number.MAX_SAFE_INTEGER);
      expect(delays[21]).toBe(baseDelayMs * 2 ** 21);
    },
  );
});
