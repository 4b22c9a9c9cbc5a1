/**
 * Section (m): stalls of the host's event loop at scale (issue target P1: max stall ≤ 20 ms at
 * every N up to 10,000, the kickoff included).
 *
 * The workload of the performance issue: N sessions on the host's default thread count, each
 * given a distinct prompt, all N `prompt()` calls made in one synchronous loop (the kickoff).
 * The model is the built-in mock server in a child process of its own (`lifeline mock-server`,
 * so its CPU is not on the measured thread), scripted so that every conversation first gets a
 * 503 (the auto-retry path runs: the decision, the backoff sleep on a main-thread timer, the
 * `continue` run) and then streams 200 tokens 2 ms apart (~500 tokens/s).
 *
 * Each N runs in a fresh process (this file spawns itself with `run N`). In it:
 *   1. one warm-up session prompts once (pool, worker, code paths warm), then full GC → heap →
 *      N sessions created (32 at a time) → full GC → heap: main-thread heap per session (P4, info);
 *   2. the kickoff: every session's `prompt()` in one loop; it lasts until every session has seen
 *      its `auto_retry_start`, i.e. its first request went out and got its 503 back;
 *   3. after the kickoff: until every prompt settled (or MAX_S passed, then the rest is aborted:
 *      the cut, `abort()` on each in one loop, as a load run's end or a server's shutdown does; its
 *      stalls are reported apart, as `cut`, and are not part of P1's figure).
 * The main loop is watched two ways over both phases: `monitorEventLoopDelay` (resolution 1 ms:
 * p50/p99/max per phase), and a 1 ms interval timer that records every actual gap between its
 * ticks. A gap is a stall of the loop (an idle loop shows ~1 ms); the max gap is the figure the
 * target is judged on, and the gaps over 10/20/50/100 ms are counted per phase, the phase being
 * where the gap began. GC pauses are recorded too (PerformanceObserver "gc").
 *
 * On a shared machine a gap is also time the main thread was runnable but had no CPU. On Linux
 * each tick reads the thread's schedstat (run time, run-queue wait), so every gap over 10 ms is
 * split into what the main thread ran (its own work: the library's and this script's) and what
 * it waited for a CPU; "max own stall" is the largest run time within one gap. The target is
 * judged on the wall-clock gap, which equals the own stall on a quiet machine.
 *
 * STALL_PROFILE=<dir>: also take CPU profiles of the main thread (inspector Session, 100 µs
 * sampling) of the kickoff and of what follows, write them to <dir>/m-<N>-{kickoff,after}.cpuprofile
 * and report their top functions by self time. Profiling slows the thread: read stalls from runs
 * without it. `node --expose-gc --max-semi-space-size=256 bench/stall-scale.mjs alloc 5000`: what
 * a burst allocates per prompt and per retry sleep (see `allocation`). STALL_SIZES=1000,5000 picks the sizes. STALL_WORKER_PRIORITY=n sets the host's
 * `workerPriority` (the worker threads' nice value; unset: the host's default).
 */
import { spawn } from "node:child_process";
import { mkdirSync, openSync, readSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import { loadavg, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { fullGc, hrSeconds, makeHost, mapLimit, mockModel, pick, report, runChild, sleep, startMeter } from "./lib.mjs";

const SIZES = process.env.STALL_SIZES?.split(",").map(Number) ?? pick([1000, 2000, 5000, 10_000], [200, 1000]);
const TOKENS = 200;
const TOKEN_DELAY_MS = 2;
/** After this long past the kickoff, the prompts still running are aborted (the stream phase is cut short). */
const MAX_S = pick(45, 20);
/** The target (P1). */
const STALL_TARGET_MS = 20;
/** STALL_WORKER_PRIORITY=n: the host's `workerPriority` (the workers' nice value); unset: its default. */
const PRIORITY =
  process.env.STALL_WORKER_PRIORITY === undefined ? undefined : Number(process.env.STALL_WORKER_PRIORITY);
const BUCKETS = [10, 20, 50, 100];

/** perf_hooks' GC kinds (entry.detail.kind). */
const GC_KINDS = { 1: "scavenge", 2: "mark-compact", 4: "incremental", 8: "weak callbacks" };

const SCRIPT = {
  conversations: [{ match: "", steps: [503, { type: "ok", tokens: TOKENS, tokenDelayMs: TOKEN_DELAY_MS }] }],
};

/** Starts `lifeline mock-server` in a child process; resolves with its port and a stop function. */
async function startMock() {
  const scriptFile = join(tmpdir(), `lifeline-bench-m-${process.pid}.json`);
  writeFileSync(scriptFile, JSON.stringify(SCRIPT));
  const cli = fileURLToPath(new URL("../dist/main/cli.js", import.meta.url));
  const child = spawn(process.execPath, [cli, "mock-server", "--port", "0", "--script", scriptFile], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (data) => {
      out += data;
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (match !== null) resolve(Number(match[1]));
    });
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`mock server exited with ${code}`)));
  });
  return { port, stop: () => child.kill("SIGTERM") };
}

/**
 * The main thread's schedstat, opened once: each tick re-reads it from offset 0 (one syscall,
 * about 4 µs, against about 12 µs for open, read and close), so the recorder costs the thread it
 * measures less. undefined where the file does not exist (not Linux).
 */
const SCHEDSTAT_FD = (() => {
  try {
    return openSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, "r");
  } catch {
    return undefined;
  }
})();
const schedBuffer = Buffer.alloc(128);
/**
 * The main thread's [run, run-queue wait] in ms, or undefined where schedstat is unavailable. On
 * a virtual machine "run" also counts time the hypervisor held the thread's vCPU (stall-perf.mjs).
 */
function schedstat() {
  if (SCHEDSTAT_FD === undefined) return undefined;
  const [run, wait] = schedBuffer.toString("latin1", 0, readSync(SCHEDSTAT_FD, schedBuffer, 0, 128, 0)).split(" ");
  return [Number(run) / 1e6, Number(wait) / 1e6];
}

/** Gaps of a 1 ms interval timer, bucketed per phase. */
function gapRecorder() {
  const phase0 = () => ({ max: 0, ownMax: 0, count: 0, over: BUCKETS.map(() => 0) });
  const phases = { kickoff: phase0(), after: phase0() };
  const top = [];
  /** Stalls whose own run time was over 5 ms, whatever their wall-clock length (where the main thread's own work is). */
  const topOwn = [];
  let phase = "kickoff";
  let last = performance.now();
  let lastSched = schedstat();
  let t0 = last;
  const timer = setInterval(() => {
    const now = performance.now();
    const sched = lastSched === undefined ? undefined : schedstat();
    const gap = now - last;
    const ranMs = sched === undefined ? gap : sched[0] - lastSched[0];
    const waitedMs = sched === undefined ? 0 : sched[1] - lastSched[1];
    last = now;
    lastSched = sched;
    const p = phases[phase];
    p.count++;
    if (gap > p.max) p.max = gap;
    if (Math.min(gap, ranMs) > p.ownMax) p.ownMax = Math.min(gap, ranMs);
    for (let i = 0; i < BUCKETS.length; i++) if (gap > BUCKETS[i]) p.over[i]++;
    // fromHr: the stall's start on process.hrtime's clock (CLOCK_MONOTONIC), seconds, for stall-perf.mjs.
    if (gap > 10)
      top.push({ atMs: now - gap - t0, gapMs: gap, ranMs, waitedMs, phase, fromHr: hrSeconds() - gap / 1e3 });
    if (Math.min(gap, ranMs) > 5)
      topOwn.push({ atMs: now - gap - t0, gapMs: gap, ranMs, waitedMs, phase, from: now - gap, to: now });
  }, 1);
  return {
    start(at) {
      t0 = at;
      last = performance.now();
      lastSched = schedstat();
    },
    /** The kickoff ended: gaps from the next tick on belong to "after" (a gap that began before is the kickoff's). */
    endKickoff() {
      const now = performance.now();
      const gap = now - last;
      // The gap running right now began in the kickoff: close it there.
      if (gap > phases.kickoff.max) phases.kickoff.max = gap;
      last = now;
      phase = "after";
    },
    stop() {
      clearInterval(timer);
      top.sort((a, b) => b.gapMs - a.gapMs);
      topOwn.sort((a, b) => b.ranMs - a.ranMs);
      return { phases, top: top.slice(0, 16), topOwn: topOwn.slice(0, 8) };
    },
  };
}

function hist(h) {
  const ms = (ns) => ns / 1e6;
  return { count: h.count, p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) };
}

/** Top functions by self time of a V8 CPU profile. */
function topSelf(profile, count = 12) {
  const total = profile.endTime - profile.startTime;
  const perSample = profile.samples.length > 0 ? total / profile.samples.length : 0;
  const byName = new Map();
  for (const node of profile.nodes) {
    if (node.hitCount === 0) continue;
    const f = node.callFrame;
    const where = f.url === "" ? "" : ` ${basename(f.url)}:${f.lineNumber + 1}`;
    const name = `${f.functionName || "(anonymous)"}${where}`;
    byName.set(name, (byName.get(name) ?? 0) + node.hitCount * perSample);
  }
  return {
    totalMs: total / 1e3,
    top: [...byName.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([name, us]) => [name, us / 1e3]),
  };
}

/**
 * What the main thread ran inside each of `stalls` (from / to: performance.now() ms), from a CPU
 * profile whose start was at `perfStartMs`: self time by function, and by the task's entry (the
 * frame below the root: which macrotask held the loop), in ms of samples.
 */
function stallBreakdown(profile, perfStartMs, stalls, gcEntries) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const label = (node) => {
    const f = node.callFrame;
    return `${f.functionName || "(anonymous)"}${f.url === "" ? "" : ` ${basename(f.url)}:${f.lineNumber + 1}`}`;
  };
  const entryOf = (id) => {
    let at = id;
    for (;;) {
      const up = parent.get(at);
      if (up === undefined) return nodes.get(at);
      if (parent.get(up) === undefined) return nodes.get(at);
      at = up;
    }
  };
  const times = [];
  let t = profile.startTime;
  for (const delta of profile.timeDeltas) {
    t += delta;
    times.push(t);
  }
  const toPerf = (us) => perfStartMs + (us - profile.startTime) / 1e3;
  return stalls.map((stall) => {
    const self = new Map();
    const entry = new Map();
    let sampledMs = 0;
    for (let i = 0; i < profile.samples.length; i++) {
      const at = toPerf(times[i]);
      if (at < stall.from || at > stall.to) continue;
      const dt = (profile.timeDeltas[i + 1] ?? 0) / 1e3;
      sampledMs += dt;
      const node = nodes.get(profile.samples[i]);
      if (node === undefined) continue;
      self.set(label(node), (self.get(label(node)) ?? 0) + dt);
      const e = entryOf(node.id);
      if (e !== undefined) entry.set(label(e), (entry.get(label(e)) ?? 0) + dt);
    }
    const top = (map, count) =>
      [...map.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, count)
        .map(([name, ms]) => [name, Number(ms.toFixed(2))]);
    const gc = gcEntries.filter((g) => g.start < stall.to && g.start + g.duration > stall.from);
    return {
      atMs: stall.atMs,
      gapMs: stall.gapMs,
      ranMs: stall.ranMs,
      sampledMs,
      gc: gc.map((g) => [g.kind, Number(g.duration.toFixed(2))]),
      self: top(self, 12),
      entry: top(entry, 5),
    };
  });
}

async function variant(n) {
  const mock = await startMock();
  const { host, close } = await makeHost(PRIORITY === undefined ? {} : { workerPriority: PRIORITY });
  const profileDir = process.env.STALL_PROFILE;
  let inspector;
  const profiles = {};
  try {
    const options = { model: mockModel(mock.port), apiKey: "dummy" };
    const warm = await host.createSession(options);
    await warm.prompt("warm-up prompt");
    await warm.dispose();
    await fullGc();
    const heap0 = process.memoryUsage().heapUsed;
    const createdAt = performance.now();
    const sessions = await mapLimit(
      Array.from({ length: n }, (_, i) => i),
      32,
      () => host.createSession(options),
    );
    const createMs = performance.now() - createdAt;
    await fullGc();
    const heapBytesPerSession = (process.memoryUsage().heapUsed - heap0) / n;

    const counts = { retryStarts: 0, firstDeltas: 0, events: 0, settled: 0, succeeded: 0 };
    /** Sessions restored after their worker died (X7), by how it ended: a restore is a burst of its own. */
    const workerExits = {};
    /**
     * The same, only those restored within the measured window (before the cut's aborts): a worker
     * terminated while it served the prompts, not by the aborts of the cut (abort under load, P2).
     */
    const exitsInWindow = {};
    let measuring = true;
    let firstExitS;
    let kickoffDone;
    const kickoffOver = new Promise((resolve) => {
      kickoffDone = resolve;
    });
    for (const session of sessions) {
      let retried = false;
      let streaming = false;
      session.subscribe((event) => {
        counts.events++;
        if (event.type === "session_restored" && event.restarts === 1) {
          workerExits[event.reason] = (workerExits[event.reason] ?? 0) + 1;
          if (measuring) {
            exitsInWindow[event.reason] = (exitsInWindow[event.reason] ?? 0) + 1;
            firstExitS ??= (performance.now() - t0) / 1000;
          }
        } else if (event.type === "auto_retry_start" && !retried) {
          retried = true;
          if (++counts.retryStarts === n) kickoffDone();
        } else if (event.type === "message_update" && !streaming) {
          streaming = true;
          counts.firstDeltas++;
        }
      });
    }
    if (profileDir !== undefined) {
      mkdirSync(profileDir, { recursive: true });
      inspector = new Session();
      inspector.connect();
      await inspector.post("Profiler.enable");
      await inspector.post("Profiler.setSamplingInterval", { interval: 100 });
    }
    await sleep(200);

    // ---- kickoff: every prompt started in one task
    const gcPauses = { kickoff: [], after: [] };
    const gcMaxByKind = {};
    /** Every GC pause with its start (performance.now() ms), to match against the stalls. */
    const gcEntries = [];
    let gcPhase = "kickoff";
    const gcObserver = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        gcPauses[gcPhase].push(entry.duration);
        const kind = GC_KINDS[entry.detail?.kind] ?? "other";
        gcMaxByKind[kind] = Math.max(gcMaxByKind[kind] ?? 0, entry.duration);
        gcEntries.push({ kind, start: entry.startTime, duration: entry.duration });
      }
    });
    gcObserver.observe({ entryTypes: ["gc"] });
    const gaps = gapRecorder();
    const hKick = monitorEventLoopDelay({ resolution: 1 });
    const hAfter = monitorEventLoopDelay({ resolution: 1 });
    const profileStarts = {};
    if (inspector !== undefined) {
      profileStarts.kickoff = performance.now();
      await inspector.post("Profiler.start");
    }
    const meter = startMeter();
    const load0 = loadavg()[0];
    hKick.enable();
    const t0 = performance.now();
    gaps.start(t0);
    const loopStart = performance.now();
    const prompts = sessions.map((session, i) =>
      session.prompt(`session ${i}: tell the benchmark a story`).then(
        () => {
          counts.settled++;
          counts.succeeded++;
        },
        () => {
          counts.settled++;
        },
      ),
    );
    const promptLoopMs = performance.now() - loopStart;
    await kickoffOver;
    const kickoffMs = performance.now() - t0;
    gaps.endKickoff();
    hKick.disable();
    hAfter.enable();
    gcPhase = "after";
    if (inspector !== undefined) {
      const { profile } = await inspector.post("Profiler.stop");
      profiles.kickoff = topSelf(profile);
      profiles.kickoffRaw = profile;
      await writeFile(join(profileDir, `m-${n}-kickoff.cpuprofile`), JSON.stringify(profile));
      profileStarts.after = performance.now();
      await inspector.post("Profiler.start");
    }

    // ---- after the kickoff: until every prompt settled, or MAX_S
    let timedOut = false;
    const cap = setTimeout(() => {
      timedOut = true;
    }, MAX_S * 1000);
    const all = Promise.all(prompts);
    while (counts.settled < n && !timedOut) await Promise.race([all, sleep(50)]);
    clearTimeout(cap);
    const afterMs = performance.now() - t0 - kickoffMs;
    hAfter.disable();
    const m = meter();
    const g = gaps.stop();
    gcObserver.disconnect();
    if (inspector !== undefined) {
      const { profile } = await inspector.post("Profiler.stop");
      profiles.after = topSelf(profile);
      await writeFile(join(profileDir, `m-${n}-after.cpuprofile`), JSON.stringify(profile));
      inspector.disconnect();
      // The largest own stalls of each phase, broken down from that phase's profile.
      const kickoffRaw = profiles.kickoffRaw;
      delete profiles.kickoffRaw;
      profiles.ownStalls = [
        ...stallBreakdown(
          kickoffRaw,
          profileStarts.kickoff,
          g.topOwn.filter((s) => s.phase === "kickoff"),
          gcEntries,
        ),
        ...stallBreakdown(
          profile,
          profileStarts.after,
          g.topOwn.filter((s) => s.phase === "after"),
          gcEntries,
        ),
      ].sort((a, b) => b.ranMs - a.ranMs);
    }
    const settledInTime = counts.settled;
    measuring = false;
    const rssMb = process.memoryUsage().rss / 2 ** 20;
    // ---- the cut: the prompts still running are aborted at once (a load run's end, a host's
    // shutdown); watched like the phases above, and reported apart (not part of P1's figure)
    let cut;
    if (timedOut) {
      const running = n - counts.settled;
      // A recorder of its own: the cut is its first phase (named "kickoff" there).
      const cutGaps = gapRecorder();
      const cutStart = performance.now();
      cutGaps.start(cutStart);
      await Promise.allSettled(sessions.map((session) => session.abort()));
      const abortedMs = performance.now() - cutStart;
      await Promise.allSettled(prompts);
      const settledMs = performance.now() - cutStart;
      const { phases, topOwn } = cutGaps.stop();
      cut = {
        running,
        abortedMs,
        settledMs,
        maxStallMs: phases.kickoff.max,
        maxOwnStallMs: phases.kickoff.ownMax,
        over: phases.kickoff.over,
        topOwn: topOwn.slice(0, 3).map(({ gapMs, ranMs }) => [gapMs, ranMs]),
      };
    }
    await Promise.allSettled(prompts);
    const gcOf = (list) => ({
      count: list.length,
      totalMs: list.reduce((a, b) => a + b, 0),
      maxMs: list.length === 0 ? 0 : Math.max(...list),
    });
    return {
      sessions: n,
      workers: host.workerCount,
      // Workers the watchdog terminated as hung (X8): their sessions were restored elsewhere (X7).
      watchdogTerminations: host.watchdogTerminations,
      workerExits,
      exitsInWindow,
      firstExitS,
      loadavgBefore: load0,
      loadavgAfter: loadavg()[0],
      /** The main thread's id for perf (stall-perf.mjs): on Linux, the process id. */
      pid: process.pid,
      createMs,
      heapBytesPerSession,
      promptLoopMs,
      kickoffMs,
      afterMs,
      timedOut,
      cut,
      settledInTime,
      succeeded: counts.succeeded,
      firstDeltas: counts.firstDeltas,
      events: counts.events,
      maxStallMs: Math.max(g.phases.kickoff.max, g.phases.after.max),
      maxOwnStallMs: Math.max(g.phases.kickoff.ownMax, g.phases.after.ownMax),
      gaps: g.phases,
      topStalls: g.top,
      topOwnStalls: g.topOwn.map(({ from, to, ...rest }) => ({
        ...rest,
        gc: gcEntries.filter((e) => e.start < to && e.start + e.duration > from).map((e) => [e.kind, e.duration]),
      })),
      delay: { kickoff: hist(hKick), after: hist(hAfter) },
      gc: { kickoff: gcOf(gcPauses.kickoff), after: gcOf(gcPauses.after), maxByKind: gcMaxByKind },
      mainCpuMs: m.cpuNs / 1e6,
      mainElu: m.elu,
      rssMb,
      profiles,
    };
  } finally {
    await close();
    mock.stop();
  }
}

/**
 * `alloc N`: what a burst allocates inside the caller's task, where all of it survives until each
 * turn (so young-generation GC copies it there): bytes per `prompt()` of a loop of N (the bench's
 * own `.then` and template string included, as in the kickoff), and bytes per retry sleep while
 * it waits (the production path: the host's pacer), with the time to wake N sleeps that end in
 * the same millisecond. Run with a young generation large enough that no GC falls inside
 * (`--max-semi-space-size=256`; `gcs` says if one did). Works on builds before TurnPacer.sleep
 * (abortableSleep, then pacer.turn), for A/B runs from a baseline's worktree.
 */
async function allocation(n) {
  let gcs = 0;
  const observer = new PerformanceObserver((list) => {
    gcs += list.getEntries().length;
  });
  observer.observe({ entryTypes: ["gc"] });
  const { host, close } = await makeHost();
  const options = { model: mockModel(9), apiKey: "dummy" };
  const sessions = await mapLimit(
    Array.from({ length: n }, (_, i) => i),
    32,
    () => host.createSession(options),
  );
  await fullGc();
  await sleep(50);
  gcs = 0;
  let heap0 = process.memoryUsage().heapUsed;
  let t0 = performance.now();
  const prompts = sessions.map((session, i) =>
    session.prompt(`session ${i}: tell the benchmark a story`).then(
      () => {},
      () => {},
    ),
  );
  const loopMs = performance.now() - t0;
  const promptBytes = (process.memoryUsage().heapUsed - heap0) / n;
  const promptGcs = gcs;
  await Promise.allSettled(sessions.map((session) => session.abort()));
  await Promise.allSettled(prompts);
  await close();

  const { TurnPacer } = await import("../dist/main/workers/turn-pacer.js");
  const { abortableSleep } = await import("../dist/main/retry/sleep.js");
  const pacer = new TurnPacer();
  const pacedSleep =
    typeof pacer.sleep === "function"
      ? (ms, signal) => pacer.sleep(ms, signal)
      : async (ms, signal) => {
          await abortableSleep(ms, signal);
          await pacer.turn(signal);
        };
  const signals = Array.from({ length: n }, () => new AbortController().signal);
  await fullGc();
  gcs = 0;
  heap0 = process.memoryUsage().heapUsed;
  const sleeps = signals.map((signal) => pacedSleep(50, signal));
  const sleepBytes = (process.memoryUsage().heapUsed - heap0) / n;
  const sleepGcs = gcs;
  t0 = performance.now();
  await Promise.all(sleeps);
  const wakeMs = performance.now() - t0;
  observer.disconnect();
  return {
    mode: "alloc",
    n,
    prompt: { loopMs, usPerPrompt: (loopMs * 1e3) / n, bytesPerPrompt: promptBytes, gcs: promptGcs },
    retrySleep: { bytesPerSleep: sleepBytes, gcs: sleepGcs, wakeAllMs: wakeMs },
    loadavg: loadavg()[0],
  };
}

const [mode, n] = process.argv.slice(2);
if (mode === "run") {
  report(await variant(Number(n)));
} else if (mode === "alloc") {
  report(await allocation(Number(n)));
} else {
  const runs = [];
  for (const size of SIZES) {
    process.stderr.write(`  (m) ${size} sessions …\n`);
    runs.push(await runChild("./stall-scale.mjs", ["run", String(size)]));
  }
  report({
    section: "m",
    config: { SIZES, TOKENS, TOKEN_DELAY_MS, MAX_S, BUCKETS, STALL_TARGET_MS, PRIORITY: PRIORITY ?? "default" },
    runs,
  });
}
