/**
 * Exact event sequences of retry chains through a full session, with the worker API served
 * in-process over a MessageChannel and the retry sleep under the test's control.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MessageChannel } from "node:worker_threads";
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { afterEach, describe, expect, it } from "vitest";
import { type AuthStorage, InMemoryAuthStorage } from "../../../src/main/auth/auth-storage.js";
import { withHostInternals } from "../../../src/main/host/host-internals.js";
import { createSessionHost, type SessionHostOptions } from "../../../src/main/host/session-host.js";
import { serveWorker } from "../../../src/worker/serve-worker.js";
import { nextEvent } from "../../fixtures/events.js";
import { inProcessHost, outline, record } from "../../fixtures/in-process-host.js";
import { gate, type Step, scriptedModel } from "../../fixtures/scripted-provider.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** An in-process host closed after the test. */
function freshHost(options: SessionHostOptions = {}) {
  const env = inProcessHost(options);
  cleanups.push(() => env.host.close());
  return env;
}

/** A scripted model unregistered after the test. */
function script(steps: readonly Step[]) {
  const scripted = scriptedModel(steps);
  cleanups.push(() => scripted.unregister());
  return scripted;
}

async function setup(steps: readonly Step[], options: SessionHostOptions = {}) {
  const scripted = script(steps);
  const env = freshHost(options);
  const session = await env.host.createSession({ model: scripted.model });
  const events = record(session);
  return { ...env, scripted, session, events };
}

function roles(messages: readonly AgentMessage[]): string[] {
  return messages.map((m) => (m.role === "assistant" ? `assistant:${m.stopReason}` : m.role));
}

function noTwoUsersInARow(messages: readonly AgentMessage[]): boolean {
  return messages.every((m, i) => i === 0 || !(m.role === "user" && messages[i - 1]?.role === "user"));
}

describe("retry chains through a session", () => {
  it("R4 R5 R7: a prompt succeeds after two failures with the seed's exact events", async () => {
    const { clock, scripted, session, events } = await setup([
      { error: "503 Service Unavailable" },
      { error: "429 Too Many Requests" },
      { text: "hello" },
    ]);
    const done = session.prompt("hi");
    await clock.release();
    await clock.release();
    const result = await done;
    expect(outline(events)).toEqual([
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 1/3 delay=2000 error=503 Service Unavailable",
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 2/3 delay=4000 error=429 Too Many Requests",
      "agent_start",
      "auto_retry_end success=true attempt=2",
      "agent_end willRetry=false",
      "agent_settled stop retries=2",
    ]);
    expect(result).toMatchObject({ stopReason: "stop", retries: 2 });
    expect(scripted.calls()).toBe(3);
    expect(session.retryAttempt).toBe(0);
    expect(session.isRetrying).toBe(false);
  });

  it("R4: the runtime transcript drops failed attempts while the history keeps them", async () => {
    const { clock, session } = await setup([{ error: "503 Service Unavailable" }, { text: "ok" }]);
    const done = session.prompt("hi");
    await clock.release();
    await done;
    expect(roles(session.messages)).toEqual(["user", "assistant:stop"]);
    expect(roles(session.history)).toEqual(["user", "assistant:error", "assistant:stop"]);
  });

  it("R6 R7: an exhausted chain waits 2000/4000/8000 ms and reports attempt - 1", async () => {
    const { clock, scripted, session, events } = await setup([{ error: "500 Internal Server Error" }]);
    const done = session.prompt("hi");
    for (let i = 0; i < 3; i++) await clock.release();
    const result = await done;
    expect(clock.delays).toEqual([2000, 4000, 8000]);
    expect(outline(events)).toEqual([
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 1/3 delay=2000 error=500 Internal Server Error",
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 2/3 delay=4000 error=500 Internal Server Error",
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 3/3 delay=8000 error=500 Internal Server Error",
      "agent_start",
      "agent_end willRetry=false",
      "auto_retry_end success=false attempt=3 finalError=500 Internal Server Error",
      "agent_settled error retries=3",
    ]);
    expect(result).toMatchObject({ stopReason: "error", errorMessage: "500 Internal Server Error" });
    expect(scripted.calls()).toBe(4);
  });

  it("R8 B3: abortRetry() in the sleep cancels the chain and leaves a valid transcript", async () => {
    const { clock, scripted, session, events } = await setup([
      { error: "503 Service Unavailable" },
      { text: "second answer" },
    ]);
    const done = session.prompt("first");
    await clock.waitForSleep();
    session.abortRetry();
    const result = await done;
    expect(outline(events)).toEqual([
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 1/3 delay=2000 error=503 Service Unavailable",
      "auto_retry_end success=false attempt=1 finalError=Retry cancelled",
      // Announced, never sent: a prompt's retries are the retry requests it sent.
      "agent_settled error retries=0",
    ]);
    expect(result.stopReason).toBe("error");
    expect(clock.pending).toBe(0);
    expect(scripted.calls()).toBe(1);
    expect(roles(session.messages)).toEqual(["user", "assistant:error"]);
    const next = await session.prompt("second");
    expect(next.stopReason).toBe("stop");
    expect(noTwoUsersInARow(session.messages)).toBe(true);
    // What the model saw for the second prompt: the two prompts, the failed reply between them left
    // out, each a user message of its own as pi sends them (an API that refuses two in a row gets
    // them joined in its payload: alternating-turns.ts).
    const seen = scripted.contexts[1]?.messages.map((m) => m.role);
    expect(seen).toEqual(["user", "user"]);
  });

  it("B3: abortRetry() while a retried attempt is in flight ends the chain and that attempt is not retried", async () => {
    const held = gate();
    const { clock, scripted, session, events } = await setup([
      { error: "503 Service Unavailable" },
      { error: "502 Bad Gateway", after: held.promise },
      { text: "never" },
    ]);
    const done = session.prompt("hi");
    const retried = nextEvent(session, "agent_start", 2);
    await clock.release();
    await retried;
    session.abortRetry();
    held.open();
    const result = await done;
    expect(outline(events)).toEqual([
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 1/3 delay=2000 error=503 Service Unavailable",
      "agent_start",
      "auto_retry_end success=false attempt=1 finalError=Retry cancelled",
      "agent_end willRetry=false",
      "agent_settled error retries=1",
    ]);
    expect(result.errorMessage).toBe("502 Bad Gateway");
    expect(scripted.calls()).toBe(2);
    expect(noTwoUsersInARow(session.messages)).toBe(true);
  });

  it("R9: abort() in the sleep cancels the chain; no request follows", async () => {
    const { clock, scripted, session, events } = await setup([{ error: "overloaded" }, { text: "never" }]);
    const done = session.prompt("hi");
    await clock.waitForSleep();
    await session.abort();
    await done;
    expect(outline(events)).toEqual([
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 1/3 delay=2000 error=overloaded",
      "auto_retry_end success=false attempt=1 finalError=Retry cancelled",
      "agent_settled error retries=0",
    ]);
    expect(clock.pending).toBe(0);
    expect(scripted.calls()).toBe(1);
  });

  it("R9 X3: abort() during streaming stops the request; an aborted run is never retried", async () => {
    const { scripted, session, events } = await setup([{ stall: true }]);
    const done = session.prompt("hi");
    await scripted.waitForCall(1);
    await session.abort();
    const result = await done;
    expect(result.stopReason).toBe("aborted");
    expect(outline(events)).toEqual(["agent_start", "agent_end willRetry=false", "agent_settled aborted retries=0"]);
  });

  it("B3: abort() while a retried attempt streams ends the chain; the aborted message is not a retry success", async () => {
    const { clock, session, events } = await setup([{ error: "fetch failed" }, { stall: true }]);
    const done = session.prompt("hi");
    const retried = nextEvent(session, "agent_start", 2);
    await clock.release();
    await retried;
    await session.abort();
    const result = await done;
    expect(outline(events)).toEqual([
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 1/3 delay=2000 error=fetch failed",
      "agent_start",
      "auto_retry_end success=false attempt=1 finalError=Retry cancelled",
      "agent_end willRetry=false",
      "agent_settled aborted retries=1",
    ]);
    expect(result.stopReason).toBe("aborted");
    expect(events.filter((e) => e.type === "auto_retry_end" && e.success)).toHaveLength(0);
  });

  it("R15: with retry disabled a retryable error ends the prompt", async () => {
    const { scripted, session, events } = await setup([{ error: "503 Service Unavailable" }]);
    session.setAutoRetryEnabled(false);
    expect(session.autoRetryEnabled).toBe(false);
    await session.prompt("hi");
    expect(outline(events)).toEqual(["agent_start", "agent_end willRetry=false", "agent_settled error retries=0"]);
    expect(scripted.calls()).toBe(1);
  });

  it("R2 R15: a non-retryable error is not retried", async () => {
    const { scripted, session, events } = await setup([{ error: "400 Bad Request: invalid model" }]);
    const result = await session.prompt("hi");
    expect(outline(events)).toEqual(["agent_start", "agent_end willRetry=false", "agent_settled error retries=0"]);
    expect(result.errorMessage).toBe("400 Bad Request: invalid model");
    expect(scripted.calls()).toBe(1);
  });

  it("R1: a context overflow is never retried and goes to the compaction hook", async () => {
    const scripted = script([{ error: "prompt is too long: 213462 tokens > 200000 maximum" }]);
    const env = freshHost();
    const seen: string[] = [];
    const session = await env.host.createSession({
      model: scripted.model,
      onContextOverflow: (info) => {
        seen.push(info.errorMessage);
        return false;
      },
    });
    const events = record(session);
    await session.prompt("hi");
    expect(outline(events)).toEqual([
      "agent_start",
      "agent_end willRetry=false",
      "compaction_start",
      "compaction_end",
      "agent_settled error retries=0",
    ]);
    expect(seen).toEqual(["prompt is too long: 213462 tokens > 200000 maximum"]);
    expect(events.find((e) => e.type === "compaction_end")).toMatchObject({
      reason: "overflow",
      result: null,
      aborted: false,
      willRetry: false,
    });
    expect(scripted.calls()).toBe(1);
  });

  it("R4: a usage-limit error is reported to the auth storage with its retry hint; no switch keeps the backoff", async () => {
    const storage = new InMemoryAuthStorage();
    const { clock, session, events } = await setup(
      [{ error: "usage limit reached (retry-after: 30)" }, { text: "ok" }],
      {
        authStorage: storage,
      },
    );
    const done = session.prompt("hi");
    await clock.release();
    await done;
    expect(storage.records).toHaveLength(1);
    expect(storage.records[0]).toMatchObject({ provider: "scripted", sessionId: session.id, retryAfterMs: 30_000 });
    expect(outline(events)[2]).toBe("auto_retry_start 1/3 delay=2000 error=usage limit reached (retry-after: 30)");
  });

  it("R4: a usage-limit error retries with no delay when the auth storage switched credentials", async () => {
    const calls: string[] = [];
    const storage: AuthStorage = {
      markUsageLimitReached: async (provider) => {
        calls.push(provider);
        return true;
      },
    };
    const { clock, session, events } = await setup([{ error: "Usage limit exceeded" }, { text: "ok" }], {
      authStorage: storage,
    });
    const done = session.prompt("hi");
    await clock.release();
    await done;
    expect(calls).toEqual(["scripted"]);
    expect(clock.delays).toEqual([0]);
    expect(outline(events)[2]).toBe("auto_retry_start 1/3 delay=0 error=Usage limit exceeded");
  });

  it("B3: a model call that throws still ends the run, is classified, and settles the prompt", async () => {
    const { clock, session, events } = await setup([{ throws: "fetch failed" }, { text: "recovered" }]);
    const done = session.prompt("hi");
    await clock.release();
    const result = await done;
    expect(result.stopReason).toBe("stop");
    expect(outline(events)).toContain("auto_retry_end success=true attempt=1");
  });

  it("B3: a thrown non-retryable failure settles the prompt with its message", async () => {
    const { session } = await setup([{ throws: "provider exploded" }]);
    const result = await session.prompt("hi");
    expect(result).toMatchObject({ stopReason: "error", errorMessage: "provider exploded" });
    expect(session.isBusy).toBe(false);
  });

  it("B3: a prompt during a live chain is refused with ERR_SESSION_BUSY, or queued on request", async () => {
    const { clock, scripted, session, events } = await setup([
      { error: "503 Service Unavailable" },
      { text: "one" },
      { text: "two" },
    ]);
    const first = session.prompt("first");
    await clock.waitForSleep();
    await expect(session.prompt("interleaved")).rejects.toMatchObject({ code: "ERR_SESSION_BUSY" });
    const queued = session.prompt("second", { queue: true });
    await clock.release();
    const results = await Promise.all([first, queued]);
    expect(results.map((r) => r.stopReason)).toEqual(["stop", "stop"]);
    expect(scripted.calls()).toBe(3);
    expect(events.filter((e) => e.type === "agent_settled")).toHaveLength(2);
    expect(roles(session.messages)).toEqual(["user", "assistant:stop", "user", "assistant:stop"]);
  });

  it("R11 B4: agent_settled comes once per prompt, after the last agent_end, and before prompt() resolves", async () => {
    const { clock, session } = await setup([{ error: "503" }, { text: "ok" }]);
    const order: string[] = [];
    session.subscribe((event) => {
      if (event.type === "agent_end" || event.type === "agent_settled") order.push(event.type);
    });
    const done = session.prompt("hi").then(() => order.push("resolved"));
    await clock.release();
    await done;
    expect(order).toEqual(["agent_end", "agent_end", "agent_settled", "resolved"]);
  });

  it("B5: setAutoRetryEnabled changes only its own session", async () => {
    const scripted = script([{ error: "503" }, { text: "ok" }]);
    const env = freshHost();
    const a = await env.host.createSession({ model: scripted.model });
    const b = await env.host.createSession({ model: scripted.model });
    a.setAutoRetryEnabled(false);
    expect(b.autoRetryEnabled).toBe(true);
    expect((await env.host.settings()).retry.enabled).toBe(true);
  });

  it("R14: listeners get auto_retry events with the seed's payload fields", async () => {
    const { clock, session } = await setup([{ error: "rate limit exceeded" }, { text: "ok" }]);
    const start = nextEvent(session, "auto_retry_start");
    const end = nextEvent(session, "auto_retry_end");
    const done = session.prompt("hi");
    expect(await start).toEqual({
      type: "auto_retry_start",
      attempt: 1,
      maxAttempts: 3,
      delayMs: 2000,
      errorMessage: "rate limit exceeded",
    });
    await clock.release();
    expect(await end).toEqual({ type: "auto_retry_end", success: true, attempt: 1, reason: "success" });
    await done;
  });

  it("a listener that throws does not break the session or other listeners", async () => {
    const errors: unknown[] = [];
    const { session } = await setup([{ text: "ok" }], { onListenerError: (error) => errors.push(error) });
    const seen: string[] = [];
    session.subscribe(() => {
      throw new Error("listener bug");
    });
    session.subscribe((event) => seen.push(event.type));
    const result = await session.prompt("hi");
    expect(result.stopReason).toBe("stop");
    expect(seen).toContain("agent_settled");
    expect(errors.length).toBeGreaterThan(0);
  });
});

describe("streamed events", () => {
  it("X4: merged text deltas add up to the final text and message_update keeps its partial", async () => {
    const text = "word ".repeat(400).trim();
    const { session, events } = await setup([{ text }]);
    await session.prompt("hi");
    const updates = events.filter((e) => e.type === "message_update");
    expect(updates.length).toBeGreaterThan(0);
    let streamed = "";
    for (const update of updates) {
      const inner = update.assistantMessageEvent;
      expect((inner as { partial?: unknown }).partial).toBe(update.message);
      if (inner.type === "text_delta") streamed += inner.delta;
      // Each snapshot shows exactly the text streamed so far: no later text, no duplicates.
      const block = update.message.role === "assistant" ? update.message.content[0] : undefined;
      if (inner.type !== "text_end") expect(block?.type === "text" ? block.text : "").toBe(streamed);
    }
    expect(streamed).toBe(text);
    const types = events.map((e) => e.type);
    expect(types.indexOf("message_end")).toBeLessThan(types.indexOf("agent_end"));
    expect(types.at(-1)).toBe("agent_settled");
  });
});

describe("auto_retry_end without an auto_retry_start (cancelled between the decision and the run's end)", () => {
  it.each(["abortRetry", "abort", "dispose"] as const)(
    "R8 R14: %s() inside an agent_end {willRetry: true} listener still emits that attempt's auto_retry_start before the end",
    async (how) => {
      const { clock, scripted, session, events } = await setup([{ error: "503 Service Unavailable" }, { text: "ok" }]);
      session.subscribe((event) => {
        if (event.type !== "agent_end" || !event.willRetry) return;
        if (how === "abortRetry") session.abortRetry();
        else if (how === "abort") void session.abort();
        else void session.dispose();
      });
      const done = session.prompt("hi").catch((error: unknown) => error);
      const settled = await done;
      // The retry was announced (auto_retry_start) but no request of it went out: 0 retries.
      const ending = how === "dispose" ? [] : ["agent_settled error retries=0"];
      const finalError = how === "dispose" ? "Session" : "Retry cancelled";
      const lines = outline(events);
      expect(lines.slice(0, 3)).toEqual([
        "agent_start",
        "agent_end willRetry=true",
        "auto_retry_start 1/3 delay=2000 error=503 Service Unavailable",
      ]);
      expect(lines[3]).toMatch(new RegExp(`^auto_retry_end success=false attempt=1 finalError=${finalError}`));
      expect(lines.slice(4)).toEqual(ending);
      expect(clock.pending).toBe(0);
      expect(scripted.calls()).toBe(1);
      if (how === "dispose") expect(settled).toMatchObject({ code: "ERR_SESSION_DISPOSED" });
      else expect(settled).toMatchObject({ stopReason: "error", retries: 0 });
    },
  );
});

describe("session lifecycle", () => {
  it("X7 R1: a worker that dies during a compaction's summary request fails the compaction once; the session is restored and the prompt settles", async () => {
    const scripted = script([
      { text: "first answer" },
      { error: "prompt is too long: 213462 tokens > 200000 maximum" },
      { stall: true },
      { text: "after the restore" },
    ]);
    const env = freshHost();
    const session = await env.host.createSession({
      model: scripted.model,
      settings: { compaction: { keepRecentTokens: 1 } },
    });
    await session.prompt("first question");
    const events = record(session);
    const done = session.prompt("second question");
    await scripted.waitForCall(3);
    const restored = nextEvent(session, "session_restored");
    env.workerPorts[0]?.close();
    await restored;
    const result = await done;

    expect(result.stopReason).toBe("error");
    const end = events.find((e) => e.type === "compaction_end");
    expect(end).toMatchObject({ reason: "overflow", result: null, aborted: false, willRetry: false });
    expect(end?.type === "compaction_end" ? end.errorMessage : "").toMatch(/worker/);
    // the overflow, the one summary request: nothing retried
    expect(scripted.calls()).toBe(3);
    expect(session.isCompacting).toBe(false);
    expect((await session.prompt("third question")).stopReason).toBe("stop");
  });

  it("X7: a worker that goes away during the retry sleep is restored; the chain goes on and the prompt gets its real outcome", async () => {
    const { clock, scripted, session, events, workerPorts } = await setup([{ error: "503" }, { text: "back" }]);
    const done = session.prompt("hi");
    await clock.waitForSleep();
    const restored = nextEvent(session, "session_restored");
    workerPorts[0]?.close();
    // No run was in flight, so the session is restored, not blamed: the sleep goes on.
    expect(await restored).toMatchObject({ reason: "exit", restarts: 1 });
    await clock.release();
    const result = await done;
    expect(result).toMatchObject({ stopReason: "stop", retries: 1 });
    expect(outline(events)).toEqual([
      "agent_start",
      "agent_end willRetry=true",
      "auto_retry_start 1/3 delay=2000 error=503",
      "session_restored",
      "agent_start",
      "auto_retry_end success=true attempt=1",
      "agent_end willRetry=false",
      "agent_settled stop retries=1",
    ]);
    expect(scripted.calls()).toBe(2);
    expect(roles(session.messages)).toEqual(["user", "assistant:stop"]);
    expect(roles(session.history)).toEqual(["user", "assistant:error", "assistant:stop"]);
    expect((await session.prompt("again")).stopReason).toBe("stop");
  });

  it("X5 X7: a startRun the worker never answers settles the prompt with a code naming the hang (cause hung), not as a model failure", async () => {
    const scripted = script([{ text: "never" }]);
    const dir = mkdtempSync(join(tmpdir(), "lifeline-test-"));
    const host = createSessionHost(
      withHostInternals(
        {
          lifelineDir: dir,
          cwd: dir,
          batchIntervalMs: 0,
          callTimeoutMs: 200,
          settings: { retry: { baseDelayMs: 1 } },
          // The worker API served in-process behind a relay that swallows run starts (the runOps
          // calls that carry one; a retry's removal of its failed reply goes before, on its own).
        },
        {
          connect: () => {
            const toMain = new MessageChannel();
            const toWorker = new MessageChannel();
            toMain.port2.on("message", (data: { path?: unknown; argumentList?: { value?: unknown }[] }) => {
              const path = Array.isArray(data?.path) ? data.path : [];
              const ops = data.argumentList?.[0]?.value;
              const starts = path[0] === "runOps" && Array.isArray(ops) && ops.some((op) => op?.kind === "start");
              if (!starts) toWorker.port1.postMessage(data);
            });
            toWorker.port1.on("message", (data: unknown) => toMain.port2.postMessage(data));
            toMain.port2.on("close", () => toWorker.port1.close());
            const done = serveWorker(toWorker.port2, { batchIntervalMs: 0 });
            // Like a real thread, termination takes effect a little later than it is asked for.
            return { port: toMain.port1, done, terminate: () => setImmediate(() => toMain.port2.close()) };
          },
        },
      ),
    );
    cleanups.push(() => host.close());
    const session = await host.createSession({ model: scripted.model });
    const events = record(session);
    const outcome = await session.prompt("hi").catch((error: unknown) => error);
    // Each hang is a transient failure restored on a fresh worker and retried (X7); every retry
    // hangs too, so the session is given up after its restart budget, with the cause named.
    expect(outcome).toMatchObject({ code: "ERR_SESSION_CRASHED", exitCause: "hung" });
    const starts = events.filter((event) => event.type === "auto_retry_start");
    expect(starts).toHaveLength(3);
    expect(starts[0]).toMatchObject({
      errorMessage: expect.stringMatching(/stopped answering and was terminated \(hung\)/),
    });
    expect(events.filter((event) => event.type === "session_restored")).toHaveLength(3);
    expect(events.at(-1)).toMatchObject({
      type: "worker_exited",
      error: { code: "ERR_SESSION_CRASHED", exitCause: "hung" },
    });
    expect(scripted.calls()).toBe(0);
  });

  it("dispose() rejects pending and queued prompts with ERR_SESSION_DISPOSED, and later prompts too", async () => {
    const { scripted, session } = await setup([{ stall: true }]);
    const first = session.prompt("one").catch((error: unknown) => error);
    const queued = session.prompt("two", { queue: true }).catch((error: unknown) => error);
    await scripted.waitForCall(1);
    await session.dispose();
    expect(await first).toMatchObject({ code: "ERR_SESSION_DISPOSED" });
    expect(await queued).toMatchObject({ code: "ERR_SESSION_DISPOSED" });
    await expect(session.prompt("three")).rejects.toMatchObject({ code: "ERR_SESSION_DISPOSED" });
  });

  it("prompt() with empty text is refused with ERR_INVALID_OPTIONS", async () => {
    const { session } = await setup([{ text: "ok" }]);
    await expect(session.prompt("   ")).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
    expect(session.isBusy).toBe(false);
  });

  it("createSession rejects an unknown demo model with ERR_UNKNOWN_MODEL listing the models", async () => {
    const env = freshHost();
    const error = await env.host.createSession({ model: "demo/nope" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ERR_UNKNOWN_MODEL" });
    expect(String((error as Error).message)).toContain("demo-1");
  });

  it("createSession rejects malformed options with ERR_INVALID_OPTIONS naming the field", async () => {
    const env = freshHost();
    const error = await env.host.createSession({ model: "no-slash" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ERR_INVALID_OPTIONS" });
    expect(String((error as Error).message)).toContain("model");
  });

  it("sessions created concurrently spread over the worker threads", async () => {
    const env = freshHost({ threads: 2 });
    await Promise.all([1, 2, 3, 4].map(() => env.host.createSession({ model: "demo/demo-fast" })));
    expect(env.workerPorts).toHaveLength(2);
    expect(env.host.workerCount).toBe(2);
  });

  it("a host closed while a session is opening refuses that session with ERR_HOST_CLOSED", async () => {
    const env = inProcessHost();
    const opening = env.host.createSession({ model: "demo/demo-fast" });
    const closing = env.host.close();
    await expect(opening).rejects.toMatchObject({ code: "ERR_HOST_CLOSED" });
    await closing;
    expect(env.host.sessionCount).toBe(0);
  });

  it("createSession after close() is refused with ERR_HOST_CLOSED", async () => {
    const env = inProcessHost();
    await env.host.close();
    await expect(env.host.createSession()).rejects.toMatchObject({ code: "ERR_HOST_CLOSED" });
  });

  it("the demo model fails twice then answers (built-in, in-process)", async () => {
    const env = freshHost();
    const session = await env.host.createSession();
    const events = record(session);
    const done = session.prompt("hello");
    await env.clock.release();
    await env.clock.release();
    const result = await done;
    expect(result.stopReason).toBe("stop");
    expect(outline(events).filter((line) => line.startsWith("auto_retry"))).toEqual([
      "auto_retry_start 1/3 delay=2000 error=503 Service Unavailable: the demo model is overloaded (simulated)",
      "auto_retry_start 2/3 delay=4000 error=429 Too Many Requests: rate limit reached (simulated)",
      "auto_retry_end success=true attempt=2",
    ]);
  });
});
