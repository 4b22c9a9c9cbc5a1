/**
 * Which fetch calls the worker's request capture records: only a model call's own request, made
 * while the call's window is open (request-capture.ts). The window closes when the request goes
 * out, so the capture's AsyncLocalStorage can be disabled while sessions stream; a later fetch in
 * an async context the call left behind (a tool's own request, say) is not taken for the model's.
 * With the SDK's own retries on, the window stays open for the whole call, so a retry's request is
 * recorded. In-process, with `globalThis.fetch` stubbed before the capture wraps it.
 */
import { afterAll, describe, expect, it } from "vitest";
import { installRequestCapture, RequestCapture } from "../../src/worker/request-capture/request-capture.js";

/** Status each stubbed URL answers with. */
const statuses = new Map<string, number>();
const originalFetch = globalThis.fetch;
globalThis.fetch = async (input) => new Response("{}", { status: statuses.get(String(input)) ?? 200 });
installRequestCapture();
afterAll(() => {
  globalThis.fetch = originalFetch;
});

/** A stand-in for pi-ai's event stream: `work` runs as the provider's request, `result()` is its end. */
function modelCall(work: () => Promise<void>): { result(): Promise<void> } {
  const done = work();
  return { result: () => done };
}

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 1));

describe("request capture: the window of a model call", () => {
  it("a fetch made after the call's request went out, in a context the call left behind, is not recorded", async () => {
    statuses.set("http://model.test/v1", 503);
    statuses.set("http://tool.test/", 200);
    const capture = new RequestCapture();
    let toolFetch: Promise<unknown> | undefined;
    const call = capture.run(() =>
      modelCall(async () => {
        await tick();
        const response = await fetch("http://model.test/v1");
        await response.text();
        // A timer created inside the call inherits its context; it fires after the call is over.
        toolFetch = new Promise((resolve) => setTimeout(() => resolve(fetch("http://tool.test/")), 5));
      }),
    );
    await call.result();
    await toolFetch;
    expect(capture.failure()?.status).toBe(503);
  });

  it("with the SDK's own retries on, every request of the call is recorded, the latest winning", async () => {
    statuses.set("http://model.test/first", 503);
    statuses.set("http://model.test/second", 429);
    const capture = new RequestCapture(0, true);
    const call = capture.run(() =>
      modelCall(async () => {
        await tick();
        await (await fetch("http://model.test/first")).text();
        await tick();
        await (await fetch("http://model.test/second")).text();
      }),
    );
    await call.result();
    expect(capture.failure()?.status).toBe(429);
  });

  it("a call that ends before any request leaves the next call recorded as usual", async () => {
    statuses.set("http://model.test/next", 502);
    const capture = new RequestCapture();
    await capture.run(() => modelCall(async () => tick())).result();
    expect(capture.failure()).toBeUndefined();
    await capture
      .run(() =>
        modelCall(async () => {
          await tick();
          await (await fetch("http://model.test/next")).text();
        }),
      )
      .result();
    expect(capture.failure()?.status).toBe(502);
  });
});
