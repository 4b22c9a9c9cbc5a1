/**
 * Section (r): P4's RSS half: process RSS at 5,000 sessions (200 under BENCH_QUICK), lifeline
 * against the same agent loop run in-process, on section (o)'s workload, and where lifeline's
 * memory is: the main isolate's heap, the worker isolate's heap, their external memory and
 * ArrayBuffers, and the rest (native: code, malloc arenas, thread stacks, the binary).
 *
 * Workload (the performance issue's, as in (o)): N sessions each given a distinct prompt at once;
 * the built-in mock in a process of its own (bench/mock-child.mjs) answers every conversation first
 * with a 503, then 200 tokens 2 ms apart over real HTTP/SSE. A warm-up batch first (JIT).
 *
 * Sides, each in a fresh child process so RSS is that side's alone:
 *   baseline — pi-agent-core's `Agent` with pi-ai's OpenAI-compatible provider on the main thread,
 *              one counting listener per session, pi's retry after the 503 (as in (o)).
 *   lifeline — a SessionHost with its default threads, auto-retry on, one counting listener.
 * RSS (the target's figure) is read right after the batch settles, before anything is closed or
 * collected, as (o) reads it. Then the breakdown: `process.memoryUsage()` of the main isolate, and
 * of each worker isolate read through the inspector (NodeWorker domain: the main thread's session
 * attaches to the worker threads; a bench-only path, nothing in src/ knows of it). Then a full GC
 * on every isolate and the same figures again, so retained memory and garbage not yet collected
 * are told apart.
 *
 * BENCH_R_REPS runs a side (default 1: a run a side at 5,000 takes about 4 minutes on a quiet
 * machine), alternating which goes first; medians.
 * BENCH_R_N overrides the session count; BENCH_R_PROMPT_KB pads each prompt (a long conversation's
 * request body). Each side also reports its peak RSS over the run (the kernel's VmHWM).
 * BENCH_R_SNAPSHOT=<dir> makes the lifeline side also write a heap snapshot of its worker after the
 * warm-up and after the batch (read them with bench/heap-diff.mjs).
 */
import { readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { Session } from "node:inspector";
import { loadavg } from "node:os";
import { join } from "node:path";
import { inProcessAgents } from "./in-process-agents.mjs";
import {
  alternateSides,
  fullGc,
  makeHost,
  median,
  mockModel,
  pick,
  report,
  sessionOpener,
  sleep,
  startMockChild,
} from "./lib.mjs";

const N = Number(process.env.BENCH_R_N ?? pick(5000, 200));
const WARM = pick(100, 40);
const REPS = Number(process.env.BENCH_R_REPS ?? 1);
const TOKENS = 200;
const RETRY_DELAY_MS = 10;
const SNAPSHOT_DIR = process.env.BENCH_R_SNAPSHOT;
/**
 * BENCH_R_PROMPT_KB pads every batch prompt with that many KB of text (a long conversation's
 * request body), on both sides; 0 (the default) sends the short prompts of (o).
 */
const PROMPT_KB = Number(process.env.BENCH_R_PROMPT_KB ?? 0);
const PADDING =
  PROMPT_KB > 0 ? ` ${"lorem ipsum ".repeat(Math.ceil((PROMPT_KB * 1024) / 12)).slice(0, PROMPT_KB * 1024)}` : "";
/** The process's peak RSS so far (VmHWM, kept by the kernel), in MB; undefined off Linux. */
function peakRssMb() {
  try {
    const line = readFileSync("/proc/self/status", "utf8").match(/^VmHWM:\s+(\d+) kB/m);
    return line === null ? undefined : Number(line[1]) / 1024;
  } catch {
    return undefined;
  }
}
const SCRIPT = { conversations: [{ match: "", steps: [503, { type: "ok", tokens: TOKENS, tokenDelayMs: 2 }] }] };
const MB = 2 ** 20;

// ---------------------------------------------------------------- helpers

const startMock = () => startMockChild(SCRIPT);

/** The memory figures of the calling isolate (rss is the process's), in MB. */
const inMb = (usage) => Object.fromEntries(Object.entries(usage).map(([k, v]) => [k, v / MB]));

/**
 * The worker threads of this process, through the inspector: `memory()` is each worker isolate's
 * `process.memoryUsage()`, `gc()` collects each fully, `snapshot(file)` writes one's heap snapshot.
 */
async function inspectWorkers() {
  const session = new Session();
  session.connect();
  const post = (method, params = {}) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  const workers = [];
  const pending = new Map();
  let nextId = 1;
  session.on("NodeWorker.attachedToWorker", ({ params }) => workers.push(params.sessionId));
  session.on("NodeWorker.receivedMessageFromWorker", ({ params }) => {
    const message = JSON.parse(params.message);
    if (message.id !== undefined) {
      const waiter = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) waiter?.reject(new Error(JSON.stringify(message.error)));
      else waiter?.resolve(message.result);
    }
  });
  const call = (sessionId, method, params = {}) => {
    const id = nextId++;
    const result = new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    void post("NodeWorker.sendMessageToWorker", { sessionId, message: JSON.stringify({ id, method, params }) });
    return result;
  };
  await post("NodeWorker.enable", { waitForDebuggerOnStart: false });
  await sleep(100);
  const memory = async () => {
    const out = [];
    for (const w of workers) {
      const r = await call(w, "Runtime.evaluate", { expression: "process.memoryUsage()", returnByValue: true });
      out.push(inMb(r.result.value));
    }
    return out;
  };
  const gc = async () => {
    for (const w of workers) {
      for (let i = 0; i < 3; i++) await call(w, "HeapProfiler.collectGarbage");
    }
  };
  // The inspector's command-line API gives the evaluated code `require` (the worker's module is
  // ESM, and an evaluated script has no dynamic import): v8's own writer, as on the main thread.
  const v8Call = async (w, expression) => {
    const r = await call(w, "Runtime.evaluate", { expression, includeCommandLineAPI: true, returnByValue: true });
    if (r.exceptionDetails !== undefined) throw new Error(`worker: ${r.exceptionDetails.text}`);
    return r.result.value;
  };
  const snapshot = async (file) => {
    const [w] = workers;
    if (w !== undefined) await v8Call(w, `require("v8").writeHeapSnapshot(${JSON.stringify(file)})`);
  };
  /** Each worker's heap spaces: name → committed and used MB. */
  const spaces = async () => {
    const out = [];
    for (const w of workers) {
      const list = await v8Call(w, 'require("v8").getHeapSpaceStatistics()');
      out.push(
        Object.fromEntries(
          list.map((s) => [s.space_name, { sizeMb: s.space_size / MB, usedMb: s.space_used_size / MB }]),
        ),
      );
    }
    return out;
  };
  /** Sampling of what the first worker allocates that survives scavenges (see allocSummary). */
  const startAlloc = async () => {
    const [w] = workers;
    await call(w, "HeapProfiler.enable");
    await call(w, "HeapProfiler.startSampling", ALLOC_SAMPLING);
  };
  const stopAlloc = async () => {
    const [w] = workers;
    const { profile } = await call(w, "HeapProfiler.stopSampling");
    await call(w, "HeapProfiler.disable");
    return profile;
  };
  const close = async () => {
    await post("NodeWorker.disable");
    session.disconnect();
  };
  return { count: () => workers.length, memory, gc, snapshot, spaces, startAlloc, stopAlloc, close };
}

/**
 * BENCH_R_ALLOC=1: a sampling heap profile over the batch of what survived young-generation
 * collections (promoted to the old generation) and then died in a full one, plus what is still
 * live: the garbage that grows the old generation between full collections, by who allocated it.
 */
const ALLOC = process.env.BENCH_R_ALLOC === "1";
const ALLOC_SAMPLING = {
  samplingInterval: 16 * 1024,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: false,
};

/** Which part of the code allocated a sample. First match wins. */
const ALLOC_PARTS = [
  ["lifeline worker: request capture, pass-through SSE", (u) => /request-capture/.test(u)],
  ["lifeline worker: batcher, stream wire", (u) => /event-batcher|stream-wire|control-inbox/.test(u)],
  ["lifeline worker: other", (u) => /lifeline-worker|dist\/worker\/|dist\/shared\//.test(u)],
  ["pi-agent-core", (u) => /pi-agent-core/.test(u)],
  ["pi-ai, openai SDK", (u) => /pi-ai|node_modules\/openai/.test(u)],
  ["undici, web streams, node internals", (u) => /undici|^node:/.test(u)],
  ["other", () => true],
];

/** Self size by part (and the top functions) of a sampling heap profile, bytes per session. */
function allocSummary(profile, sessions) {
  const parts = new Map();
  const fns = new Map();
  const walk = (node, inherited) => {
    const url = node.callFrame.url;
    // A native or anonymous frame is charged to the JS that called it.
    const owner = url === "" ? inherited : url;
    const part = ALLOC_PARTS.find(([, match]) => match(owner))[0];
    parts.set(part, (parts.get(part) ?? 0) + node.selfSize);
    const fn = `${node.callFrame.functionName || "(anonymous)"} ${owner.split("/").slice(-2).join("/")}`;
    fns.set(fn, (fns.get(fn) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child, owner);
  };
  walk(profile.head, "");
  const per = (map) =>
    Object.fromEntries(
      [...map]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 25)
        .map(([k, v]) => [k, Math.round(v / sessions)]),
    );
  return { byPart: per(parts), topFunctions: per(fns) };
}

/** Sums the workers' figures key by key. */
function sumWorkers(list) {
  const out = { heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
  for (const w of list) for (const key of Object.keys(out)) out[key] += w[key];
  return out;
}

/** Main and worker figures → one row: what RSS holds, by part, MB. */
function breakdown(rss, main, workers) {
  const w = sumWorkers(workers);
  // external includes arrayBuffers; both live outside the V8 heaps, in malloc'd memory.
  const known = main.heapTotal + w.heapTotal + main.external + w.external;
  return {
    rssMb: rss,
    mainHeapUsedMb: main.heapUsed,
    mainHeapTotalMb: main.heapTotal,
    mainExternalMb: main.external,
    mainArrayBuffersMb: main.arrayBuffers,
    workerHeapUsedMb: w.heapUsed,
    workerHeapTotalMb: w.heapTotal,
    workerExternalMb: w.external,
    workerArrayBuffersMb: w.arrayBuffers,
    restMb: rss - known,
  };
}

// ---------------------------------------------------------------- the sides

/** The in-process loop: one Agent per session on this thread, pi's retry after a failed reply. */
async function baselineSide(n) {
  const mock = await startMock();
  const model = mockModel(mock.port);
  let events = 0;
  const listener = () => void events++;
  const { make, run } = inProcessAgents(model, listener, RETRY_DELAY_MS);
  const warm = Array.from({ length: WARM }, make);
  await Promise.all(warm.map((a, i) => run(a, `warm-up ${i}: answer me`)));
  const agents = Array.from({ length: n }, make);
  await sleep(200);
  let inspector;
  if (ALLOC) {
    inspector = new Session();
    inspector.connect();
    inspector.post("HeapProfiler.enable");
    inspector.post("HeapProfiler.startSampling", ALLOC_SAMPLING);
  }
  const t0 = performance.now();
  const results = await Promise.all(agents.map((a, i) => run(a, `batch ${i}: answer me${PADDING}`)));
  const wallMs = performance.now() - t0;
  const end = inMb(process.memoryUsage());
  const peakMb = peakRssMb();
  let alloc;
  if (inspector !== undefined) {
    const { profile } = await new Promise((resolve, reject) =>
      inspector.post("HeapProfiler.stopSampling", (error, result) => (error ? reject(error) : resolve(result))),
    );
    inspector.disconnect();
    alloc = allocSummary(profile, n);
  }
  await fullGc();
  const gced = inMb(process.memoryUsage());
  await mock.stop();
  return {
    side: "baseline",
    sessions: n,
    failed: results.filter((m) => m?.role !== "assistant" || m.stopReason !== "stop").length,
    events,
    wallMs,
    peakRssMb: peakMb,
    end: breakdown(end.rss, end, []),
    afterGc: breakdown(gced.rss, gced, []),
    alloc,
    retained: agents.length,
    loadavg: loadavg(),
  };
}

/** lifeline: a host with its default threads and auto-retry, one counting listener per session. */
async function lifelineSide(n) {
  const mock = await startMock();
  const options = { model: mockModel(mock.port), apiKey: "dummy" };
  let events = 0;
  const listener = () => void events++;
  const limits = {};
  if (process.env.BENCH_R_YOUNG_MB !== undefined)
    limits.maxYoungGenerationSizeMb = Number(process.env.BENCH_R_YOUNG_MB);
  if (process.env.BENCH_R_OLD_MB !== undefined) limits.maxOldGenerationSizeMb = Number(process.env.BENCH_R_OLD_MB);
  const { host, close } = await makeHost({
    settings: { retry: { baseDelayMs: RETRY_DELAY_MS } },
    ...(Object.keys(limits).length === 0 ? {} : { resourceLimits: limits }),
  });
  const { open, warmUp } = sessionOpener(host, options);
  await warmUp(WARM);
  if (SNAPSHOT_DIR !== undefined) {
    await mkdir(SNAPSHOT_DIR, { recursive: true });
    const inspector = await inspectWorkers();
    await inspector.gc();
    await inspector.snapshot(join(SNAPSHOT_DIR, "worker-warm.heapsnapshot"));
    await inspector.close();
  }
  const sessions = await open(n);
  for (const s of sessions) s.subscribe(listener);
  await sleep(200);
  let allocInspector;
  if (ALLOC) {
    allocInspector = await inspectWorkers();
    await allocInspector.startAlloc();
  }
  const t0 = performance.now();
  const batch = Promise.all(
    sessions.map((s, i) => s.prompt(`batch ${i}: answer me${PADDING}`).then(() => s.messages.at(-1))),
  );
  // BENCH_R_MID_MS: a snapshot of the worker that many ms into the batch (what streaming holds).
  const mid = Number(process.env.BENCH_R_MID_MS ?? 0);
  if (SNAPSHOT_DIR !== undefined && mid > 0) {
    await sleep(mid);
    const inspector = await inspectWorkers();
    await inspector.snapshot(join(SNAPSHOT_DIR, "worker-mid.heapsnapshot"));
    await inspector.close();
  }
  const results = await batch;
  const wallMs = performance.now() - t0;
  const rssAtEnd = process.memoryUsage().rss / MB;
  const peakMb = peakRssMb();
  let alloc;
  if (allocInspector !== undefined) {
    alloc = allocSummary(await allocInspector.stopAlloc(), n);
    await allocInspector.close();
  }
  const inspector = await inspectWorkers();
  const end = inMb(process.memoryUsage());
  const endWorkers = await inspector.memory();
  const endSpaces = await inspector.spaces();
  await inspector.gc();
  await fullGc();
  const gced = inMb(process.memoryUsage());
  const gcedWorkers = await inspector.memory();
  if (SNAPSHOT_DIR !== undefined) await inspector.snapshot(join(SNAPSHOT_DIR, "worker-end.heapsnapshot"));
  const workers = inspector.count();
  await inspector.close();
  await mock.stop();
  const result = {
    side: "lifeline",
    sessions: n,
    workers,
    failed: results.filter((m) => m?.role !== "assistant" || m.stopReason !== "stop").length,
    events,
    wallMs,
    peakRssMb: peakMb,
    end: breakdown(rssAtEnd, end, endWorkers),
    afterGc: breakdown(gced.rss, gced, gcedWorkers),
    workerSpacesAtEnd: endSpaces,
    alloc,
    retained: sessions.length,
    loadavg: loadavg(),
  };
  await close();
  return result;
}

// ---------------------------------------------------------------- parent

const [mode, arg] = process.argv.slice(2);
if (mode === "baseline") {
  report(await baselineSide(Number(arg)));
} else if (mode === "lifeline") {
  report(await lifelineSide(Number(arg)));
} else {
  const runs = await alternateSides("r", "./rss.mjs", REPS, N);
  const sides = {};
  for (const side of ["baseline", "lifeline"]) {
    const mine = runs.filter((r) => r.side === side);
    const agg = { reps: mine.length, failed: Math.max(...mine.map((r) => r.failed)), end: {}, afterGc: {} };
    for (const phase of ["end", "afterGc"]) {
      for (const key of Object.keys(mine[0][phase])) agg[phase][key] = median(mine.map((r) => r[phase][key]));
    }
    agg.rssRuns = mine.map((r) => r.end.rssMb);
    agg.peakRssRuns = mine.map((r) => r.peakRssMb);
    agg.wallMs = median(mine.map((r) => r.wallMs));
    sides[side] = agg;
  }
  report({
    section: "r",
    config: { N, WARM, REPS, TOKENS, RETRY_DELAY_MS },
    sides,
    ratio: sides.lifeline.end.rssMb / sides.baseline.end.rssMb,
    loadavg: loadavg(),
    runs,
  });
}
