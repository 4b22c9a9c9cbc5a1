/**
 * Section (o): process CPU per prompt, lifeline against the same agent loop run in-process (the
 * performance issue's target P3: lifeline ≤ 0.8× in-process), and RSS at the end of each (P4's
 * RSS half, at 5,000 sessions behind BENCH_P4_RSS=1).
 *
 * Workload and sides: bench/prompt-workload.mjs (section (i) measures telemetry on the same
 * workload). REPS runs a side, alternating which goes first; tables take medians.
 *
 * Profiles: one more run a side with `--cpu-prof` (the main thread and each worker thread write a
 * .cpuprofile) into BENCH_PROFILE_DIR/<side> (default <tmpdir>/lifeline-bench-o), summarised here
 * by component as self time per prompt over the measured batch only (samples outside it dropped).
 * BENCH_O_PROFILE=0 skips them (the default under BENCH_QUICK; BENCH_O_PROFILE=1 takes them there).
 * BENCH_P4_RSS=1 adds one run a side at 5,000 sessions for RSS.
 */
import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { alternateSides, median, pick, QUICK, report, runChild } from "./lib.mjs";
import { baselineSide, lifelineSide, RETRY_DELAY_MS, TOKENS, WARM } from "./prompt-workload.mjs";

const N = Number(process.env.BENCH_O_N ?? pick(1000, 200));
const REPS = Number(process.env.BENCH_O_REPS ?? pick(2, 1));
const P4_N = 5000;
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR ?? join(tmpdir(), "lifeline-bench-o");
/** The profiler's sampling interval: coarse enough that it does not swamp what it measures. */
const PROFILE_INTERVAL_US = 500;

// ---------------------------------------------------------------- profiles

/** Which component a profile node's self time belongs to. Order matters: first match wins. */
const COMPONENTS = [
  ["GC", (f) => f.functionName === "(garbage collector)"],
  [
    "idle / program",
    (f) => f.functionName === "(idle)" || f.functionName === "(program)" || f.functionName === "(root)",
  ],
  [
    "request capture (fetch wrapper, ALS)",
    (f) =>
      /request-capture\/(request-capture|request-timer|network-failure|provider-errors)/.test(f.url) ||
      /async_hooks|async_local_storage/.test(f.url),
  ],
  [
    "pass-through SSE reader (event-stream-watch, tail)",
    (f) => /request-capture\/(event-stream-watch|stream-tail)/.test(f.url),
  ],
  ["web streams (SDK body, pass-through copy)", (f) => /node:internal\/webstreams/.test(f.url)],
  ["event batcher, stream wire", (f) => /event-batcher|stream-wire|control-inbox/.test(f.url)],
  [
    "structured clone / postMessage",
    (f) =>
      /^(postMessage|structuredClone|serialize|deserialize|writeValue|readValue)$/.test(f.functionName) ||
      /comlink/.test(f.url),
  ],
  ["retry (main)", (f) => /main\/retry\/|main\/coordination\//.test(f.url)],
  ["worker session, serve loop", (f) => /dist\/worker\//.test(f.url) || /lifeline-worker/.test(f.url)],
  ["main thread lifeline (session, link, listeners)", (f) => /dist\/main\//.test(f.url)],
  ["agent loop (pi-agent-core)", (f) => /pi-agent-core/.test(f.url)],
  ["provider (pi-ai, openai SDK: SSE parse, chunk handling)", (f) => /pi-ai|node_modules\/openai/.test(f.url)],
  ["JSON parse / stringify", (f) => f.url === "" && /^(parse|stringify)$/.test(f.functionName)],
  [
    "HTTP client (undici), sockets, timers",
    (f) => /undici|node:net|node:internal\/(stream_base|net|timers|http|streams)|node:stream/.test(f.url),
  ],
  ["text decoding, other node internals", (f) => f.url.startsWith("node:")],
  ["other (builtins, bench)", () => true],
];

function componentOf(frame) {
  for (const [name, match] of COMPONENTS) if (match(frame)) return name;
  return "other (builtins, bench)";
}

/** Self time (µs) by component of `profile` within [fromUs, toUs] (the profile's monotonic clock). */
function selfTimeByComponent(profile, fromUs, toUs) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const out = new Map();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    const next = profile.timeDeltas[i + 1] ?? 0;
    if (t < fromUs || t > toUs) continue;
    const node = byId.get(profile.samples[i]);
    if (node === undefined) continue;
    const name = componentOf(node.callFrame);
    out.set(name, (out.get(name) ?? 0) + next);
  }
  return out;
}

/**
 * Runs one `side` under --cpu-prof (every thread writes a profile into PROFILE_DIR/<side>) and
 * summarises each thread's profile.
 */
async function profiledRun(side) {
  const dir = join(PROFILE_DIR, side);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const result = await runChild("./cpu-baseline.mjs", [side, String(N)], {
    execArgv: ["--cpu-prof", `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${PROFILE_INTERVAL_US}`],
  });
  const [fromUs, toUs] = result.batchUs;
  const files = (await readdir(dir)).filter((f) => f.endsWith(".cpuprofile"));
  const threads = [];
  for (const file of files) {
    const profile = JSON.parse(await readFile(join(dir, file), "utf8"));
    const components = selfTimeByComponent(profile, fromUs, toUs);
    const total = [...components.values()].reduce((a, b) => a + b, 0);
    if (total === 0) continue;
    // CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile; tid 0 is the main thread.
    const tid = Number(file.split(".").at(-3));
    threads.push({
      file,
      thread: `${side === "baseline" ? "in-process" : "lifeline"} ${tid === 0 ? "main" : `worker ${tid}`}`,
      usPerPrompt: Object.fromEntries([...components].map(([k, v]) => [k, v / N])),
    });
  }
  return { side, dir, processCpuUsPerPrompt: result.processCpuUsPerPrompt, batchUs: result.batchUs, threads };
}

// ---------------------------------------------------------------- parent

const [mode, arg] = process.argv.slice(2);
if (mode === "baseline") {
  report(await baselineSide(Number(arg)));
} else if (mode === "lifeline") {
  report(await lifelineSide(Number(arg)));
} else {
  const runs = await alternateSides("o", "./cpu-baseline.mjs", REPS, N);
  const keys = [
    "processCpuUsPerPrompt",
    "userUsPerPrompt",
    "systemUsPerPrompt",
    "mainCpuUsPerPrompt",
    "workerCpuUsPerPrompt",
    "wallMs",
    "events",
    "rssMb",
  ];
  const sides = {};
  for (const side of ["baseline", "lifeline"]) {
    const mine = runs.filter((r) => r.side === side);
    const agg = { reps: mine.length, failed: Math.max(...mine.map((r) => r.failed)) };
    for (const key of keys) {
      const values = mine.map((r) => r[key]).filter((v) => typeof v === "number");
      agg[key] = values.length === 0 ? null : median(values);
    }
    agg.processCpuRuns = mine.map((r) => r.processCpuUsPerPrompt);
    sides[side] = agg;
  }
  let profile;
  if ((process.env.BENCH_O_PROFILE ?? (QUICK ? "0" : "1")) === "1") {
    profile = [];
    for (const side of ["baseline", "lifeline"]) {
      process.stderr.write(`  (o) ${side} under --cpu-prof, ${N} sessions → ${PROFILE_DIR}/${side} …\n`);
      profile.push(await profiledRun(side));
    }
  }
  let p4;
  if (process.env.BENCH_P4_RSS === "1") {
    p4 = {};
    for (const side of ["baseline", "lifeline"]) {
      process.stderr.write(`  (o) P4 RSS: ${side}, ${P4_N} sessions …\n`);
      const r = await runChild("./cpu-baseline.mjs", [side, String(P4_N)]);
      p4[side] = { rssMb: r.rssMb, failed: r.failed, processCpuUsPerPrompt: r.processCpuUsPerPrompt };
    }
  }
  report({
    section: "o",
    config: { N, WARM, REPS, TOKENS, RETRY_DELAY_MS },
    sides,
    ratio: sides.lifeline.processCpuUsPerPrompt / sides.baseline.processCpuUsPerPrompt,
    profile,
    p4,
    loadavg: loadavg(),
    runs,
  });
}
