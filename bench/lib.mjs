/**
 * Helpers shared by the benchmark sections. Plain ESM; imports the built package from ../dist.
 *
 * Every section is a script that runs in its own process (bench/run.mjs spawns it) and ends by
 * printing one line `BENCH_RESULT <json>` that run.mjs collects.
 */
import { fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSessionHost } from "../dist/main/index.js";

/** BENCH_QUICK=1 shrinks every count (smoke runs; figures are noisier). */
export const QUICK = process.env.BENCH_QUICK === "1";

/** Picks the full or the quick value. */
export const pick = (full, quick) => (QUICK ? quick : full);

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * process.hrtime's clock (CLOCK_MONOTONIC) in seconds: the clock of `perf record -k CLOCK_MONOTONIC`,
 * on which (l) and (m) record their slowest moments for stall-perf.mjs.
 */
export const hrSeconds = () => Number(process.hrtime.bigint()) / 1e9;

/**
 * CPU time of the calling process's main thread, in nanoseconds.
 *
 * `process.cpuUsage()` counts every thread of the process (the worker threads too), so it cannot
 * tell main-thread cost apart. On Linux the main thread's own run time is the first field of
 * /proc/<pid>/task/<pid>/schedstat (ns, scheduler-accounted). Elsewhere this falls back to the
 * event loop's active time (performance.eventLoopUtilization), which is close for a thread that
 * does no blocking I/O.
 */
const SCHEDSTAT = `/proc/${process.pid}/task/${process.pid}/schedstat`;
let schedstatWorks;
function mainThreadCpuNs() {
  if (schedstatWorks !== false) {
    try {
      const ns = Number(readFileSync(SCHEDSTAT, "utf8").split(" ")[0]);
      schedstatWorks = true;
      return ns;
    } catch {
      schedstatWorks = false;
    }
  }
  return performance.eventLoopUtilization().active * 1e6;
}

/**
 * Time the main thread spent runnable but waiting for a CPU (second schedstat field, ns): how
 * much the other threads and processes crowded it out. NaN where schedstat is unavailable.
 */
function mainThreadRunqueueWaitNs() {
  try {
    return Number(readFileSync(SCHEDSTAT, "utf8").split(" ")[1]);
  } catch {
    return Number.NaN;
  }
}

/** Which clock mainThreadCpuNs uses. */
export function cpuClockName() {
  mainThreadCpuNs();
  return schedstatWorks ? "main-thread schedstat" : "event-loop active time";
}

/** A CPU + event-loop-utilisation stopwatch for the main thread. */
export function startMeter() {
  const wait0 = mainThreadRunqueueWaitNs();
  const cpu0 = mainThreadCpuNs();
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  return () => {
    const cpuNs = mainThreadCpuNs() - cpu0;
    const waitNs = mainThreadRunqueueWaitNs() - wait0;
    const elu = performance.eventLoopUtilization(elu0);
    return { cpuNs, waitNs, eluActiveMs: elu.active, elu: elu.utilization, wallMs: performance.now() - t0 };
  };
}

/** Percentile of an array of numbers (nearest rank). Sorts a copy. */
function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export function summarize(values) {
  const sum = values.reduce((a, b) => a + b, 0);
  return {
    n: values.length,
    p50: percentile(values, 50),
    p90: percentile(values, 90),
    p99: percentile(values, 99),
    max: Math.max(...values),
    mean: sum / values.length,
  };
}

/** An isolated host: settings files in a fresh temp dir, short retry base delay. */
export async function makeHost(extra = {}) {
  const dir = await mkdtemp(join(tmpdir(), "lifeline-bench-"));
  const host = createSessionHost({
    lifelineDir: dir,
    cwd: dir,
    settings: { retry: { baseDelayMs: 10 } },
    ...extra,
  });
  const close = async () => {
    await host.close();
    await rm(dir, { recursive: true, force: true });
  };
  return { host, dir, close };
}

/** A pi-ai model object for an OpenAI-compatible mock server on 127.0.0.1:`port`. */
export { mockModel } from "../test/fixtures/models.mjs";

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function mapLimit(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index], index);
    }
  });
  await Promise.all(lanes);
  return results;
}

/** Prints the section's result for run.mjs (last line of stdout). */
export function report(result) {
  process.stdout.write(`BENCH_RESULT ${JSON.stringify(result)}\n`);
}

/** Forces a full collection (needs --expose-gc); a few passes let finalizers and weak refs settle. */
export async function fullGc() {
  if (typeof globalThis.gc !== "function") throw new Error("run with node --expose-gc");
  for (let i = 0; i < 4; i++) {
    globalThis.gc();
    await sleep(20);
  }
}

/**
 * Runs a bench script in a fresh Node process (same flags as this one, so --expose-gc carries
 * over, plus `execArgv`, e.g. a profiler's flags), streams its stderr through, and resolves with
 * its BENCH_RESULT object.
 */
export async function runChild(script, args = [], { echo = false, execArgv = [] } = {}) {
  const { spawn } = await import("node:child_process");
  const { fileURLToPath } = await import("node:url");
  const file = fileURLToPath(new URL(script, import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, ...execArgv, file, ...args], {
      stdio: ["ignore", "pipe", "inherit"],
      env: process.env,
    });
    let out = "";
    child.stdout.on("data", (data) => {
      out += data;
      if (echo) process.stdout.write(data);
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      const line = out.split("\n").find((l) => l.startsWith("BENCH_RESULT "));
      if (code !== 0 || line === undefined) {
        reject(new Error(`${script} ${args.join(" ")} exited with ${signal ?? code}\n${out.slice(-2000)}`));
        return;
      }
      resolve(JSON.parse(line.slice("BENCH_RESULT ".length)));
    });
  });
}

/** CPU time (ns) of each thread of this process, by tid; empty where /proc is missing. */
export async function threadCpu() {
  const out = new Map();
  try {
    for (const tid of await readdir("/proc/self/task")) {
      try {
        out.set(tid, Number((await readFile(`/proc/self/task/${tid}/schedstat`, "utf8")).split(" ")[0]));
      } catch {
        // the thread ended between the listing and the read
      }
    }
  } catch {
    // not Linux
  }
  return out;
}

/**
 * The built-in mock in a process of its own (bench/mock-child.mjs) serving `script`, so that its
 * CPU and memory are neither side's of a comparison. Resolves with its port and `stop()`.
 */
export async function startMockChild(script) {
  const child = fork(fileURLToPath(new URL("./mock-child.mjs", import.meta.url)), [], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    execArgv: [],
    env: { ...process.env, MOCK_SCRIPT: JSON.stringify(script) },
  });
  const port = await new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`mock child exited with ${code}`)));
    child.on("message", (message) => {
      if (message.port !== undefined) resolve(message.port);
    });
  });
  const stop = async () => {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.disconnect();
    await exited;
  };
  return { port, stop };
}

/**
 * Runs `script` (a bench file beside this one) once per side and rep, each in a fresh child
 * process, alternating which side goes first (baseline first on odd reps), as `script baseline N`
 * and `script lifeline N`; resolves with every run's report plus its `rep` and `side`.
 */
export async function alternateSides(section, script, reps, n) {
  const runs = [];
  for (let rep = 1; rep <= reps; rep++) {
    const order = rep % 2 === 1 ? ["baseline", "lifeline"] : ["lifeline", "baseline"];
    for (const side of order) {
      process.stderr.write(
        `  (${section}) run ${rep}/${reps}: ${side}, ${n} sessions … (loadavg ${loadavg()[0].toFixed(2)})\n`,
      );
      runs.push({ rep, side, ...(await runChild(script, [side, String(n)])) });
    }
  }
  return runs;
}

/**
 * Opening `host`'s sessions with `options`, 32 at a time: `open(count)` resolves with them;
 * `warmUp(count)` opens that many, prompts each once and disposes them, so that the worker and
 * the code paths a batch takes are warm before anything is measured.
 */
export function sessionOpener(host, options) {
  const open = (count) =>
    mapLimit(
      Array.from({ length: count }, (_, i) => i),
      32,
      () => host.createSession(options),
    );
  const warmUp = async (count) => {
    const warm = await open(count);
    await Promise.all(warm.map((s, i) => s.prompt(`warm-up ${i}: answer me`)));
    await Promise.all(warm.map((s) => s.dispose()));
  };
  return { open, warmUp };
}
