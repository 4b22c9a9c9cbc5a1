/**
 * Property: whatever the interleaving of model outcomes (every failure class, successes, thrown
 * failures, stalls) and user actions (prompts, abortRetry, abort, toggles, sleep releases), the
 * retry controller inside a session keeps its invariants. Driven through a full in-process
 * session so "prompt() always settles" is checked on the real thing.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { SessionEvent } from "../../../src/shared/events.js";
import { inProcessHost } from "../../fixtures/in-process-host.js";
import { type Step, scriptedModel } from "../../fixtures/scripted-provider.js";

const outcome = fc.constantFrom<Step>(
  { text: "fine" },
  { error: "503 Service Unavailable" },
  { error: "429 Too Many Requests" },
  { error: "usage limit reached" },
  { error: "prompt is too long: 9 tokens > 8 maximum" },
  { error: "400 Bad Request" },
  { throws: "fetch failed" },
  { throws: "provider bug" },
  { stall: true },
);

type Action =
  | { kind: "prompt"; queue: boolean }
  | { kind: "release" }
  | { kind: "abortRetry" }
  | { kind: "abort" }
  | { kind: "toggle"; enabled: boolean }
  | { kind: "tick" }
  /** Arms a one-shot cancel inside the next `agent_end {willRetry: true}` listener call. */
  | { kind: "cancelAtAgentEnd"; how: "abortRetry" | "abort" };

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("prompt" as const), queue: fc.boolean() }) },
  { weight: 4, arbitrary: fc.constant({ kind: "release" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "abortRetry" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "abort" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("toggle" as const), enabled: fc.boolean() }) },
  { weight: 4, arbitrary: fc.constant({ kind: "tick" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("cancelAtAgentEnd" as const),
      how: fc.constantFrom("abortRetry" as const, "abort" as const),
    }),
  },
);

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * R14: `agent_end {willRetry: true}` is always followed by that attempt's `auto_retry_start` before
 * anything else of the chain, even when a listener cancels in between.
 */
function checkPromisedStarts(events: readonly SessionEvent[]): void {
  let promised = false;
  for (const event of events) {
    if (promised) {
      expect(event.type, "the event after agent_end {willRetry: true}").toBe("auto_retry_start");
      promised = false;
    }
    if (event.type === "agent_end" && event.willRetry) promised = true;
  }
  expect(promised).toBe(false);
}

/** Checks that retry events form well-nested chains: (start#1 start#2… end)*. */
function checkChains(events: readonly SessionEvent[]): void {
  let open = false;
  let lastAttempt = 0;
  for (const event of events) {
    if (event.type === "auto_retry_start") {
      if (!open) {
        expect(event.attempt).toBe(1);
        open = true;
      } else {
        expect(event.attempt).toBe(lastAttempt + 1);
      }
      lastAttempt = event.attempt;
    } else if (event.type === "auto_retry_end") {
      // Every end closes exactly one chain that had started (default settings: maxRetries 3).
      expect(open).toBe(true);
      open = false;
    }
  }
  expect(open).toBe(false);
}

function noTwoUsersInARow(messages: readonly AgentMessage[]): boolean {
  return messages.every((m, i) => i === 0 || !(m.role === "user" && messages[i - 1]?.role === "user"));
}

describe("retry controller invariants under random interleavings", () => {
  it("R3 R5 R8 R11 R14 B3: one live chain at most, one end per chain, no retry after a cancel, every prompt settles, idle means attempt 0, no timer left", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(outcome, { minLength: 1, maxLength: 12 }),
        fc.array(action, { maxLength: 30 }),
        async (outcomes, actions) => {
          // After the script, the model answers, so every chain can end.
          const scripted = scriptedModel([...outcomes, { text: "final" }]);
          const { host, clock } = inProcessHost();
          try {
            const session = await host.createSession({ model: scripted.model });
            const events: SessionEvent[] = [];
            const violations: string[] = [];
            // B3: once a chain is cancelled, nothing of that prompt is retried again.
            let cancelled = false;
            let cancelAtAgentEnd: "abortRetry" | "abort" | undefined;
            let awaitingPromisedStart = false;
            session.subscribe((event) => {
              events.push(event);
              // The start an agent_end {willRetry: true} promised comes even if a cancel came first.
              const promised = event.type === "auto_retry_start" && awaitingPromisedStart;
              awaitingPromisedStart = event.type === "agent_end" && event.willRetry;
              if (event.type === "auto_retry_start" && cancelled && !promised) {
                violations.push("retried after abortRetry/abort");
              }
              // Cancels re-enter this listener with the events they emit (the promised start first).
              if (event.type === "agent_end" && event.willRetry && cancelAtAgentEnd !== undefined) {
                cancelled = true;
                if (cancelAtAgentEnd === "abort") void session.abort();
                else session.abortRetry();
                cancelAtAgentEnd = undefined;
              }
              if (event.type === "agent_settled") cancelled = false;
              if (event.type === "agent_settled" && (session.isRetrying || session.retryAttempt !== 0)) {
                violations.push("settled while a chain was live");
              }
              if (event.type === "auto_retry_end" && (session.isRetrying || session.retryAttempt !== 0)) {
                violations.push("chain state not reset at auto_retry_end");
              }
            });
            const prompts: Promise<unknown>[] = [];
            let accepted = 0;
            for (const step of actions) {
              switch (step.kind) {
                case "prompt": {
                  const busy = session.isBusy;
                  const p = session.prompt("go", { queue: step.queue });
                  if (busy && !step.queue) {
                    await expect(p).rejects.toMatchObject({ code: "ERR_SESSION_BUSY" });
                  } else {
                    accepted++;
                    prompts.push(p);
                  }
                  break;
                }
                case "release":
                  if (clock.pending > 0) await clock.release();
                  break;
                case "abortRetry":
                  if (session.isRetrying) cancelled = true;
                  session.abortRetry();
                  break;
                case "abort":
                  if (session.isRetrying) cancelled = true;
                  await session.abort();
                  break;
                case "toggle":
                  session.setAutoRetryEnabled(step.enabled);
                  break;
                case "tick":
                  await tick();
                  break;
                case "cancelAtAgentEnd":
                  cancelAtAgentEnd = step.how;
                  break;
              }
            }
            // Drain: release sleeps and abort stalls until every prompt has settled (bounded).
            let settled = false;
            void Promise.allSettled(prompts).then(() => {
              settled = true;
            });
            for (let i = 0; i < 400 && !settled; i++) {
              if (clock.pending > 0) await clock.release();
              else if (i % 10 === 9) {
                if (session.isRetrying) cancelled = true;
                await session.abort();
              }
              await tick();
            }
            expect(settled).toBe(true);
            expect(violations).toEqual([]);
            checkChains(events);
            checkPromisedStarts(events);
            expect(events.filter((e) => e.type === "agent_settled")).toHaveLength(accepted);
            expect(session.retryAttempt).toBe(0);
            expect(session.isRetrying).toBe(false);
            expect(session.isBusy).toBe(false);
            expect(clock.pending).toBe(0);
            expect(noTwoUsersInARow(session.messages)).toBe(true);
          } finally {
            await host.close();
            scripted.unregister();
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
