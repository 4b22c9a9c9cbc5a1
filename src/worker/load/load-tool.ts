/**
 * The worker module of load runs (`lifeline load` with `--tool-calls` or `--tool-*`): gives a
 * session the one tool the built-in mock calls, `load_tool`, which spends the configured time
 * waiting and in busy CPU work in the session's worker thread, and fails with the configured
 * probability. The host names this file by URL in the session's `workerModule`, so a session that
 * is not a load session never imports it.
 *
 * Each session rolls its failures from its own PRNG stream of the run's seed, one roll per call in
 * the order the calls start: the same seed gives the same failures, whatever the other sessions do.
 */
import type { AgentTool } from "@mariozechner/pi-agent-core";
import { Type } from "@mariozechner/pi-ai";
import { checkLoadToolConfig, LOAD_TOOL_NAME, type LoadToolConfig, loadToolSeed } from "../../shared/load-tool.js";
import { mulberry32 } from "../../shared/prng.js";
import type { WorkerModuleContext } from "../../shared/worker-module.js";

/**
 * The worker-module entry: the session's load tool.
 * @throws Error when `options` is not a {@link LoadToolConfig}; the session then fails to open
 *   with ERR_WORKER_MODULE.
 */
export function setup(context: WorkerModuleContext): AgentTool[] {
  const config = checkLoadToolConfig(context.options);
  if (typeof config === "string") throw new Error(`load_tool options: ${config}`);
  return [loadTool(config)];
}

function loadTool(config: LoadToolConfig): AgentTool {
  const random = mulberry32(loadToolSeed(config.seed, config.stream));
  return {
    name: LOAD_TOOL_NAME,
    label: "Load tool",
    description: "A tool of a load test: waits, works, and answers. Call it when asked to.",
    parameters: Type.Object({ call: Type.Optional(Type.Integer()) }),
    async execute(_toolCallId, params, signal) {
      // Rolled as the call starts, before any wait, so the sequence follows the calls' order.
      const fails = random() < config.failureRate;
      if (config.latencyMs > 0) await wait(config.latencyMs, signal);
      busy(config.cpuMs);
      const call = (params as { call?: number }).call ?? 0;
      if (fails) throw new Error(`load_tool call ${call} failed (a simulated failure, --tool-failure).`);
      return { content: [{ type: "text", text: `load_tool call ${call} done.` }], details: { call } };
    },
  };
}

/** Keeps the thread busy for `ms`: synchronous work, as a tool that parses or computes. */
function busy(ms: number): void {
  if (ms <= 0) return;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // Busy on purpose: this is the CPU time the run asked the tool to cost its worker.
  }
}

/**
 * Resolves once `ms` have passed on the high-resolution clock; rejects at once when `signal`
 * aborts (the prompt was aborted). A Node timer counts from the event loop's cached millisecond
 * time, so it can fire up to a millisecond before `ms` have passed (4.1 ms for a 5 ms timer):
 * the wait is re-armed for what is left, so a call never waits less than `--tool-latency`.
 */
function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) return reject(new Error("load_tool aborted."));
    const end = performance.now() + ms;
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error("load_tool aborted."));
    };
    const arm = () => {
      const left = end - performance.now();
      if (left <= 0) {
        signal?.removeEventListener("abort", onAbort);
        resolve();
        return;
      }
      timer = setTimeout(arm, Math.ceil(left));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    arm();
  });
}
