/**
 * Section (i)'s process-CPU part, one run: `telemetry-prompts.mjs <off|api|sdk> <n>` runs section
 * (o)'s lifeline side (bench/prompt-workload.mjs: n sessions prompted at once, each answered with
 * a 503, then 200 tokens over HTTP/SSE) on a host in that telemetry mode (telemetry-modes.mjs) and
 * reports its process CPU per prompt, counted from the first prompt to the last settle plus, in
 * sdk mode, a flush of what the providers still hold (so the export work of every prompt falls in
 * the window). Meant to run in a fresh process (section (i) spawns it), so the CPU is this run's.
 */
import { report } from "./lib.mjs";
import { lifelineSide, WARM } from "./prompt-workload.mjs";
import { telemetryFor } from "./telemetry-modes.mjs";

const [mode, arg] = process.argv.slice(2);
const n = Number(arg);
if (!Number.isInteger(n) || n <= 0) throw new Error("usage: telemetry-prompts.mjs <off|api|sdk> <sessions>");
// A collection every 10 s: a common setting (the SDK's default is 60 s); over a run of some 20 s
// that is two, plus the flush at the end of the window.
const telemetry = await telemetryFor(mode, { exportIntervalMillis: 10_000 });
const result = await lifelineSide(n, { hostOptions: telemetry.options, afterBatch: telemetry.flush });
await telemetry.shutdown();
report({
  mode,
  ...result,
  // Spans the sink received per prompt, warm-up included (4 expected in sdk mode: invoke_agent,
  // lifeline.retry_chain and the two chat spans); 0 in the other modes.
  spansPerPrompt: telemetry.exported.spans / (WARM + n),
  metricExports: telemetry.exported.metricExports,
});
