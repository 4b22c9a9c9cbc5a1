/**
 * Section (n): worker threads. What one more worker buys, what a worker costs, and where the main
 * thread would saturate: the measurements the default `threads` rule (HOST_DEFAULTS.threads in
 * src/main/host/host-options.ts) is chosen from.
 *
 * Workloads, each a batch of N prompts started at once on N fresh sessions (each session one
 * prompt with its own text, so each has its own conversation key and its own step cursor in the
 * mock), run with threads = 1, 2 (and 3 where the machine has at least 4 cores), each in a fresh
 * process, interleaved, REPS times; the tables take the median run:
 *   stream — the built-in mock server as a separate process (`lifeline mock-server`), each
 *            conversation a 503 and then 200 tokens 2 ms apart (~500 tokens/s): real HTTP/SSE, a
 *            retry on the main thread, the issue's workload.
 *   fast   — demo/demo-fast, `[fail=1][words=200]`: one transient failure, then 200 words, no
 *            HTTP and no mock process: the worker's CPU is all the work, so this shows what a
 *            second worker buys when the cores are free for it.
 * Before the measured batch, a warm-up batch on WARM sessions (disposed) lets each worker's JIT
 * settle, so the batch measures the steady state rather than compilation.
 *
 * Measured over the batch (first prompt() to last settle): wall time, prompts/s, main-thread CPU
 * (its own schedstat), each worker thread's CPU (the schedstat of the threads that appeared when
 * the host started its workers, the libuv pool having been started before), the whole process's
 * CPU, the listeners' events and deliveries (a run of listener calls with no microtask checkpoint
 * between them: one batch message from a worker), the main loop's delay (1 ms resolution: p99 and
 * max), RSS at its peak (sampled every 50 ms) and the main thread's ELU. Ratios are against
 * threads = 1 of the same workload in the same run.
 *
 * "idle" child: the fixed cost of a worker. A host with threads = 4 opens sessions one by one;
 * the first four each start a worker, the fifth joins one. Startup = a worker-starting open minus
 * the joining open; RSS per idle worker = RSS growth from one worker to four, after GC, ÷ 3.
 *
 * Linux only for the per-thread CPU (/proc/self/task); elsewhere the worker columns read NaN.
 */
import { fork } from "node:child_process";
import { pbkdf2 } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import {
  fullGc,
  makeHost,
  mapLimit,
  median,
  mockModel,
  pick,
  report,
  runChild,
  sleep,
  startMeter,
  threadCpu,
} from "./lib.mjs";

const N = pick(1000, 200);
const WARM = pick(100, 40);
const REPS = pick(2, 1);
const TOKENS = 200;
const WORKLOADS = ["stream", "fast"];
const THREADS = availableParallelism() >= 4 ? [1, 2, 3] : [1, 2];
const CLI = fileURLToPath(new URL("../dist/main/cli.js", import.meta.url));

// ---------------------------------------------------------------- per-thread CPU

/** Starts all of libuv's pool threads now, so that threads appearing later are the workers. */
async function startLibuvPool() {
  await Promise.all(
    Array.from({ length: 8 }, () => new Promise((resolve) => pbkdf2("a", "b", 1000, 32, "sha256", resolve))),
  );
}

// ---------------------------------------------------------------- the mock server process

/** `lifeline mock-server` in a child process with `script`; resolves with its port and a stop. */
async function startMock(script) {
  const dir = await mkdtemp(join(tmpdir(), "lifeline-bench-mock-"));
  const file = join(dir, "script.json");
  await writeFile(file, JSON.stringify(script));
  const child = fork(CLI, ["mock-server", "--port", "0", "--script", file], {
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  const port = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (data) => {
      out += data;
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`mock server exited with ${code}`)));
  });
  const stop = async () => {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
  return { port, stop };
}

// ---------------------------------------------------------------- one run

async function batchRun(workload, threads) {
  await startLibuvPool();
  const mock =
    workload === "fast"
      ? undefined
      : await startMock({
          conversations: [{ match: "", steps: [503, { type: "ok", tokens: TOKENS, tokenDelayMs: 2 }] }],
        });
  const sessionOptions =
    mock === undefined ? { model: "demo/demo-fast" } : { model: mockModel(mock.port), apiKey: "dummy" };
  const text = (tag, i) => (mock === undefined ? `[fail=1][words=${TOKENS}] ${tag} ${i}` : `${tag} ${i}: answer me`);
  const tidsBefore = new Set((await threadCpu()).keys());
  const { host, close } = await makeHost({ threads });

  // Warm-up: every worker started and its JIT settled on a smaller batch, then those sessions go.
  const warm = await mapLimit(
    Array.from({ length: WARM }, (_, i) => i),
    32,
    () => host.createSession(sessionOptions),
  );
  await Promise.all(warm.map((s, i) => s.prompt(text("warm-up", i))));
  await Promise.all(warm.map((s) => s.dispose()));

  const sessions = await mapLimit(
    Array.from({ length: N }, (_, i) => i),
    32,
    () => host.createSession(sessionOptions),
  );
  const counts = { events: 0, deliveries: 0 };
  let inDelivery = false;
  const endDelivery = () => {
    inDelivery = false;
  };
  const listener = () => {
    counts.events++;
    if (!inDelivery) {
      inDelivery = true;
      counts.deliveries++;
      queueMicrotask(endDelivery);
    }
  };
  for (const s of sessions) s.subscribe(listener);
  await fullGc();
  await sleep(200);

  // ---- the measured batch
  let rssPeak = process.memoryUsage().rss;
  const rssTimer = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  }, 50);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const threads0 = await threadCpu();
  const process0 = process.cpuUsage();
  const meter = startMeter();
  delay.enable();
  const results = await Promise.all(sessions.map((s, i) => s.prompt(text("batch", i)).then(() => s.messages.at(-1))));
  delay.disable();
  const m = meter();
  const processCpu = process.cpuUsage(process0);
  const threads1 = await threadCpu();
  clearInterval(rssTimer);
  rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  const failures = results.filter((msg) => msg?.role !== "assistant" || msg.stopReason !== "stop");
  const failed = failures.length;
  // What the failed prompts ended with, a few distinct texts, so a failing run says why.
  const failedWith = [
    ...new Set(failures.map((msg) => `${msg?.stopReason}: ${msg?.errorMessage ?? ""}`.slice(0, 160))),
  ].slice(0, 3);
  const workersStarted = host.workerCount;

  // The threads that appeared with the host and used CPU in the batch: the busiest `threads` of
  // them are the workers (the rest, if any, are helpers started since).
  const grown = [...threads1]
    .filter(([tid]) => !tidsBefore.has(tid) && threads0.has(tid))
    .map(([tid, ns]) => ns - (threads0.get(tid) ?? ns))
    .sort((a, b) => b - a);
  const workerNs = grown.slice(0, workersStarted);
  const workerCpuNs = workerNs.length === 0 ? Number.NaN : workerNs.reduce((a, b) => a + b, 0);
  const processCpuNs = (processCpu.user + processCpu.system) * 1e3;

  await close();
  await mock?.stop();

  const ms = (ns) => ns / 1e6;
  return {
    workload,
    threads,
    workersStarted,
    sessions: N,
    failed,
    failedWith,
    wallMs: m.wallMs,
    promptsPerS: N / (m.wallMs / 1e3),
    events: counts.events,
    deliveries: counts.deliveries,
    deliveriesPerS: counts.deliveries / (m.wallMs / 1e3),
    mainCpuMs: ms(m.cpuNs),
    mainElu: m.elu,
    mainWaitMsPerS: ms(m.waitNs) / (m.wallMs / 1e3),
    mainCpuUsPerEvent: m.cpuNs / 1e3 / counts.events,
    mainCpuUsPerDelivery: m.cpuNs / 1e3 / counts.deliveries,
    mainCpuUsPerPrompt: m.cpuNs / 1e3 / N,
    workerCpuMs: ms(workerCpuNs),
    workerCpuEachMs: workerNs.map(ms),
    workerCpuUsPerEvent: workerCpuNs / 1e3 / counts.events,
    workerCpuUsPerDelivery: workerCpuNs / 1e3 / counts.deliveries,
    workerCpuUsPerPrompt: workerCpuNs / 1e3 / N,
    // Busy share of the busiest worker over the batch (1 = a whole core).
    workerBusiest: (workerNs[0] ?? Number.NaN) / 1e6 / m.wallMs,
    processCpuMs: ms(processCpuNs),
    processCpuUsPerPrompt: processCpuNs / 1e3 / N,
    processCores: ms(processCpuNs) / m.wallMs,
    loopP99Ms: delay.percentile(99) / 1e6,
    loopMaxMs: delay.max / 1e6,
    rssPeakMb: rssPeak / 2 ** 20,
  };
}

// ---------------------------------------------------------------- the fixed cost of a worker

async function idleCost() {
  const { host, close } = await makeHost({ threads: 4 });
  await fullGc();
  const rssBase = process.memoryUsage().rss;
  const openMs = [];
  const rssAfter = [];
  const sessions = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    sessions.push(await host.createSession({ model: "demo/demo-fast" }));
    openMs.push(performance.now() - t0);
    await sleep(500);
    await fullGc();
    rssAfter.push(process.memoryUsage().rss);
  }
  const workers = host.workerCount;
  await Promise.all(sessions.map((s) => s.dispose()));
  await close();
  const mb = (b) => b / 2 ** 20;
  return {
    workers,
    rssBaseMb: mb(rssBase),
    rssAfterMb: rssAfter.map(mb),
    openMs,
    // Workers 2–4 each started with their session; the fifth session joined a running worker.
    startupMs: median(openMs.slice(1, 4)) - openMs[4],
    firstOpenMs: openMs[0],
    joinOpenMs: openMs[4],
    rssPerWorkerMb: mb(rssAfter[3] - rssAfter[0]) / 3,
    rssFirstWorkerMb: mb(rssAfter[0] - rssBase),
  };
}

// ---------------------------------------------------------------- parent

const [mode, arg] = process.argv.slice(2);
if (mode === "idle") {
  report(await idleCost());
} else if (mode !== undefined) {
  report(await batchRun(mode, Number(arg)));
} else {
  const runs = [];
  for (let rep = 1; rep <= REPS; rep++) {
    for (const workload of WORKLOADS) {
      for (const t of THREADS) {
        process.stderr.write(`  (n) run ${rep}/${REPS}: ${workload}, threads ${t}, ${N} sessions …\n`);
        runs.push({ rep, ...(await runChild("./threads.mjs", [workload, String(t)])) });
      }
    }
  }
  process.stderr.write("  (n) the fixed cost of a worker …\n");
  const idle = await runChild("./threads.mjs", ["idle"]);
  const keys = [
    "wallMs",
    "promptsPerS",
    "events",
    "deliveries",
    "deliveriesPerS",
    "mainCpuMs",
    "mainElu",
    "mainWaitMsPerS",
    "mainCpuUsPerEvent",
    "mainCpuUsPerDelivery",
    "mainCpuUsPerPrompt",
    "workerCpuMs",
    "workerCpuUsPerEvent",
    "workerCpuUsPerDelivery",
    "workerCpuUsPerPrompt",
    "workerBusiest",
    "processCpuMs",
    "processCpuUsPerPrompt",
    "processCores",
    "loopP99Ms",
    "loopMaxMs",
    "rssPeakMb",
  ];
  const aggregates = [];
  for (const workload of WORKLOADS) {
    for (const t of THREADS) {
      const mine = runs.filter((r) => r.workload === workload && r.threads === t);
      const agg = { workload, threads: t, reps: mine.length, failed: Math.max(...mine.map((r) => r.failed)) };
      for (const key of keys) agg[key] = median(mine.map((r) => r[key]));
      agg.wallMsRuns = mine.map((r) => r.wallMs);
      agg.workersStarted = mine[0].workersStarted;
      aggregates.push(agg);
    }
  }
  report({ section: "n", config: { N, WARM, REPS, TOKENS, WORKLOADS, THREADS }, aggregates, idle, runs });
}
