/**
 * The main thread's inbox of a worker port (workers/port-inbox.ts) on a real MessageChannel: a
 * backlog is dispatched a bounded slice at a time, with the event loop turning in between (P1),
 * in the port's order, each message's microtasks before the next message, and the port's ref
 * state kept across the inbox's pauses.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { MessageChannel } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { PortInbox } from "../../../src/main/workers/port-inbox.js";
import { within } from "../../fixtures/bounded.js";

const channels: MessageChannel[] = [];
afterEach(() => {
  for (const channel of channels.splice(0)) {
    channel.port1.close();
    channel.port2.close();
  }
});

function channel(): MessageChannel {
  const made = new MessageChannel();
  channels.push(made);
  return made;
}

/** Keeps the thread busy for `ms`: a message that costs that much to handle. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // work
  }
}

/** Resolves once `log` has `count` entries that start with "message". */
async function received(log: string[], count: number): Promise<void> {
  await within(
    (async () => {
      while (log.filter((entry) => entry.startsWith("message")).length < count) await nextTurn();
    })(),
    5000,
    `${count} messages`,
  );
}

describe("PortInbox", () => {
  it("P1: a backlog that costs 2 ms a message is dispatched with the event loop turning every few messages", async () => {
    const { port1, port2 } = channel();
    for (let i = 0; i < 20; i++) port2.postMessage(i);
    const log: string[] = [];
    const inbox = new PortInbox(port1);
    inbox.on("message", (data) => {
      if (data === 0) setImmediate(() => log.push("the loop turned"));
      busy(2);
      log.push(`message ${String(data)}`);
    });
    await received(log, 20);
    await nextTurn();
    // 5 ms of budget: the task that received the first message stops after two or three (a
    // port left to itself hands all 20 to one task, and the loop turns after the last).
    const turned = log.indexOf("the loop turned");
    expect(turned).toBeGreaterThan(0);
    expect(turned).toBeLessThanOrEqual(4);
    expect(log.filter((entry) => entry !== "the loop turned")).toEqual(
      Array.from({ length: 20 }, (_, i) => `message ${i}`),
    );
  });

  it("each message's microtasks run before the next message, whether the port delivers it or the inbox pulls it", async () => {
    const { port1, port2 } = channel();
    for (let i = 0; i < 10; i++) port2.postMessage(i);
    const log: string[] = [];
    const inbox = new PortInbox(port1, 0);
    inbox.on("message", (data) => {
      log.push(`message ${String(data)}`);
      void Promise.resolve().then(() => log.push(`microtask ${String(data)}`));
    });
    await received(log, 10);
    await nextTurn();
    expect(log).toEqual(Array.from({ length: 10 }, (_, i) => [`message ${i}`, `microtask ${i}`]).flat());
  });

  it("every consumer gets every message, in the order added; after a backlog the port delivers again", async () => {
    const { port1, port2 } = channel();
    for (let i = 0; i < 5; i++) port2.postMessage(i);
    const log: string[] = [];
    const inbox = new PortInbox(port1, 0);
    inbox.on("message", (data) => log.push(`message a${String(data)}`));
    inbox.on("message", (data) => log.push(`b${String(data)}`));
    await received(log, 5);
    await nextTurn();
    port2.postMessage(5);
    await received(log, 6);
    expect(log).toEqual(Array.from({ length: 6 }, (_, i) => [`message a${i}`, `b${i}`]).flat());
  });

  it("an unreferenced port stays unreferenced across the inbox's pauses", async () => {
    const { port1, port2 } = channel();
    const inbox = new PortInbox(port1, 0);
    inbox.setReferenced(false);
    const log: string[] = [];
    inbox.on("message", (data) => log.push(`message ${String(data)}`));
    for (let i = 0; i < 5; i++) port2.postMessage(i);
    await received(log, 5);
    await nextTurn();
    expect(port1.hasRef()).toBe(false);
    inbox.setReferenced(true);
    expect(port1.hasRef()).toBe(true);
  });

  it("X7: drainNow() hands over at once whatever the port still holds, and nothing after close()", async () => {
    const { port1, port2 } = channel();
    const log: string[] = [];
    const inbox = new PortInbox(port1, 0);
    inbox.on("message", (data) => log.push(`message ${String(data)}`));
    for (let i = 0; i < 5; i++) port2.postMessage(i);
    await within(
      (async () => {
        while (log.length === 0) await nextTurn();
      })(),
      5000,
      "the first message",
    );
    inbox.drainNow();
    expect(log).toEqual(Array.from({ length: 5 }, (_, i) => `message ${i}`));
    inbox.close();
    port2.postMessage(5);
    await nextTurn();
    await nextTurn();
    expect(log).toHaveLength(5);
  });
});
