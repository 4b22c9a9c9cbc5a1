/**
 * abort() on a worker whose loop does not come back to its port: the early abort of the control
 * channel (shared/wire/protocol.ts `ControlChannel`, worker/control-inbox.ts) reaches the run between
 * two of another session's events, and the aborted run's end is posted at once.
 *
 * A real worker thread (the host's pool, `threads: 1`) serves two sessions: a probe whose model is
 * a real HTTP server on 127.0.0.1 that stalls after its first chunk, and a flooder whose model
 * (test/fixtures/flood-provider.mjs) sends deltas while yielding to microtasks only, so that the
 * worker handles no port message, timer or comlink call until the test ends the flood. The probe
 * must settle as aborted, and abort() resolve, while the flood still runs; and the worker must not
 * be terminated as hung when the `abort` call, still queued behind the flood, passes its control
 * bound. Without the control channel the call waits on the port until that bound has the worker
 * terminated and the sessions restored on a fresh one.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { SessionHost, SessionHostOptions } from "../../../dist/main/index.js";
import { within } from "../../fixtures/bounded.js";
import { nextEvent } from "../../fixtures/events.js";
import { DELTAS, DONE, FLOOD_MODEL, FLOOD_MODULE, floodStarted, STOP } from "../../fixtures/flood.js";
import { mockModel, SSE_HEADERS, sseChunk } from "../../fixtures/models.mjs";
import { realHost as sharedRealHost } from "../../fixtures/real-host.js";

/** The host's bound on an `abort` call (host-options.ts, CONTROL_TIMEOUT_MS). */
const CONTROL_BOUND_MS = 2000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A host on the real pool, isolated from any user or project settings file. */
function realHost(options: SessionHostOptions = {}): SessionHost {
  return sharedRealHost(cleanups, "lifeline-abort-load-", options);
}

/** A server that answers one SSE chunk and then stalls; `closed` resolves when the client leaves. */
async function stallingServer(): Promise<{ port: number; requestSeen: Promise<void>; closed: Promise<void> }> {
  let seen: () => void = () => {};
  let left: () => void = () => {};
  const requestSeen = new Promise<void>((resolve) => {
    seen = resolve;
  });
  const closed = new Promise<void>((resolve) => {
    left = resolve;
  });
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    res.on("close", () => left());
    res.writeHead(200, SSE_HEADERS);
    res.write(sseChunk({ role: "assistant", content: "Hel" }));
    seen();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { port: (server.address() as AddressInfo).port, requestSeen, closed };
}

describe("abort() while the worker's loop is held by another session's stream", () => {
  it("X3: the prompt settles as aborted before the flood ends, no event of it follows, and the flooding session finishes its answer", async () => {
    const server = await stallingServer();
    const host = realHost({ threads: 1 });
    const probe = await host.createSession({ model: mockModel(server.port), apiKey: "dummy" });
    const shared = new SharedArrayBuffer(16);
    const slots = new Int32Array(shared);
    const flooder = await host.createSession({
      model: FLOOD_MODEL,
      workerModule: FLOOD_MODULE,
      workerModuleOptions: { shared },
    });
    expect(host.workerCount).toBe(1);

    const probeEvents: string[] = [];
    let settled = false;
    probe.subscribe((event) => {
      // Anything after agent_settled would be an event of the aborted run arriving late.
      probeEvents.push(settled ? `late:${event.type}` : event.type);
      if (event.type === "agent_settled") settled = true;
    });
    const firstDelta = nextEvent(probe, "message_update");
    const probePrompt = probe.prompt("hold this request open");
    probePrompt.catch(() => {});
    await within(server.requestSeen, 5000, "the server to see the probe's request");
    await within(firstDelta, 5000, "the probe's first delta on the main thread");

    const flooderEvents: string[] = [];
    flooder.subscribe((event) => flooderEvents.push(event.type));
    const flood = flooder.prompt("flood");
    flood.catch(() => {});
    await floodStarted(slots);

    const aborted = probe.abort();
    aborted.catch(() => {});
    const result = await within(probePrompt, 5000, "the probe's prompt to settle during the flood");
    // The flood was still running when the prompt settled, and the worker was not terminated as
    // hung to get there (X8's control bound, which an abort queued behind the flood would reach).
    expect(Atomics.load(slots, DONE)).toBe(0);
    expect(result.stopReason).toBe("aborted");
    expect(probeEvents).not.toContain("session_restored");
    // abort() resolves on the run's end too: the worker acted on it, though its call is unanswered.
    await within(aborted, 5000, "abort() to resolve during the flood");
    expect(Atomics.load(slots, DONE)).toBe(0);

    // The abort call stays queued behind the flood past its control bound (2 s): a worker that
    // ended the run is slow to come back to its port, not stuck, and is not terminated for it.
    await new Promise((resolve) => setTimeout(resolve, CONTROL_BOUND_MS + 1000));
    expect(Atomics.load(slots, DONE)).toBe(0);
    Atomics.store(slots, STOP, 1);
    await within(server.closed, 5000, "the server to see the probe's connection close");
    const answer = await within(flood, 10_000, "the flooding prompt to finish");
    expect(answer.stopReason).toBe("stop");
    expect(answer.retries).toBe(0);
    expect(flooderEvents).not.toContain("session_restored");
    const deltas = Atomics.load(slots, DELTAS);
    expect(deltas).toBeGreaterThan(0);
    const text = (answer.message?.content ?? []).map((block) => (block.type === "text" ? block.text : "")).join("");
    expect(text).toBe("x".repeat(deltas));

    // Once the flooder's answer is in, everything the worker sent before it has been delivered too.
    expect(probeEvents.filter((type) => type.startsWith("late:"))).toEqual([]);
    expect(probeEvents.filter((type) => type === "agent_settled")).toHaveLength(1);
  }, 30_000);
});
