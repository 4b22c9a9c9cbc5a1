/**
 * The built-in demo models in a long-lived worker: they keep nothing per session once a session
 * closes, and a long answer streams without holding the worker, so abort() reaches it (X3).
 * In-process tier: the "worker" is this thread, so a stream that never yields would keep even
 * the test's own abort call from being delivered.
 */
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import type { SessionHostOptions } from "../../../src/main/host/session-host.js";
import { within } from "../../fixtures/bounded.js";
import { nextEvent } from "../../fixtures/events.js";
import { inProcessHost } from "../../fixtures/in-process-host.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function freshHost(options: SessionHostOptions = {}) {
  const env = inProcessHost(options);
  cleanups.push(() => env.host.close());
  return env;
}

function textOf(message: AssistantMessage | undefined): string {
  return (message?.content ?? []).map((block) => (block.type === "text" ? block.text : "")).join("");
}

describe("demo models", () => {
  it("regression: abort() reaches demo-fast while it echoes a 1 MB prompt, and the answer stops part-way", async () => {
    const { host } = freshHost();
    const session = await host.createSession({ model: "demo/demo-fast" });
    const prompt = "lifeline ".repeat(120_000);
    const firstDelta = nextEvent(session, "message_update");
    const running = session.prompt(prompt);
    await within(firstDelta, 10_000, "the first streamed delta");
    await within(session.abort(), 10_000, "abort() to reach the worker");
    const result = await within(running, 10_000, "the aborted prompt to settle");
    expect(result.stopReason).toBe("aborted");
    expect(result.retries).toBe(0);
    // Work counted, not timed: the stream stopped before the echo was complete.
    expect(textOf(result.message).length).toBeLessThan(prompt.length);
  });

  it("regression: a disposed demo session leaves no per-session state: a new session with its id starts afresh", async () => {
    const { host, clock } = freshHost();
    const first = await host.createSession({ model: "demo/demo-1", sessionId: "reused-id" });
    const done = first.prompt("hello");
    await clock.waitForSleep();
    // The chain is cancelled between failures: the demo script is left mid-prompt for this id.
    first.abortRetry();
    expect((await done).stopReason).toBe("error");
    await first.dispose();

    const second = await host.createSession({ model: "demo/demo-1", sessionId: "reused-id" });
    const again = second.prompt("hello");
    await clock.release();
    // A leftover failure count would make this prompt succeed after one retry instead of two.
    const next = await within(
      Promise.race([clock.waitForSleep().then(() => "second retry"), again.then(() => "settled")]),
      10_000,
      "a second retry or the prompt's end",
    );
    expect(next).toBe("second retry");
    await clock.release();
    const result = await again;
    // demo-1 fails twice per prompt: a fresh session sees both failures again.
    expect(result.stopReason).toBe("stop");
    expect(result.retries).toBe(2);
    // No prompt cache survives the first session either (pi-ai's faux provider kept one per id).
    expect(result.message?.usage).toMatchObject({ cacheRead: 0, cacheWrite: 0 });
  });

  it("the echo drops only the script's directives and keeps other bracketed text", async () => {
    const { host } = freshHost();
    const session = await host.createSession({ model: "demo/demo-fast" });
    const result = await session.prompt("[fail=0] keep [this] and [that");
    expect(textOf(result.message)).toContain('you said "keep [this] and [that"');
  });
});
