/**
 * The load tool (src/worker/load/load-tool.ts), called in-process as the agent calls it in a
 * load session's worker: it fails exactly on the rolls of its session's seeded stream, answers
 * otherwise and never before its latency and CPU time have passed, honours abort during its
 * wait, and refuses options that are not a LoadToolConfig.
 */
import type { AgentTool } from "@mariozechner/pi-agent-core";
import { describe, expect, it } from "vitest";
import { type LoadToolConfig, loadToolSeed } from "../../../src/shared/load-tool.js";
import { mulberry32 } from "../../../src/shared/prng.js";
import { setup } from "../../../src/worker/load/load-tool.js";

function tool(config: Partial<LoadToolConfig> = {}): AgentTool {
  const options = { latencyMs: 0, cpuMs: 0, failureRate: 0, seed: 1, stream: 0, ...config };
  const [only] = setup({ sessionId: "s", options });
  if (only === undefined) throw new Error("setup returned no tool");
  return only;
}

/** Whether each of `count` calls failed, in order. */
async function outcomes(loadTool: AgentTool, count: number): Promise<boolean[]> {
  const failed: boolean[] = [];
  for (let call = 0; call < count; call++) {
    failed.push(
      await loadTool.execute(`id${call}`, { call }).then(
        () => false,
        () => true,
      ),
    );
  }
  return failed;
}

describe("load_tool", () => {
  it("is named load_tool and answers with its call number", async () => {
    const loadTool = tool({ cpuMs: 1, latencyMs: 1 });
    expect(loadTool.name).toBe("load_tool");
    const result = await loadTool.execute("id", { call: 3 });
    expect(result.content).toEqual([{ type: "text", text: "load_tool call 3 done." }]);
  });

  it("fails exactly on the rolls of its session's own stream of the seed", async () => {
    for (const stream of [0, 1, 7]) {
      const random = mulberry32(loadToolSeed(42, stream));
      const expected = Array.from({ length: 40 }, () => random() < 0.3);
      expect(await outcomes(tool({ failureRate: 0.3, seed: 42, stream }), 40)).toEqual(expected);
    }
    expect(await outcomes(tool({ failureRate: 1 }), 5)).toEqual([true, true, true, true, true]);
    expect(await outcomes(tool({ failureRate: 0 }), 5)).toEqual([false, false, false, false, false]);
  });

  // A Node timer counts from the loop's cached millisecond time and may fire up to 1 ms early
  // (4.1 ms for 5 ms): the tool's own time is what `agentic.toolLatencyMs` is held to.
  it("never answers before its latency and CPU time have passed on the high-resolution clock", async () => {
    const loadTool = tool({ latencyMs: 2, cpuMs: 1 });
    const times: number[] = [];
    for (let call = 0; call < 100; call++) {
      const start = performance.now();
      // Sub-millisecond work before the call moves its start within the loop's millisecond.
      const spin = start + (call % 20) / 20;
      while (performance.now() < spin) {
        // Busy on purpose, see above.
      }
      const called = performance.now();
      await loadTool.execute(`id${call}`, { call });
      times.push(performance.now() - called);
    }
    expect(Math.min(...times)).toBeGreaterThanOrEqual(3);
  });

  it("an abort during its wait rejects at once", async () => {
    const controller = new AbortController();
    const call = tool({ latencyMs: 60_000 }).execute("id", { call: 0 }, controller.signal);
    controller.abort();
    await expect(call).rejects.toThrow(/aborted/);
  });

  it.each([
    null,
    {},
    { latencyMs: -1, cpuMs: 0, failureRate: 0, seed: 0, stream: 0 },
    { latencyMs: 0, cpuMs: 0, failureRate: 2, seed: 0, stream: 0 },
  ])("refuses options %j, so the session fails to open", (options) => {
    expect(() => setup({ sessionId: "s", options })).toThrow(/load_tool options: /);
  });
});
