/**
 * An aborted model request under the worker's request capture (request-capture.ts,
 * event-stream-watch.ts), over real HTTP on 127.0.0.1: the consumer's pending read of the event
 * stream fails with the abort's reason before the fetch tears its connection down, and the
 * connection is still closed (X3): when the session says its run's end is posted
 * (`tearDownAborted`), else on the next macrotask. Why it matters: the fetch's teardown is most of
 * the worker's CPU between an `abort()` and the run's end, so the aborted run's `run_end` goes out
 * first (section (l) of docs/performance-history.md). The abort records no failure. In-process, with the
 * real `fetch` spied on (the signal it is handed) before the capture wraps it.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installRequestCapture, RequestCapture } from "../../src/worker/request-capture/request-capture.js";
import { within } from "../fixtures/bounded.js";

/** The signals the real fetch was handed, in call order. */
const fetchSignals: (AbortSignal | undefined)[] = [];
const originalFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  fetchSignals.push(init?.signal ?? undefined);
  return originalFetch(input, init);
};
installRequestCapture();

let server: Server;
let url: string;
/** Resolves when the server sees the request's connection closed. */
let closed: Promise<void>;

beforeAll(async () => {
  server = createServer((req, res) => {
    closed = new Promise((resolve) => res.once("close", () => resolve()));
    res.writeHead(200, { "content-type": "text/event-stream" });
    // One chunk, then the stream stays open until the client leaves.
    res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "Hi" } }] })}\n\n`);
    req.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
});

afterAll(async () => {
  globalThis.fetch = originalFetch;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/**
 * Opens the server's event stream inside `capture`, as pi-ai's provider would (its request starts
 * inside the capture), and reads the first chunk; returns the reader, its next read pending.
 */
async function openStream(
  capture: RequestCapture,
  controller: AbortController,
): Promise<ReadableStreamDefaultReader<Uint8Array>> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const call = capture.run(() => {
    const done = (async () => {
      const response = await fetch(url, { method: "POST", body: "{}", signal: controller.signal });
      if (response.body === null) throw new Error("no body");
      reader = response.body.getReader();
      await reader.read();
    })();
    return { result: () => done };
  });
  await within(call.result(), 5_000, "the first chunk");
  if (reader === undefined) throw new Error("no reader");
  return reader;
}

describe("request capture: an aborted event stream", () => {
  it("fails the consumer's pending read with the abort's reason before the fetch's teardown, then closes the connection", async () => {
    const capture = new RequestCapture();
    const controller = new AbortController();
    const reader = await openStream(capture, controller);
    const fetchSignal = fetchSignals.at(-1);
    expect(fetchSignal).toBeDefined();

    const pending = reader.read();
    let fetchAbortedAtRejection: boolean | undefined;
    const rejected = pending.then(
      () => undefined,
      (error: unknown) => {
        fetchAbortedAtRejection = fetchSignal?.aborted;
        return error;
      },
    );
    controller.abort();
    const error = await within(rejected, 5_000, "the pending read to fail");

    expect(error).toBe(controller.signal.reason);
    // The read failed while the fetch had not been aborted yet: its teardown comes after, when
    // the session has posted its run's end (tearDownAborted), else on the next macrotask.
    expect(fetchAbortedAtRejection).toBe(false);
    capture.tearDownAborted();
    expect(fetchSignal?.aborted).toBe(true);
    // X3: the connection is still closed.
    await within(closed, 5_000, "the server to see the connection closed");
    // An abort is not a failure of the request.
    expect(capture.failure()).toBeUndefined();
  });

  it("left alone, an aborted request's connection is closed on the next macrotask", async () => {
    const capture = new RequestCapture();
    const controller = new AbortController();
    const reader = await openStream(capture, controller);
    const fetchSignal = fetchSignals.at(-1);
    const pending = reader.read().catch(() => {});
    controller.abort();
    await new Promise((resolve) => setImmediate(resolve));
    expect(fetchSignal?.aborted).toBe(true);
    await within(closed, 5_000, "the server to see the connection closed");
    await pending;
  });

  it("a request aborted before it is sent is refused by the fetch, as without the capture", async () => {
    const capture = new RequestCapture();
    const controller = new AbortController();
    controller.abort();
    const call = capture.run(() => {
      const done = fetch(url, { method: "POST", body: "{}", signal: controller.signal }).then(() => undefined);
      return { result: () => done };
    });
    await expect(within(call.result(), 5_000, "the refused fetch")).rejects.toBe(controller.signal.reason);
  });
});
