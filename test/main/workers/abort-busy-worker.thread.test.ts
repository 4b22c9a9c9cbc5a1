/**
 * abort() of a run that cannot end at once, on a worker busy streaming for another session: the
 * `abort` call waits on the worker's port past its control bound (2 s), and the run is not over
 * (its tool ignores the abort signal and its timer cannot fire while the worker's loop is held).
 * Such a worker still posts batches for its other session: it is busy, not stuck in synchronous
 * code, and abort() must wait for it (worker-link.ts `abort`) rather than terminate it, which
 * would restore every session on it on a fresh worker (at 10,000 sessions a load run's end
 * aborted them all at once and had the worker killed: docs/performance-history.md "(m)").
 *
 * A real worker thread (the host's pool, `threads: 1`) serves a probe in a 1.5 s `nap` tool
 * (test/fixtures/tool-module.mjs) and a flooder whose deltas go to two text blocks
 * (test/fixtures/flood-provider.mjs, `blocks: 2`), so the worker keeps posting full batches while
 * its loop does not come back to its port; and again with the flood's deltas all merged
 * (`blocks: 1`), so the worker posts no batch at all until the flood ends, and what shows it alive
 * is the heartbeat it posts from inside the long task once nothing went out for `signOfLifeMs`
 * (serve-worker.ts). Before that sign of life, this worker was terminated at the control bound.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SessionHost, SessionHostOptions } from "../../../dist/main/index.js";
import { within } from "../../fixtures/bounded.js";
import { nextEvent } from "../../fixtures/events.js";
import { DONE, FLOOD_MODEL, FLOOD_MODULE, floodStarted, STOP } from "../../fixtures/flood.js";
import { workerApiModel } from "../../fixtures/models.mjs";
import { realHost as sharedRealHost } from "../../fixtures/real-host.js";

const TOOL_MODULE = new URL("../../fixtures/tool-module.mjs", import.meta.url);
const TOOLS_MODEL = workerApiModel("lifeline-test-tools", "tools-1");
/** The host's bound on an `abort` call (host-options.ts, CONTROL_TIMEOUT_MS). */
const CONTROL_BOUND_MS = 2000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function realHost(options: SessionHostOptions = {}): SessionHost {
  return sharedRealHost(cleanups, "lifeline-abort-busy-", options);
}

describe("abort() of a run that outlasts the control bound on a busy worker", () => {
  it.each([
    { blocks: 2, how: "still posting full batches" },
    // Every delta merges into one queued item, so no batch fills and the worker's timers (the
    // batcher's flush, its heartbeat) cannot run: only the sign of life posted from inside the
    // long task (serve-worker.ts `stillHere`) shows it making progress.
    { blocks: 1, how: "posting no batch until the flood ends" },
  ])(
    "X3/X8: the worker, $how, is not terminated; abort() resolves once the run is over, and no session is restored",
    async ({ blocks }) => {
      const host = realHost({ threads: 1 });
      const probe = await host.createSession({ model: TOOLS_MODEL, workerModule: TOOL_MODULE });
      const shared = new SharedArrayBuffer(16);
      const slots = new Int32Array(shared);
      const flooder = await host.createSession({
        model: FLOOD_MODEL,
        workerModule: FLOOD_MODULE,
        workerModuleOptions: { shared, blocks },
      });
      expect(host.workerCount).toBe(1);
      const restored: string[] = [];
      for (const session of [probe, flooder]) {
        session.subscribe((event) => {
          if (event.type === "session_restored") restored.push(event.reason);
        });
      }

      const inTool = nextEvent(probe, "tool_execution_start");
      const probePrompt = probe.prompt("[nap=1500]");
      probePrompt.catch(() => {});
      await within(inTool, 5000, "the probe's nap tool to start");
      const flood = flooder.prompt("flood");
      flood.catch(() => {});
      await floodStarted(slots);

      let abortDone = false;
      const aborted = probe.abort().finally(() => {
        abortDone = true;
      });
      aborted.catch(() => {});
      // Past the control bound, with the flood still running: the run cannot be over (its tool's
      // timer needs the loop) and the call is unanswered, yet the worker keeps posting batches.
      await new Promise((resolve) => setTimeout(resolve, CONTROL_BOUND_MS + 1000));
      expect(Atomics.load(slots, DONE)).toBe(0);
      expect(abortDone).toBe(false);
      expect(restored).toEqual([]);

      Atomics.store(slots, STOP, 1);
      await within(aborted, 10_000, "abort() to resolve once the flood ends");
      const result = await within(probePrompt, 10_000, "the probe's prompt to settle");
      expect(result.stopReason).toBe("aborted");
      const answer = await within(flood, 10_000, "the flooding prompt to finish");
      expect(answer.stopReason).toBe("stop");
      expect(restored).toEqual([]);
    },
    40_000,
  );
});
