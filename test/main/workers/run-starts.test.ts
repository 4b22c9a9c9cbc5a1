/**
 * Run ops of one task (run starts, R4's removals of a failed reply, the ordered half of aborts)
 * travel as one `runOps` message per worker (worker-link.ts `startRun`, `popFailed`, `abort`;
 * run-op-queue.ts): a host that starts many prompts, decides many retries or aborts many prompts
 * at once pays one comlink call and one message for a slice of its pacer, not one per session,
 * and each op still settles on its own. In-process workers (serveWorker on a MessageChannel)
 * behind a relay that counts what crosses.
 */
import { MessageChannel } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { createSessionHost } from "../../../src/main/host/session-host.js";
import type { LinkClient } from "../../../src/main/workers/link-sessions.js";
import { TurnPacer } from "../../../src/main/workers/turn-pacer.js";
import { WorkerLink } from "../../../src/main/workers/worker-link.js";
import type { BatchItem } from "../../../src/shared/protocol.js";
import { serveWorker } from "../../../src/worker/serve-worker.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { assistantMessage } from "../../fixtures/messages.js";
import { gate, scriptedModel } from "../../fixtures/scripted-provider.js";

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
function linkTo(relay: Relay, pacer?: TurnPacer): WorkerLink {
  const link = new WorkerLink(
    { port: relay.port, done: relay.done },
    {
      callTimeoutMs: 5000,
      hangTimeoutMs: 5000,
      setupTimeoutMs: 5000,
      controlTimeoutMs: 5000,
      onProtocolError: () => {},
      pacer,
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
    const host = createSessionHost({
      lifelineDir: dir,
      cwd: dir,
      threads: 1,
      batchIntervalMs: 0,
      connect: () => {
        const relay = relayedWorker();
        relays.push(relay);
        return { port: relay.port, done: relay.done };
      },
    });
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

  it("aborts travel as run ops after the starts they stop; a burst goes a pacer's slice at a time, each answered", async () => {
    const relay = relayedWorker();
    // A budget no slice reaches: only the pacer's quota (32 turns in a first slice) splits the burst.
    const link = linkTo(relay, new TurnPacer(60_000));
    const outcomes = Array.from({ length: 100 }, (_, i) =>
      link.abort(`nobody-${i}`).then(
        () => "aborted",
        (error: { code?: string }) => error.code,
      ),
    );
    const codes = await within(Promise.all(outcomes), 5000, "100 aborts");
    expect(new Set(codes)).toEqual(new Set(["ERR_SESSION_DISPOSED"]));
    const sizes = relay.opMessages.map((kinds) => kinds.length);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(100);
    expect(relay.opMessages.flat().every((kind) => kind === "abort")).toBe(true);
    // Not all in the task of the loop that called abort() 100 times.
    expect(sizes[0]).toBeLessThanOrEqual(32);
    expect(sizes.length).toBeGreaterThan(1);
  });

  it("X3: an abort paced behind other turns leaves alone a run started after it was asked", async () => {
    const held = gate();
    const scripted = scriptedModel([{ text: "first" }, { text: "second", after: held.promise }]);
    cleanups.push(() => scripted.unregister());
    const relay = relayedWorker();
    const pacer = new TurnPacer(60_000);
    const link = linkTo(relay, pacer);
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
    const items: BatchItem[] = [];
    const runEnds: (() => void)[] = [];
    const runEnded = (n: number) =>
      new Promise<void>((resolve) => {
        runEnds[n - 1] = resolve;
      });
    const firstEnded = runEnded(1);
    const secondEnded = runEnded(2);
    const client: LinkClient = {
      handleItem: (item) => {
        items.push(item);
        if (item.type === "run_end") runEnds[item.runId - 1]?.();
      },
      hasRunInFlight: () => false,
      handleWorkerExit: () => {},
    };
    link.attach("s-1", client);
    const message = (content: string) => ({ role: "user" as const, content, timestamp: Date.now() });
    await within(link.startRun("s-1", 1, { kind: "prompt", message: message("one") }), 5000, "run 1");
    await within(firstEnded, 5000, "run 1's end");
    // The current slice of the pacer is full (a burst of other sessions' turns), so the abort's
    // ordered half waits for a turn; the next prompt's start, posted meanwhile, overtakes it.
    for (let i = 0; i < 32; i++) pacer.run(() => {});
    const aborted = link.abort("s-1");
    await within(link.startRun("s-1", 2, { kind: "prompt", message: message("two") }), 5000, "run 2");
    // Run 2's request is in flight when the abort reaches the worker.
    await within(aborted, 5000, "abort");
    held.open();
    await within(secondEnded, 5000, "run 2's end");
    expect(relay.opMessages).toEqual([["start"], ["start"], ["abort"]]);
    const replies = items.flatMap((item) =>
      item.type === "event" && item.event.type === "message_end" && item.event.message.role === "assistant"
        ? [(item.event.message as { stopReason?: string }).stopReason]
        : [],
    );
    // Run 2 is not the run the abort stopped (there was none in flight): it answers in full.
    expect(replies).toEqual(["stop", "stop"]);
  });
});
