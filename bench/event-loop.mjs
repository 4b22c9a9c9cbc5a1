/**
 * Section (c): main-thread event-loop delay while many sessions stream at once.
 *
 * Variants, each in a fresh process (this file spawns itself with arguments):
 *   lifeline  N  — N lifeline sessions (piscina worker, default thread count) on demo/demo-stream
 *   inprocess N  — N pi-agent-core `Agent`s on the main thread, same demo-stream model (imported
 *                  from dist/worker/demo-provider.js, so the same faux stream runs in this thread)
 * for N = 100 and 1,000. These are the measurement the target is judged on.
 *
 * Supplementary variants (N = 1,000): lifeline-http / inprocess-http — the same, but the model is
 * an OpenAI-compatible mock server (bench/sse-server.mjs, a separate process) streaming SSE chunks
 * at the demo-stream rate, so each chunk also costs a real HTTP read, SSE parse and JSON.parse,
 * in the worker for lifeline and on the main thread in-process.
 *
 * Workload: every session gets the same prompt, `[words=WORDS] …`, all started at once. The demo
 * model streams ~50 tokens/s per session (a 3–5-token chunk every 60–100 ms), the rate of a real
 * streaming LLM, so N sessions mean ~12·N deltas/s. WORDS is large enough that no answer ends
 * inside the measured window, so both sides do steady streaming for the whole window. (demo-fast
 * was not used: it emits a whole answer in one burst of microtasks, which measures one long stall
 * per prompt rather than the steady interleaving of many live streams.)
 *
 * Each variant runs REPS times (3; 1 with BENCH_QUICK=1), interleaved, each in a fresh process;
 * the summary takes the median of the runs' figures and shows the spread of p99.
 *
 * Phases: sessions created and subscribed (not measured) → IDLE_S with all sessions idle
 * (reported as "idle") → all prompts started → WARM_S ramp (its max is reported as "startMax")
 * → WINDOW_S measured window: monitorEventLoopDelay (resolution 1 ms), main-thread CPU,
 * event-loop utilisation, GC pauses (PerformanceObserver "gc"), and what the listeners received
 * (events, text chars) to show that both sides did the same work, and in how many deliveries
 * (listener calls with no microtask checkpoint between them: one batch message for lifeline).
 * Then every run is aborted and the host closed.
 *
 * Histogram values are as Node reports them: each sample is the interval between two ticks of a
 * 1 ms timer, so an idle loop reads ~1.1 ms, not 0. Ratios use these raw values.
 */
import { fork } from "node:child_process";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Agent } from "@mariozechner/pi-agent-core";
import { demoModels } from "../dist/worker/demo-provider.js";
import { fullGc, makeHost, mapLimit, median, mockModel, pick, report, runChild, sleep, startMeter } from "./lib.mjs";

const IDLE_S = pick(2, 1);
const WARM_S = pick(2, 1.5);
const WINDOW_S = pick(10, 4);
const WORDS = 1000;
const SIZES = [100, 1000];
/** Sizes of the supplementary HTTP variant (real HTTP + SSE parsing instead of the faux stream). */
const HTTP_SIZES = [1000];
let httpModel;
const REPS = pick(3, 1);
const HTTP_REPS = pick(2, 1);

function histogram(h) {
  const ms = (ns) => ns / 1e6;
  return {
    count: h.count,
    min: ms(h.min),
    mean: ms(h.mean),
    p50: ms(h.percentile(50)),
    p90: ms(h.percentile(90)),
    p99: ms(h.percentile(99)),
    max: ms(h.max),
  };
}

async function measureDelay(seconds) {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  await sleep(seconds * 1000);
  h.disable();
  return histogram(h);
}

async function variant(mode, n) {
  const counts = { events: 0, updates: 0, chars: 0, settled: 0, deliveries: 0, largestDelivery: 0 };
  // A "delivery" is a run of listener calls with no microtask checkpoint in between: one batch
  // message for lifeline, one timer callback's events for the in-process agents.
  let inDelivery = 0;
  const endDelivery = () => {
    if (inDelivery > counts.largestDelivery) counts.largestDelivery = inDelivery;
    inDelivery = 0;
  };
  const listener = (event) => {
    if (inDelivery++ === 0) {
      counts.deliveries++;
      queueMicrotask(endDelivery);
    }
    counts.events++;
    if (event.type === "message_update") {
      counts.updates++;
      const inner = event.assistantMessageEvent;
      if (inner.type === "text_delta") counts.chars += inner.delta.length;
    }
  };

  // ---- setup (not measured)
  const http = mode.endsWith("-http");
  let server;
  if (http) {
    server = fork(fileURLToPath(new URL("./sse-server.mjs", import.meta.url)), [], { stdio: "inherit" });
    const port = await new Promise((resolve, reject) => {
      server.once("message", (message) => resolve(message.port));
      server.once("error", reject);
    });
    server.unref();
    server.channel?.unref();
    httpModel = mockModel(port);
  }
  let runners;
  let stopAll;
  let closeHost = async () => {};
  let workers;
  if (mode === "lifeline" || mode === "lifeline-http") {
    const { host, close } = await makeHost();
    closeHost = close;
    const options = http ? { model: httpModel, apiKey: "dummy" } : { model: "demo/demo-stream" };
    const sessions = await mapLimit(
      Array.from({ length: n }, (_, i) => i),
      32,
      () => host.createSession(options),
    );
    for (const session of sessions) session.subscribe(listener);
    workers = host.workerCount;
    runners = sessions.map((session) => (text) => session.prompt(text));
    stopAll = () => Promise.all(sessions.map((session) => session.abort()));
  } else if (mode === "inprocess" || mode === "inprocess-http") {
    const model = http ? httpModel : demoModels().get("demo-stream");
    const agents = Array.from(
      { length: n },
      () =>
        new Agent({
          initialState: { systemPrompt: "", model, tools: [], messages: [] },
          sessionId: crypto.randomUUID(),
          getApiKey: () => "dummy",
        }),
    );
    for (const agent of agents) agent.subscribe(listener);
    workers = 0;
    runners = agents.map((agent) => (text) => agent.prompt(text));
    stopAll = async () => {
      for (const agent of agents) agent.abort();
    };
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  await sleep(300);
  await fullGc();

  // ---- idle
  const idle = await measureDelay(IDLE_S);

  // ---- start every stream at once, then ramp
  let stop = false;
  const startHist = monitorEventLoopDelay({ resolution: 1 });
  startHist.enable();
  const loops = runners.map(async (run, i) => {
    while (!stop) {
      await run(`[words=${WORDS}] session ${i}: stream for the benchmark`);
      if (!stop) counts.settled++;
    }
  });
  await sleep(WARM_S * 1000);
  startHist.disable();

  // ---- measured window
  const gcPauses = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcPauses.push(entry.duration);
  });
  counts.largestDelivery = 0;
  const before = { ...counts };
  const h = monitorEventLoopDelay({ resolution: 1 });
  const meter = startMeter();
  const processCpu0 = process.cpuUsage();
  gcObserver.observe({ entryTypes: ["gc"] });
  h.enable();
  await sleep(WINDOW_S * 1000);
  h.disable();
  const m = meter();
  const processCpu = process.cpuUsage(processCpu0);
  gcObserver.disconnect();
  const window = {
    events: counts.events - before.events,
    updates: counts.updates - before.updates,
    chars: counts.chars - before.chars,
    settled: counts.settled - before.settled,
    deliveries: counts.deliveries - before.deliveries,
    largestDelivery: counts.largestDelivery,
  };
  const rssMb = process.memoryUsage().rss / 2 ** 20;

  // ---- stop
  stop = true;
  await stopAll();
  await Promise.allSettled(loops);
  await closeHost();
  server?.kill();

  return {
    mode,
    sessions: n,
    workers,
    windowS: WINDOW_S,
    idle,
    startMax: histogram(startHist).max,
    delay: histogram(h),
    mainCpuMs: m.cpuNs / 1e6,
    elu: m.elu,
    eventsPerS: window.events / (m.wallMs / 1e3),
    charsPerS: window.chars / (m.wallMs / 1e3),
    mainCpuUsPerEvent: m.cpuNs / 1e3 / window.events,
    // Main thread runnable but not running (crowded out by other threads/processes), ms per second.
    mainRunqueueWaitMsPerS: m.waitNs / 1e6 / (m.wallMs / 1e3),
    // Whole-process CPU (all threads) and the part not on the main thread (worker + V8/libuv helpers), in % of one core.
    processCpuPct: ((processCpu.user + processCpu.system) / 1e3 / m.wallMs) * 100,
    otherThreadsCpuPct:
      ((processCpu.user + processCpu.system) / 1e3 / m.wallMs) * 100 - (m.cpuNs / 1e6 / m.wallMs) * 100,
    settledInWindow: window.settled,
    eventsPerDelivery: window.events / window.deliveries,
    largestDelivery: window.largestDelivery,
    gcCount: gcPauses.length,
    gcTotalMs: gcPauses.reduce((a, b) => a + b, 0),
    gcMaxMs: gcPauses.length === 0 ? 0 : Math.max(...gcPauses),
    rssMb,
  };
}

const [mode, n] = process.argv.slice(2);
if (mode !== undefined) {
  report(await variant(mode, Number(n)));
} else {
  // Every variant REPS times, interleaved, each in a fresh process; tables use the median run.
  const runs = [];
  for (let rep = 1; rep <= REPS; rep++) {
    for (const size of SIZES) {
      for (const m of ["inprocess", "lifeline"]) {
        process.stderr.write(`  (c) run ${rep}/${REPS}: ${m} × ${size} …\n`);
        runs.push({ rep, ...(await runChild("./event-loop.mjs", [m, String(size)])) });
      }
    }
  }
  // Supplementary: the same over real HTTP/SSE from bench/sse-server.mjs (a separate process).
  for (let rep = 1; rep <= HTTP_REPS; rep++) {
    for (const size of HTTP_SIZES) {
      for (const m of ["inprocess-http", "lifeline-http"]) {
        process.stderr.write(`  (c) HTTP run ${rep}/${HTTP_REPS}: ${m} × ${size} …\n`);
        runs.push({ rep, ...(await runChild("./event-loop.mjs", [m, String(size)])) });
      }
    }
  }
  const aggregates = [];
  const combos = [
    ...SIZES.flatMap((size) => ["inprocess", "lifeline"].map((m) => [m, size])),
    ...HTTP_SIZES.flatMap((size) => ["inprocess-http", "lifeline-http"].map((m) => [m, size])),
  ];
  for (const [m, size] of combos) {
    const mine = runs.filter((r) => r.mode === m && r.sessions === size);
    const of = (get) => mine.map(get);
    aggregates.push({
      mode: m,
      sessions: size,
      reps: mine.length,
      workers: mine[0].workers,
      p50: median(of((r) => r.delay.p50)),
      p99: median(of((r) => r.delay.p99)),
      p99Min: Math.min(...of((r) => r.delay.p99)),
      p99Max: Math.max(...of((r) => r.delay.p99)),
      max: median(of((r) => r.delay.max)),
      maxOfRuns: Math.max(...of((r) => r.delay.max)),
      mean: median(of((r) => r.delay.mean)),
      elu: median(of((r) => r.elu)),
      mainCpuUsPerEvent: median(of((r) => r.mainCpuUsPerEvent)),
      eventsPerS: median(of((r) => r.eventsPerS)),
      charsPerS: median(of((r) => r.charsPerS)),
      idleP99: median(of((r) => r.idle.p99)),
      startMax: median(of((r) => r.startMax)),
      settledInWindow: Math.max(...of((r) => r.settledInWindow)),
      rssMb: median(of((r) => r.rssMb)),
      eventsPerDelivery: median(of((r) => r.eventsPerDelivery)),
      processCpuPct: median(of((r) => r.processCpuPct)),
      otherThreadsCpuPct: median(of((r) => r.otherThreadsCpuPct)),
      mainRunqueueWaitMsPerS: median(of((r) => r.mainRunqueueWaitMsPerS)),
      largestDelivery: Math.max(...of((r) => r.largestDelivery)),
      gcCount: median(of((r) => r.gcCount)),
      gcTotalMs: median(of((r) => r.gcTotalMs)),
      gcMaxMs: median(of((r) => r.gcMaxMs)),
    });
  }
  report({
    section: "c",
    config: { IDLE_S, WARM_S, WINDOW_S, WORDS, SIZES, REPS, HTTP_SIZES, HTTP_REPS },
    aggregates,
    runs,
  });
}
