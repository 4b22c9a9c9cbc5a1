/**
 * SPEC R10 without a terminal: the loader and failure strings, the countdown arithmetic, and the
 * Esc-handler swap and restore, driven by sequences of SessionEvents and a fake clock.
 */
import type { StopReason } from "@mariozechner/pi-ai";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  abortedText,
  msUntilNextSecond,
  retryFailedText,
  retryLoaderText,
  secondsLeft,
} from "../../../src/main/tui/retry-loader.js";
import {
  type EscapeTarget,
  SessionUiController,
  type UiClock,
  type UiNotice,
  WORKING_TEXT,
} from "../../../src/main/tui/session-ui-controller.js";
import { summarize } from "../../../src/main/tui/transcript-view.js";
import type { SessionEvent } from "../../../src/shared/events.js";
import { assistantMessage } from "../../fixtures/messages.js";

/** A clock whose time moves only when the test says so, running due callbacks in order. */
class FakeClock implements UiClock {
  time = 0;
  #timers: { at: number; seq: number; callback: () => void }[] = [];
  #seq = 0;

  now = (): number => this.time;

  schedule = (callback: () => void, ms: number): (() => void) => {
    const timer = { at: this.time + Math.max(0, ms), seq: this.#seq++, callback };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  };

  get pending(): number {
    return this.#timers.length;
  }

  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (due === undefined) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.time = due.at;
      due.callback();
    }
    this.time = end;
  }
}

const ev = {
  agentStart: (): SessionEvent => ({ type: "agent_start" }),
  failedAttempt: (error = "503 Service Unavailable"): SessionEvent => ({
    type: "message_end",
    message: assistantMessage("error", error),
  }),
  agentEnd: (willRetry: boolean): SessionEvent => ({ type: "agent_end", messages: [], willRetry }),
  retryStart: (attempt: number, delayMs = 3000, maxAttempts = 3): SessionEvent => ({
    type: "auto_retry_start",
    attempt,
    maxAttempts,
    delayMs,
    errorMessage: "503 Service Unavailable",
  }),
  retryEnd: (success: boolean, attempt: number, finalError?: string): SessionEvent => ({
    type: "auto_retry_end",
    success,
    attempt,
    reason: success ? "success" : finalError === "Retry cancelled" ? "cancelled" : "exhausted",
    ...(finalError === undefined ? {} : { finalError }),
  }),
  answer: (): SessionEvent => ({ type: "message_end", message: assistantMessage("stop", undefined, "Mock reply.") }),
  aborted: (): SessionEvent => ({ type: "message_end", message: assistantMessage("aborted", "Request was aborted") }),
  settled: (stopReason: StopReason, retries = 0, errorMessage?: string): SessionEvent => ({
    type: "agent_settled",
    stopReason,
    retries,
    ...(errorMessage === undefined ? {} : { errorMessage }),
  }),
};

function harness() {
  const clock = new FakeClock();
  const calls: string[] = [];
  const notices: UiNotice[] = [];
  let changes = 0;
  const escapeSlot: EscapeTarget = {};
  const controller = new SessionUiController({
    actions: {
      abort: async () => {
        calls.push("abort");
      },
      abortRetry: () => {
        calls.push("abortRetry");
      },
    },
    escape: escapeSlot,
    clock,
    onChange: () => changes++,
    onNotice: (notice) => notices.push(notice),
  });
  const pressEscape = () => escapeSlot.onEscape?.();
  return { clock, calls, notices, escape: escapeSlot, controller, pressEscape, changes: () => changes };
}

/** Feeds the events of a first attempt that failed and was scheduled for retry 1 in `delayMs`. */
function failOnce(h: ReturnType<typeof harness>, delayMs = 3000): void {
  h.controller.promptStarted();
  for (const event of [ev.agentStart(), ev.failedAttempt(), ev.agentEnd(true), ev.retryStart(1, delayMs)]) {
    h.controller.handle(event);
  }
}

describe("R10 strings", () => {
  it("the loader reads Retrying (attempt/max) in Ns… (esc to cancel) with the Unicode ellipsis", () => {
    expect(retryLoaderText(1, 3, 2000)).toBe("Retrying (1/3) in 2s\u2026 (esc to cancel)");
    expect(retryLoaderText(2, 5, 4000)).toBe("Retrying (2/5) in 4s… (esc to cancel)");
    expect(retryLoaderText(1, 3, 2000)).not.toContain("...");
  });

  it("seconds round up and never go below 1 while waiting", () => {
    expect([3000, 2001, 2000, 1999, 1001, 1000, 999, 1, 0, -250].map(secondsLeft)).toEqual([
      3, 3, 2, 2, 2, 1, 1, 1, 1, 1,
    ]);
    expect(retryLoaderText(1, 3, 0)).toBe("Retrying (1/3) in 1s… (esc to cancel)");
  });

  it("the next redraw is due when the shown second changes, and none after 1s", () => {
    expect(msUntilNextSecond(3000)).toBe(1000);
    expect(msUntilNextSecond(2500)).toBe(500);
    expect(msUntilNextSecond(1001)).toBe(1);
    expect(msUntilNextSecond(1000)).toBeUndefined();
    expect(msUntilNextSecond(0)).toBeUndefined();
  });

  it("a failed chain reads Retry failed after N attempts: <finalError>", () => {
    expect(retryFailedText(1, "Retry cancelled")).toBe("Retry failed after 1 attempts: Retry cancelled");
    expect(retryFailedText(3, "503 Service Unavailable")).toBe(
      "Retry failed after 3 attempts: 503 Service Unavailable",
    );
    expect(retryFailedText(2, undefined)).toBe("Retry failed after 2 attempts: Unknown error");
  });

  it("an aborted answer reads as pi words it", () => {
    expect(abortedText(0)).toBe("Operation aborted");
    expect(abortedText(1)).toBe("Aborted after 1 retry attempt");
    expect(abortedText(2)).toBe("Aborted after 2 retry attempts");
  });

  it("tool details are one line, cut to a bounded length", () => {
    expect(summarize({ label: "probe" })).toBe('{"label":"probe"}');
    expect(summarize({ content: [{ type: "text", text: "line one\nline two" }] })).toBe("line one line two");
    expect(summarize("x".repeat(500))).toHaveLength(120);
  });
});

describe("R10 loader and Esc, driven by session events", () => {
  it("auto_retry_start shows the countdown, which counts down each second and stays at 1s", () => {
    const h = harness();
    failOnce(h);
    expect(h.controller.loader).toEqual({ kind: "retry", text: "Retrying (1/3) in 3s… (esc to cancel)" });
    expect(h.controller.status).toBe("retrying 1/3");
    const before = h.changes();
    h.clock.advance(1000);
    expect(h.controller.loader?.text).toBe("Retrying (1/3) in 2s… (esc to cancel)");
    expect(h.changes()).toBe(before + 1);
    h.clock.advance(1000);
    expect(h.controller.loader?.text).toBe("Retrying (1/3) in 1s… (esc to cancel)");
    h.clock.advance(5000);
    expect(h.controller.loader?.text).toBe("Retrying (1/3) in 1s… (esc to cancel)");
    expect(h.clock.pending).toBe(0);
  });

  it("Esc calls abortRetry() while the loader shows, and abort() before and after it", () => {
    const h = harness();
    h.controller.promptStarted();
    h.controller.handle(ev.agentStart());
    h.pressEscape();
    expect(h.calls).toEqual(["abort"]);
    h.calls.length = 0;
    for (const event of [ev.failedAttempt(), ev.agentEnd(true), ev.retryStart(1)]) h.controller.handle(event);
    h.pressEscape();
    expect(h.calls).toEqual(["abortRetry"]);
    h.calls.length = 0;
    h.controller.handle(ev.agentStart());
    h.pressEscape();
    expect(h.calls).toEqual(["abort"]);
  });

  it("auto_retry_end restores the very handler Esc had before auto_retry_start, and the loader", () => {
    const h = harness();
    h.controller.promptStarted();
    const previous = (): void => {};
    h.escape.onEscape = previous;
    for (const event of [ev.agentStart(), ev.failedAttempt(), ev.agentEnd(true), ev.retryStart(1)]) {
      h.controller.handle(event);
    }
    expect(h.escape.onEscape).not.toBe(previous);
    h.controller.handle(ev.retryEnd(false, 1, "Retry cancelled"));
    expect(h.escape.onEscape).toBe(previous);
    expect(h.controller.loader).toEqual({ kind: "working", text: WORKING_TEXT });
    expect(h.clock.pending).toBe(0);
  });

  it("Esc during the countdown cancels the chain and prints the failure line (regression: R10 Esc)", () => {
    const h = harness();
    failOnce(h);
    h.clock.advance(1000);
    h.pressEscape();
    expect(h.calls).toEqual(["abortRetry"]);
    // AgentSession answers abortRetry() with auto_retry_end, then settles the prompt.
    h.controller.handle(ev.retryEnd(false, 1, "Retry cancelled"));
    h.controller.handle(ev.settled("error", 1, "503 Service Unavailable"));
    expect(h.notices).toEqual([
      { level: "error", text: "Error: 503 Service Unavailable" },
      { level: "error", text: "Retry failed after 1 attempts: Retry cancelled" },
    ]);
    expect(h.controller.loader).toBeUndefined();
    expect(h.controller.status).toBe("aborted");
    expect(h.clock.pending).toBe(0);
  });

  it("the countdown disappears when the retried attempt starts, before auto_retry_end", () => {
    const h = harness();
    failOnce(h, 2000);
    h.clock.advance(2000);
    h.controller.handle(ev.agentStart());
    expect(h.controller.loader).toEqual({ kind: "working", text: WORKING_TEXT });
    expect(h.controller.status).toBe("streaming");
    expect(h.clock.pending).toBe(0);
    for (const event of [ev.answer(), ev.retryEnd(true, 1), ev.agentEnd(false), ev.settled("stop", 1)]) {
      h.controller.handle(event);
    }
    expect(h.notices).toEqual([{ level: "error", text: "Error: 503 Service Unavailable" }]);
    expect(h.controller.loader).toBeUndefined();
    expect(h.controller.status).toBe("idle");
  });

  it("an exhausted chain prints Retry failed after N attempts with auto_retry_end's attempt", () => {
    const h = harness();
    failOnce(h);
    for (const attempt of [2, 3]) {
      for (const event of [ev.agentStart(), ev.failedAttempt(), ev.agentEnd(true), ev.retryStart(attempt)]) {
        h.controller.handle(event);
      }
    }
    expect(h.controller.status).toBe("retrying 3/3");
    for (const event of [ev.agentStart(), ev.failedAttempt(), ev.agentEnd(false)]) h.controller.handle(event);
    h.controller.handle(ev.retryEnd(false, 3, "503 Service Unavailable"));
    h.controller.handle(ev.settled("error", 3, "503 Service Unavailable"));
    expect(h.notices.at(-1)).toEqual({
      level: "error",
      text: "Retry failed after 3 attempts: 503 Service Unavailable",
    });
    expect(h.notices.filter((n) => n.text.startsWith("Retry failed"))).toHaveLength(1);
    expect(h.controller.status).toBe("failed");
  });

  it("a second auto_retry_start without a restore does not save the retry handler as the previous one", () => {
    const h = harness();
    const previous = h.escape.onEscape;
    failOnce(h);
    h.controller.handle(ev.retryStart(2));
    h.controller.handle(ev.retryEnd(false, 2, "Retry cancelled"));
    expect(h.escape.onEscape).toBe(previous);
  });

  it("Esc while streaming aborts; the aborted answer reads Operation aborted or counts the retries", () => {
    const h = harness();
    h.controller.promptStarted();
    h.controller.handle(ev.agentStart());
    h.pressEscape();
    h.controller.handle(ev.aborted());
    h.controller.handle(ev.settled("aborted", 0, "Request was aborted"));
    expect(h.calls).toEqual(["abort"]);
    expect(h.notices).toEqual([{ level: "error", text: "Operation aborted" }]);
    expect(h.controller.status).toBe("aborted");

    const g = harness();
    failOnce(g);
    g.controller.handle(ev.agentStart());
    g.pressEscape();
    g.controller.handle(ev.retryEnd(false, 1, "Retry cancelled"));
    g.controller.handle(ev.aborted());
    g.controller.handle(ev.settled("aborted", 1));
    expect(g.notices.map((n) => n.text)).toEqual([
      "Error: 503 Service Unavailable",
      "Retry failed after 1 attempts: Retry cancelled",
      "Aborted after 1 retry attempt",
    ]);
  });

  it("a prompt that fails without an assistant message still gets an error line", () => {
    const h = harness();
    h.controller.promptStarted();
    h.controller.handle(ev.settled("error", 0, "The run ended without a reply."));
    expect(h.notices).toEqual([{ level: "error", text: "Error: The run ended without a reply." }]);
    h.controller.promptStarted();
    h.controller.promptFailed("Session s1 was disposed; create a new session.");
    expect(h.notices.at(-1)?.text).toBe("Error: Session s1 was disposed; create a new session.");
    expect(h.controller.busy).toBe(false);
    expect(h.controller.status).toBe("failed");
  });

  it("Ctrl+C aborts while busy; when idle, twice within the window exits and once arms a hint that expires", () => {
    const h = harness();
    h.controller.promptStarted();
    expect(h.controller.pressCtrlC()).toBe("abort");
    expect(h.calls).toEqual(["abort"]);
    h.controller.handle(ev.settled("aborted"));
    expect(h.controller.pressCtrlC()).toBe("confirm_exit");
    expect(h.controller.status).toBe("aborted · press Ctrl+C again to exit");
    h.clock.advance(1001);
    expect(h.controller.status).toBe("aborted");
    expect(h.controller.pressCtrlC()).toBe("confirm_exit");
    h.clock.advance(400);
    expect(h.controller.pressCtrlC()).toBe("exit");
    expect(h.clock.pending).toBe(0);
  });

  it("dispose() cancels the countdown and gives Esc back its handler", () => {
    const h = harness();
    const previous = h.escape.onEscape;
    failOnce(h);
    h.controller.dispose();
    expect(h.clock.pending).toBe(0);
    expect(h.escape.onEscape).toBe(previous);
  });

  it("for any interleaving, Esc is bound to abortRetry exactly while the countdown shows, and nothing outlives the prompt", () => {
    const step = fc.oneof(
      fc.integer({ min: 1, max: 3 }).map((attempt) => ev.retryStart(attempt, attempt * 1000)),
      fc.constant(ev.agentStart()),
      fc.constant(ev.failedAttempt()),
      fc.boolean().map((willRetry) => ev.agentEnd(willRetry)),
      fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 3 })).map(([ok, n]) => ev.retryEnd(ok, n, "Retry cancelled")),
      fc.integer({ min: 0, max: 2500 }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const h = harness();
        const previous = h.escape.onEscape;
        h.controller.promptStarted();
        for (const s of steps) {
          if (typeof s === "number") h.clock.advance(s);
          else h.controller.handle(s);
          const retrying = h.controller.loader?.kind === "retry";
          expect(h.escape.onEscape === previous).toBe(!retrying);
          if (retrying) expect(h.controller.loader?.text).toMatch(/^Retrying \(\d\/3\) in [1-3]s… \(esc to cancel\)$/);
        }
        h.controller.handle(ev.settled("stop"));
        expect(h.escape.onEscape).toBe(previous);
        expect(h.clock.pending).toBe(0);
        expect(h.controller.loader).toBeUndefined();
      }),
    );
  });
});
