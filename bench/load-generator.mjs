/**
 * Section (j): the load generator's own overhead, `lifeline load`'s main-thread bookkeeping and
 * the open model's highest arrival rate.
 *
 * (1) Bookkeeping share at 1,000 concurrent sessions. `runLoad()` with 1,000 sessions prompting
 * for WINDOW_S seconds against the built-in mock (its own thread; 32 tokens 5 ms apart), while
 * the V8 sampling profiler (node:inspector, 1 ms interval) records the main thread. Each sample's
 * time (its timeDelta) goes to the function on top of the stack. Bookkeeping is the time in
 * functions of dist/main/load/ (LoadMetrics turning events into records, the timeline's
 * sampling, the progress, the prompting loops, the arrival player and conversation pool), plus
 * native and builtin frames called from them (a Map lookup, performance.now()). Everything else
 * is the system under test or idle: the session facade and its event stream, the retry
 * controller, the worker messages. The share is reported of the main thread's busy time
 * (samples that are not `(idle)`; the target, ≤ 20 %) and of the wall time. Garbage collection
 * is counted as neither (it is reported on its own): its cost cannot be split by allocator.
 * A cross-check that does not depend on sampling: the same run also times every call of
 * LoadMetrics' event, prompt-start and prompt-end methods and of the timeline's sample with
 * performance.now() around it (an upper bound: the two clock reads are included).
 *
 * (2) Highest arrival rate. For each rate of RATES, a fresh process runs the open model
 * (`arrival: { rate }`, one prompt per arrival, each on a fresh session) for RATE_WINDOW_S
 * seconds against the fast mock (4 tokens, no delay between them), with a cap of open
 * conversations (CAP) above rate × window, so that a target or host that cannot complete as fast
 * never makes the generator drop: what is measured is whether the generator starts each arrival
 * when its schedule says. A rate is *sustained* when every scheduled arrival started and the p99
 * of the schedule lag (start − scheduled time) is at most LAG_LIMIT_MS. Reported: the highest
 * sustained rate (target ≥ 500/s), and per rate the lag, the conversations completed per second
 * (what the host's workers and the mock got through; a separate limit), and the main thread's ELU.
 */
import { Session } from "node:inspector/promises";
import { performance } from "node:perf_hooks";
import { pick, report, runChild } from "./lib.mjs";

const WINDOW_S = pick(15, 5);
const SESSIONS = 1000;
const RATES = pick([250, 500, 750, 1000, 1500], [250, 500]);
const LAG_LIMIT_MS = 100;
const RATE_WINDOW_S = pick(10, 5);
/** The cap of open conversations: above rate × window, so a slow target never makes the generator drop. */
const CAP = 100_000;

const LOAD_DIR = "/dist/main/load/";
const SPECIAL = new Set(["(root)", "(program)", "(idle)", "(garbage collector)"]);

/** Self time per category from a V8 CPU profile: bookkeeping, other busy, idle, GC. */
function attribute(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const own = (node) => node.callFrame.url.includes(LOAD_DIR) && !/mock-(target|thread)\.js$/.test(node.callFrame.url);
  const category = new Map();
  const categoryOf = (id) => {
    if (category.has(id)) return category.get(id);
    const node = byId.get(id);
    const name = node.callFrame.functionName;
    let result;
    if (name === "(idle)") result = "idle";
    else if (name === "(garbage collector)") result = "gc";
    else if (SPECIAL.has(name)) result = "other";
    else if (node.callFrame.url !== "") result = own(node) ? "bookkeeping" : "other";
    else {
      // A native or builtin frame: it belongs to whoever called it.
      const up = parent.get(id);
      result = up === undefined ? "other" : categoryOf(up);
      if (result === "idle" || result === "gc") result = "other";
    }
    category.set(id, result);
    return result;
  };
  const totals = { bookkeeping: 0, other: 0, idle: 0, gc: 0 };
  const functions = new Map();
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const c = categoryOf(id);
    totals[c] += us;
    if (c === "bookkeeping") {
      const frame = byId.get(id).callFrame;
      const key = `${frame.functionName || "(anonymous)"} ${frame.url.slice(frame.url.lastIndexOf("/") + 1)}`;
      functions.set(key, (functions.get(key) ?? 0) + us);
    }
  });
  const top = [...functions].sort((a, b) => b[1] - a[1]).slice(0, 6);
  return { totals, top };
}

/** Wraps `proto[name]` so every call's time is added to `timed.ms`. */
function timeMethod(proto, name, timed) {
  const original = proto[name];
  proto[name] = function (...args) {
    const t0 = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      if (timed.on) timed.ms += performance.now() - t0;
    }
  };
}

async function bookkeeping() {
  const { runLoad } = await import("../dist/main/load/index.js");
  const { LoadMetrics } = await import("../dist/main/load/metrics/load-metrics.js");
  const { Timeline } = await import("../dist/main/load/metrics/timeline.js");
  const timed = { on: false, ms: 0 };
  for (const name of ["onEvent", "promptStarted", "promptEnded"]) timeMethod(LoadMetrics.prototype, name, timed);
  timeMethod(Timeline.prototype, "sample", timed);
  const inspector = new Session();
  inspector.connect();
  await inspector.post("Profiler.enable");
  await inspector.post("Profiler.setSamplingInterval", { interval: 1000 });
  let profile;
  let elu;
  const { report: r } = await runLoad({
    sessions: SESSIONS,
    durationMs: WINDOW_S * 1000 + 2000,
    rampUpMs: 2000,
    outDir: false,
    lifelineDir: false,
    // The window starts once every session has started (after the ramp-up) and ends before the stop.
    onProgress: (p) => {
      if (p.elapsedMs >= 2000 && elu === undefined) {
        elu = performance.eventLoopUtilization();
        timed.on = true;
        void inspector.post("Profiler.start");
      }
      if (p.elapsedMs >= WINDOW_S * 1000 + 1500 && profile === undefined && elu !== undefined) {
        profile = null;
        timed.on = false;
        elu = performance.eventLoopUtilization(elu);
        void inspector.post("Profiler.stop").then((result) => {
          profile = result.profile;
        });
      }
    },
    progressIntervalMs: 250,
  });
  for (let i = 0; i < 100 && !profile; i++) await new Promise((resolve) => setTimeout(resolve, 50));
  inspector.disconnect();
  const { totals, top } = attribute(profile);
  const busy = totals.bookkeeping + totals.other + totals.gc;
  const wall = busy + totals.idle;
  return {
    sessions: SESSIONS,
    windowS: WINDOW_S,
    samples: profile.samples.length,
    bookkeepingMs: totals.bookkeeping / 1000,
    otherBusyMs: totals.other / 1000,
    gcMs: totals.gc / 1000,
    idleMs: totals.idle / 1000,
    shareOfBusy: totals.bookkeeping / busy,
    shareOfWall: totals.bookkeeping / wall,
    mainElu: elu.utilization,
    eluActiveMs: elu.active,
    instrumentedMs: timed.ms,
    topFunctions: top.map(([name, us]) => [name, us / 1000]),
    promptsPerS: r.totals.prompts.succeeded / (r.durationMs / 1000),
    inFlightPromptsMax: Math.max(...r.timeline.points.map((p) => p.inFlightPrompts)),
  };
}

async function rate(perSecond) {
  const { runLoad } = await import("../dist/main/load/index.js");
  const elu0 = performance.eventLoopUtilization();
  const { report: r } = await runLoad({
    sessions: CAP,
    arrival: { rate: perSecond },
    durationMs: RATE_WINDOW_S * 1000,
    mock: { tokens: 4, tokenDelayMs: 0 },
    outDir: false,
    lifelineDir: false,
  });
  const a = r.totals.arrivals;
  return {
    rate: perSecond,
    offered: a.offered,
    started: a.started,
    dropped: a.dropped,
    unstarted: a.unstarted,
    lagP50Ms: a.scheduleLagMs.p50,
    lagP99Ms: a.scheduleLagMs.p99,
    lagMaxMs: a.scheduleLagMs.max,
    completedPerS: a.completed / RATE_WINDOW_S,
    maxInFlight: Math.max(...r.timeline.points.map((p) => p.inFlightPrompts)),
    mainElu: performance.eventLoopUtilization(elu0).utilization,
    sustained: a.started === a.offered && a.scheduleLagMs.p99 !== null && a.scheduleLagMs.p99 <= LAG_LIMIT_MS,
  };
}

const [mode, value] = process.argv.slice(2);
if (mode === "bookkeeping") report(await bookkeeping());
else if (mode === "rate") report(await rate(Number(value)));
else {
  process.stderr.write(`  (j) bookkeeping share, ${SESSIONS} sessions for ${WINDOW_S} s …\n`);
  const share = await runChild("./load-generator.mjs", ["bookkeeping"]);
  const rates = [];
  for (const r of RATES) {
    process.stderr.write(`  (j) open model at ${r}/s for ${RATE_WINDOW_S} s …\n`);
    rates.push(await runChild("./load-generator.mjs", ["rate", String(r)]));
  }
  report({ section: "j", config: { WINDOW_S, RATE_WINDOW_S, SESSIONS, RATES, LAG_LIMIT_MS, CAP }, share, rates });
}
