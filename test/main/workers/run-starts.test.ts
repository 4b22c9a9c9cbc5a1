/**
 * Run ops of one task (run starts, R4's removals of a failed reply) travel as one `runOps`
 * message per worker (worker-link.ts `startRun`, `popFailed`; run-op-queue.ts): a host that starts
 * many prompts, or decides many retries, at once pays one comlink call and one message for a
 * slice of its pacer, not one per session, and each op still settles on its own. In-process
 * workers (serveWorker on a MessageChannel) behind a relay that counts what crosses.
 */
import { MessageChannel } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { withHostInternals } from "../../../src/main/host/host-internals.js";
import { createSessionHost } from "../../../src/main/host/session-host.js";
import { WorkerLink } from "../../../src/main/workers/worker-link.js";
import { serveWorker } from "../../../src/worker/serve-worker.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { assistantMessage } from "../../fixtures/messages.js";
import { scriptedModel } from "../../fixtures/scripted-provider.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Relay {
  port: MessageChannel["port1"];
  done: Promise<void>;
  /** How many starts each `runOps` message carried, in order. */
  startMessages: number[];
  /** The kinds of the ops of each `runOps` message, in order. */
  opMessages: string[][];
}

/** An in-process worker behind a relay that records every `runOps` message. */
function relayedWorker(): Relay {
  const toMain = new MessageChannel();
  const toWorker = new MessageChannel();
  const startMessages: number[] = [];
  const opMessages: string[][] = [];
  toMain.port2.on("message", (data: { path?: unknown; argumentList?: { value?: unknown }[] }) => {
    const path = Array.isArray(data?.path) ? data.path : [];
    if (path[0] === "runOps") {
      const ops = data.argumentList?.[0]?.value;
      const kinds = Array.isArray(ops) ? ops.map((op: { kind?: string }) => String(op.kind)) : [];
      opMessages.push(kinds);
      startMessages.push(kinds.filter((kind) => kind === "start").length);
    }
    toWorker.port1.postMessage(data);
  });
  toWorker.port1.on("message", (data: unknown) => toMain.port2.postMessage(data));
  toMain.port2.on("close", () => toWorker.port1.close());
  const done = serveWorker(toWorker.port2, { batchIntervalMs: 0 });
  cleanups.push(() => {
    toWorker.port1.close();
    toMain.port2.close();
  });
  return { port: toMain.port1, done, startMessages, opMessages };
}

/** A link to `relay`'s worker with 5 s bounds, closed by the test's cleanups. */
function linkTo(relay: Relay): WorkerLink {
  const link = new WorkerLink(
    { port: relay.port, done: relay.done },
    {
      callTimeoutMs: 5000,
      hangTimeoutMs: 5000,
      setupTimeoutMs: 5000,
      controlTimeoutMs: 5000,
      onProtocolError: () => {},
    },
  );
  cleanups.push(() => link.close());
  return link;
}

describe("run ops", () => {
  it("the prompts a host starts in one loop reach their worker as one runOps message, and each is answered", async () => {
    const scripted = scriptedModel([{ text: "ok" }]);
    cleanups.push(() => scripted.unregister());
    const relays: Relay[] = [];
    const dir = tempDir(cleanups, "lifeline-run-starts-");
    const host = createSessionHost(
      withHostInternals(
        {
          lifelineDir: dir,
          cwd: dir,
          threads: 1,
          batchIntervalMs: 0,
        },
        {
          connect: () => {
            const relay = relayedWorker();
            relays.push(relay);
            return { port: relay.port, done: relay.done };
          },
        },
      ),
    );
    cleanups.push(() => host.close());
    const sessions = [];
    for (let i = 0; i < 20; i++) sessions.push(await host.createSession({ model: scripted.model }));
    const results = await within(
      Promise.all(sessions.map((session, i) => session.prompt(`prompt ${i}`))),
      5000,
      "20 prompts",
    );
    expect(results.map((result) => result.stopReason)).toEqual(sessions.map(() => "stop"));
    expect(relays).toHaveLength(1);
    // One message on a quiet machine. The pacer's slice budget is wall-clock time, so a main
    // thread descheduled mid-slice (a loaded CI machine) may split the starts over a few slices,
    // hence a few messages; one start per message (20) is what batching must never come back to.
    const messages = relays[0]?.startMessages ?? [];
    expect(messages.reduce((sum, starts) => sum + starts, 0)).toBe(20);
    expect(messages.length).toBeLessThanOrEqual(4);
  });

  it("starts sent together settle each on its own: started, refused as busy, refused as unknown", async () => {
    const scripted = scriptedModel([{ text: "ok" }]);
    cleanups.push(() => scripted.unregister());
    const relay = relayedWorker();
    const link = linkTo(relay);
    await within(
      link.openSession({
        sessionId: "s-1",
        model: scripted.model,
        systemPrompt: "",
        messages: [],
        provider: { maxRetries: 0 },
      }),
      5000,
      "openSession",
    );
    const message = { role: "user" as const, content: "hi", timestamp: Date.now() };
    const settle = (start: Promise<void>) =>
      start.then(
        () => "started",
        (error: { code?: string }) => error.code,
      );
    const outcomes = Promise.all([
      settle(link.startRun("s-1", 1, { kind: "prompt", message })),
      settle(link.startRun("s-1", 2, { kind: "continue" })),
      settle(link.startRun("nobody", 1, { kind: "continue" })),
    ]);
    expect(await within(outcomes, 5000, "the three starts")).toEqual([
      "started",
      "ERR_SESSION_BUSY",
      "ERR_SESSION_DISPOSED",
    ]);
    expect(relay.startMessages).toEqual([3]);
  });

  it("a message carries at most 256 starts: more in one task go as several, in order, each answered", async () => {
    const relay = relayedWorker();
    const link = linkTo(relay);
    const outcomes = Array.from({ length: 300 }, (_, i) =>
      link.startRun(`nobody-${i}`, 1, { kind: "continue" }).then(
        () => "started",
        (error: { code?: string }) => error.code,
      ),
    );
    const codes = await within(Promise.all(outcomes), 5000, "300 starts");
    expect(new Set(codes)).toEqual(new Set(["ERR_SESSION_DISPOSED"]));
    expect(relay.startMessages).toEqual([256, 44]);
  });

  it("R4: removals of failed replies travel with the starts, in order, each answered with whether it removed one", async () => {
    const scripted = scriptedModel([{ text: "ok" }]);
    cleanups.push(() => scripted.unregister());
    const relay = relayedWorker();
    const link = linkTo(relay);
    const user = { role: "user" as const, content: "hi", timestamp: Date.now() };
    const failed = { ...assistantMessage("error", "503 Service Unavailable"), timestamp: Date.now() };
    await within(
      link.openSession({
        sessionId: "s-1",
        model: scripted.model,
        systemPrompt: "",
        messages: [user, failed],
        provider: { maxRetries: 0 },
      }),
      5000,
      "openSession",
    );
    const settle = <T>(op: Promise<T>) =>
      op.then(
        (value) => value,
        (error: { code?: string }) => error.code,
      );
    const outcomes = Promise.all([
      settle(link.popFailed("s-1")),
      settle(link.popFailed("s-1")),
      settle(link.popFailed("nobody")),
      settle(link.startRun("s-1", 1, { kind: "continue" })),
    ]);
    // The first removal took the failed reply; the second found none; the retried run started
    // after the removal, from the user message (so its reply is the scripted one).
    expect(await within(outcomes, 5000, "the four ops")).toEqual([true, false, "ERR_SESSION_DISPOSED", undefined]);
    expect(relay.opMessages).toEqual([["pop_failed", "pop_failed", "pop_failed", "start"]]);
  });
});
