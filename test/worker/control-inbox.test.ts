/**
 * The worker's control inbox (src/worker/control-inbox.ts): what it takes off the control port
 * and when. A poll drains only once main has moved the shared counter, hands each message over in
 * a microtask (never inside the caller that polled), and a message reaches its handler once,
 * whether a poll or the port's listener took it; malformed ones are dropped.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { MessageChannel, type MessagePort } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { type ControlMessage, decodeControlMessage } from "../../src/shared/wire/protocol.js";
import { ControlInbox } from "../../src/worker/control-inbox.js";

const ports: MessagePort[] = [];
afterEach(() => {
  for (const port of ports.splice(0)) port.close();
});

/** An inbox over a fresh channel; `post` is main's side: the message, then the counter. */
function inbox() {
  const { port1, port2 } = new MessageChannel();
  ports.push(port1, port2);
  const flag = new SharedArrayBuffer(4);
  const posted = new Int32Array(flag);
  const handled: ControlMessage[] = [];
  const control = new ControlInbox({ port: port2, flag }, (message) => handled.push(message));
  const post = (message: unknown) => {
    port1.postMessage(message);
    Atomics.add(posted, 0, 1);
  };
  return { control, handled, post, port1, posted };
}

describe("ControlInbox", () => {
  it("a poll takes what main posted off the port at once and hands it over in a microtask", async () => {
    const { control, handled, post } = inbox();
    post({ type: "abort", sessionId: "s1", runId: 3 });
    post({ type: "abort", sessionId: "s2", runId: 1 });
    control.poll();
    // Not inside the poll: its caller (the batcher queueing an event) finishes first.
    expect(handled).toEqual([]);
    await Promise.resolve();
    expect(handled).toEqual([
      { type: "abort", sessionId: "s1", runId: 3 },
      { type: "abort", sessionId: "s2", runId: 1 },
    ]);
    // Taken by the poll, so the listener never sees them again.
    await nextTurn();
    await nextTurn();
    expect(handled).toHaveLength(2);
  });

  it("a poll with the counter unmoved takes nothing off the port", async () => {
    const { control, handled, port1 } = inbox();
    // Posted without moving the counter: only the listener, when the loop turns, delivers it.
    port1.postMessage({ type: "abort", sessionId: "s1", runId: 1 });
    control.poll();
    await Promise.resolve();
    expect(handled).toEqual([]);
    await within(() => handled.length === 1);
    expect(handled).toEqual([{ type: "abort", sessionId: "s1", runId: 1 }]);
  });

  it("an idle worker gets the messages through the port's listener, once each", async () => {
    const { control, handled, post } = inbox();
    post({ type: "abort", sessionId: "s1", runId: 1 });
    await within(() => handled.length === 1);
    // The counter moved but the listener took the message: a later poll finds the port empty.
    control.poll();
    await Promise.resolve();
    expect(handled).toEqual([{ type: "abort", sessionId: "s1", runId: 1 }]);
  });

  it("drops malformed messages", async () => {
    const { control, handled, post } = inbox();
    post({ type: "abort", sessionId: 5, runId: 1 });
    post({ type: "stop", sessionId: "s1", runId: 1 });
    post({ type: "abort", sessionId: "s1", runId: 1.5 });
    post(null);
    post({ type: "abort", sessionId: "s1", runId: 2 });
    control.poll();
    await Promise.resolve();
    expect(handled).toEqual([{ type: "abort", sessionId: "s1", runId: 2 }]);
  });
});

describe("decodeControlMessage", () => {
  it("takes an abort naming a session and an integer run id, and nothing else", () => {
    expect(decodeControlMessage({ type: "abort", sessionId: "s", runId: 0 })).toEqual({
      type: "abort",
      sessionId: "s",
      runId: 0,
    });
    for (const bad of [undefined, "abort", { type: "abort", sessionId: "s" }, { type: "abort", runId: 1 }]) {
      expect(decodeControlMessage(bad)).toBeUndefined();
    }
  });
});

/** Waits, turn by turn, until `done()` holds (at most 200 turns). */
async function within(done: () => boolean): Promise<void> {
  for (let turn = 0; turn < 200 && !done(); turn++) await nextTurn();
  expect(done()).toBe(true);
}
