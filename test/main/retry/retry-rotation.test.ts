/**
 * The R4 usage-limit step with a rotating auth storage, on the pure controller: the storage's
 * `{ switched, retryAfterMs }` answer, 429 rate limits routed to a key-serving storage, and
 * fallback models. Injected sleep and clock; no worker.
 */
import { describe, expect, it } from "vitest";
import type { AuthStorage, UsageLimitInfo } from "../../../src/main/auth/auth-storage.js";
import { type RetryActions, RetryController, type RetryMessage } from "../../../src/main/retry/retry-controller.js";
import type { RetryEvent } from "../../../src/shared/events.js";
import { DEFAULT_SETTINGS, parseSettings, type RetrySettings } from "../../../src/shared/settings/settings.js";
import { ManualSleep } from "../../fixtures/in-process-host.js";

const NOW = Date.parse("2026-11-30T00:00:00Z");

function failure(errorMessage: string): RetryMessage {
  return { role: "assistant", provider: "p", stopReason: "error", errorMessage };
}

function harness(
  storage: AuthStorage | undefined,
  overrides: Partial<RetrySettings> = {},
  fallback?: () => Promise<string | undefined>,
) {
  const settings: RetrySettings = { ...DEFAULT_SETTINGS.retry, ...overrides };
  const clock = new ManualSleep();
  const events: RetryEvent[] = [];
  const controller = new RetryController({
    sessionId: "s1",
    settings: () => settings,
    sleep: clock.sleep,
    now: () => NOW,
    random: () => 0.5,
    isOverflow: () => false,
    emit: (event) => events.push(event),
    ...(storage === undefined ? {} : { authStorage: storage }),
  });
  const actions: RetryActions = {
    removeFailedMessage: async () => {},
    restoreFailedMessage: async () => {},
    continueRun: async () => {},
    ...(fallback === undefined ? {} : { switchToFallback: fallback }),
  };
  /** Feeds one failed run through decide + execute; resolves when the retry is posted or the chain ended. */
  const fail = (text: string): Promise<void> => {
    const decision = controller.onAgentEnd(failure(text));
    return decision.kind === "retry" ? controller.execute(decision, actions) : Promise.resolve();
  };
  return { clock, events, fail };
}

function recording(answer: ReturnType<AuthStorage["markUsageLimitReached"]>, servesKeys = true) {
  const reports: UsageLimitInfo[] = [];
  const storage: AuthStorage = {
    markUsageLimitReached: (_provider, _session, info) => {
      reports.push(info);
      return answer;
    },
    ...(servesKeys ? { apiKeyFor: () => "k" } : {}),
  };
  return { storage, reports };
}

describe("R4 with a rotating auth storage", () => {
  it("R4: { switched: true } makes the retry's delay 0", async () => {
    const { storage } = recording({ switched: true });
    const { clock, events, fail } = harness(storage);
    const running = fail("usage limit reached");
    await clock.waitForSleep();
    expect(clock.delays).toEqual([0]);
    await clock.release();
    await running;
    expect(events[0]).toMatchObject({ type: "auto_retry_start", delayMs: 0, credentialRotated: true });
    expect(events[0]).not.toHaveProperty("model");
  });

  it("R4: no free key: the retry waits until the first frees, even with respectRetryAfter off", async () => {
    const { storage } = recording({ switched: false, retryAfterMs: 45_000 });
    const { clock, events, fail } = harness(storage, { respectRetryAfter: false });
    const running = fail("usage limit reached");
    await clock.waitForSleep();
    expect(clock.delays).toEqual([45_000]);
    await clock.release();
    await running;
    expect(events[0]).toMatchObject({ type: "auto_retry_start", delayMs: 45_000 });
    expect(events[0]).not.toHaveProperty("credentialRotated");
  });

  it("R4: no free key and a wait above retry.maxDelayMs: the chain fails naming when the first key frees", async () => {
    const { storage } = recording({ switched: false, retryAfterMs: 30 * 60_000 });
    const { clock, events, fail } = harness(storage, { maxDelayMs: 60_000 });
    await fail("usage limit reached");
    expect(clock.delays).toEqual([]);
    expect(events.at(-1)).toEqual({
      type: "auto_retry_end",
      success: false,
      attempt: 0,
      reason: "over_cap",
      finalError:
        'Every key of provider "p" is blocked; the first frees at 2026-11-30T00:30:00.000Z (in 1800s), above retry.maxDelayMs (60s): usage limit reached',
    });
  });

  it("R4: a plain 429 rate limit goes to a storage that serves keys, as a rate_limit", async () => {
    const { storage, reports } = recording({ switched: true });
    const { clock, fail } = harness(storage);
    const running = fail("429 Too Many Requests: rate limit exceeded");
    await clock.waitForSleep();
    await clock.release();
    await running;
    expect(reports).toEqual([{ kind: "rate_limit" }]);
    expect(clock.delays).toEqual([0]);
  });

  it("R4: a 429 is not reported to a storage without keys, and 5xx or overloads never are", async () => {
    const withoutKeys = recording(true, false);
    const first = harness(withoutKeys.storage);
    const running = first.fail("429 Too Many Requests");
    await first.clock.waitForSleep();
    await first.clock.release();
    await running;
    expect(withoutKeys.reports).toEqual([]);
    expect(first.clock.delays).toEqual([2000]);
    const withKeys = recording(true);
    for (const text of ["503 Service Unavailable", "overloaded_error: Overloaded"]) {
      const { clock, fail } = harness(withKeys.storage);
      const retry = fail(text);
      await clock.waitForSleep();
      await clock.release();
      await retry;
    }
    expect(withKeys.reports).toEqual([]);
  });

  it("R4: a boolean answer is still accepted", async () => {
    const { storage } = recording(Promise.resolve(true));
    const { clock, fail } = harness(storage);
    const running = fail("usage limit reached");
    await clock.waitForSleep();
    await clock.release();
    await running;
    expect(clock.delays).toEqual([0]);
  });

  it("R4: every key blocked and a fallback model usable: the retry runs on it at once and auto_retry_start names it", async () => {
    const { storage } = recording({ switched: false, retryAfterMs: 30 * 60_000 });
    const { clock, events, fail } = harness(storage, { maxDelayMs: 60_000 }, async () => "backup/model-2");
    const running = fail("usage limit reached");
    await clock.waitForSleep();
    await clock.release();
    await running;
    expect(clock.delays).toEqual([0]);
    expect(events[0]).toMatchObject({ type: "auto_retry_start", delayMs: 0, model: "backup/model-2" });
    expect(events[0]).not.toHaveProperty("credentialRotated");
  });

  it('R4: retry.fallbackModels takes "provider/id" entries and refuses anything else, naming the key', () => {
    expect(
      parseSettings({ retry: { fallbackModels: ["openai/gpt-4o", "local/a/b"] } }, "settings.json").retry
        .fallbackModels,
    ).toEqual(["openai/gpt-4o", "local/a/b"]);
    expect(() => parseSettings({ retry: { fallbackModels: ["gpt-4o"] } }, "settings.json")).toThrow(
      /retry\.fallbackModels\.0.*provider\/id/,
    );
  });
});
