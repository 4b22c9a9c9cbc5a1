/**
 * Section (f): how many sessions one machine drives with `lifeline load` before the host's event
 * loop, not the mock or the workers, becomes the limit.
 *
 * Each size N runs in a fresh process: `runLoad()` with N sessions prompting for WINDOW_S seconds
 * against the built-in mock server (in its own thread, 32 tokens per answer, 5 ms apart), no
 * faults, the host's default threads, no report files. Measured in that process around the run:
 * the main thread's event-loop utilization (ELU: the share of time the loop was busy), and from
 * the report the loop delay (p99, max), the throughput and the time to first token.
 *
 * The baseline is the smallest size of the same run: each size's loop p99 is printed as a ratio
 * of it. How to read it: while the main thread's ELU stays well below 1 and its p99 stays small,
 * the host is not the limit, whatever the throughput does; a throughput that stops growing with
 * N then means the workers or the mock (which share the machine's cores) are.
 */
import { performance } from "node:perf_hooks";
import { pick, report, runChild } from "./lib.mjs";

const SIZES = pick([50, 250, 500, 1000, 2000, 4000], [50, 500]);
const WINDOW_S = pick(15, 5);
const RAMP_S = pick(2, 1);

async function variant(n) {
  const { runLoad } = await import("../dist/main/load/index.js");
  const elu0 = performance.eventLoopUtilization();
  const started = performance.now();
  const { report: r } = await runLoad({
    sessions: n,
    durationMs: WINDOW_S * 1000,
    rampUpMs: RAMP_S * 1000,
    outDir: false,
    lifelineDir: false,
  });
  const wallMs = performance.now() - started;
  const elu = performance.eventLoopUtilization(elu0).utilization;
  return {
    sessions: n,
    wallMs,
    mainElu: elu,
    loopDelayMs: r.loopDelayMs,
    promptsSucceeded: r.totals.prompts.succeeded,
    promptsPerS: r.totals.prompts.succeeded / (r.durationMs / 1000),
    requestsPerS: r.throughput.requestsPerSecond,
    outputTokensPerS: r.throughput.outputTokensPerSecond,
    ttftP50: r.latency.ttftMs.p50,
    ttftP99: r.latency.ttftMs.p99,
    e2eP50: r.latency.e2eMs.p50,
    failureRate: r.totals.failureRate,
    mockReceived: r.mock?.received ?? null,
    requestsSent: r.totals.requests.sent,
    // Requests of prompts cut by the window's end; some never reached the mock.
    requestsAborted: r.totals.requests.failuresByKind.aborted ?? 0,
  };
}

const [n] = process.argv.slice(2);
if (n !== undefined) {
  report(await variant(Number(n)));
} else {
  const runs = [];
  for (const size of SIZES) {
    process.stderr.write(`  (f) lifeline load, ${size} sessions for ${WINDOW_S} s …\n`);
    runs.push(await runChild("./load-scale.mjs", [String(size)]));
  }
  report({ section: "f", config: { SIZES, WINDOW_S, RAMP_S }, runs });
}
