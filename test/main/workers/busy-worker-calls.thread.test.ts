/**
 * A call to a worker that is busy but alive is not a hang (X8): a real worker thread (the host's
 * pool, `threads: 1`) serves a flooder, whose model (test/fixtures/flood-provider.mjs, two text
 * blocks) keeps the worker's loop away from its port while it keeps posting full batches, and a
 * neighbour, whose prompt's `startRun` waits on the port behind the flood for longer than
 * `callTimeoutMs`. The worker must not be terminated for it: the neighbour's run starts when the
 * flood ends, and neither session is restored. Before liveness decided (worker-link.ts `call`),
 * the unanswered `startRun` had the worker terminated as hung at `callTimeoutMs`, and both
 * sessions restored on a fresh worker: at 5,000 and 10,000 sessions in bench (m), every session.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SessionHost, SessionHostOptions } from "../../../dist/main/index.js";
import { within } from "../../fixtures/bounded.js";
import { DONE, FLOOD_MODEL, FLOOD_MODULE, floodStarted, STOP } from "../../fixtures/flood.js";
import { realHost as sharedRealHost } from "../../fixtures/real-host.js";

const CALL_TIMEOUT_MS = 500;
/** How long the flood holds the port: well past one call timeout, within the bound of a live worker's call (4 periods). */
const FLOOD_MS = 1300;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function realHost(options: SessionHostOptions = {}): SessionHost {
  return sharedRealHost(cleanups, "lifeline-busy-calls-", options);
}

describe("a call queued behind a busy worker's backlog", () => {
  it("X8: a worker that keeps sending is not terminated when a call waits longer than callTimeoutMs; the call is answered when the backlog clears", async () => {
    const host = realHost({ threads: 1, callTimeoutMs: CALL_TIMEOUT_MS });
    const shared = new SharedArrayBuffer(16);
    const slots = new Int32Array(shared);
    const flooder = await host.createSession({
      model: FLOOD_MODEL,
      workerModule: FLOOD_MODULE,
      workerModuleOptions: { shared, blocks: 2 },
    });
    const neighbour = await host.createSession({ model: "demo/demo-fast" });
    expect(host.workerCount).toBe(1);
    const types: string[] = [];
    let batchesDuringFlood = 0;
    flooder.subscribe((event) => {
      types.push(`flooder:${event.type}`);
      if (event.type === "message_update" && Atomics.load(slots, DONE) === 0) batchesDuringFlood++;
    });
    neighbour.subscribe((event) => types.push(`neighbour:${event.type}`));

    const flood = flooder.prompt("flood");
    flood.catch(() => {});
    await floodStarted(slots);
    // Its startRun now waits on the port behind the flood.
    const asked = neighbour.prompt("are you there?");
    asked.catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, FLOOD_MS));
    expect(Atomics.load(slots, DONE)).toBe(0);
    // The worker was visibly alive: the flood's batches reached the main thread meanwhile.
    expect(batchesDuringFlood).toBeGreaterThan(0);
    Atomics.store(slots, STOP, 1);

    const answer = await within(asked, 10_000, "the neighbour's prompt after the flood");
    expect(answer.stopReason).toBe("stop");
    expect(answer.retries).toBe(0);
    expect((await within(flood, 10_000, "the flooding prompt")).stopReason).toBe("stop");
    expect(types.filter((type) => type.endsWith(":session_restored"))).toEqual([]);
    expect(host.workerCount).toBe(1);
  }, 30_000);
});
