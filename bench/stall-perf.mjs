/**
 * Who had the CPUs during the host's worst stalls: section (m)'s stalls matched against a
 * system-wide `perf` recording of the same run (Linux, root; section "(m)", "What the stalls
 * are, read from perf", in docs/performance.md).
 *
 * (m) splits each stall into the main thread's run time and its run-queue wait with the thread's
 * schedstat. On a virtual machine that figure can be wrong: while the hypervisor holds a vCPU,
 * the guest still charges the time to the thread that was on it (the steal is not reported), so
 * a stall can read as the main thread's own work when nothing of the guest ran. perf samples only
 * what runs, on every CPU, so it tells the two apart, and names who ran instead.
 *
 *   STALL_WORKER_PRIORITY=10 node --expose-gc --perf-basic-prof bench/stall-scale.mjs run 5000 > /tmp/m.out &
 *   perf record -a -g -F 1999 -k CLOCK_MONOTONIC -o /tmp/m.data -- sleep 50
 *   perf script -i /tmp/m.data -F comm,pid,tid,cpu,time,ip,sym > /tmp/m.txt
 *   node bench/stall-perf.mjs /tmp/m.txt /tmp/m.out [stalls=8]
 *
 * `-k CLOCK_MONOTONIC` puts perf's timestamps on the clock of `process.hrtime`, which (m) records
 * with each stall (`fromHr`); the recording must cover the run (start it within a second of the
 * bench, stop it after). For each of the longest stalls this prints the main thread's sampled run
 * time beside schedstat's, what the main thread ran (GC, the poll, or its hottest JavaScript
 * frames), who else ran (threads by name and id), and per CPU how long no sample was taken at
 * all: a CPU with no sample, not even the idle task's, was not running the guest.
 */
import { readFileSync } from "node:fs";

const [perfFile, resultFile, countArg] = process.argv.slice(2);
if (perfFile === undefined || resultFile === undefined) {
  console.error("usage: node bench/stall-perf.mjs <perf script output> <stall-scale run output> [stalls]");
  process.exit(2);
}
const STALLS = Number(countArg ?? 8);
/** The sampling frequency the commands above give perf: one sample is this many ms of a CPU. */
const SAMPLE_MS = 1000 / 1999;

const line = readFileSync(resultFile, "utf8")
  .split("\n")
  .find((l) => l.startsWith("BENCH_RESULT "));
if (line === undefined) throw new Error(`${resultFile} holds no BENCH_RESULT line (a stall-scale.mjs run's output)`);
const result = JSON.parse(line.slice("BENCH_RESULT ".length));
if (result.pid === undefined || result.topStalls.some((s) => s.fromHr === undefined))
  throw new Error(`${resultFile} has no pid or stall clock: re-run it with this bench/stall-scale.mjs`);

/** perf script's samples: a header line (comm, tid, [cpu], time:) and the call chain, leaf first. */
function readSamples(file) {
  const samples = [];
  let current;
  for (const text of readFileSync(file, "utf8").split("\n")) {
    const head = /^\s*(.+?)\s+(\d+)\/(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s*$/.exec(text);
    if (head !== null) {
      const [, comm, pid, tid, cpu, t] = head;
      current = { comm, pid: Number(pid), tid: Number(tid), cpu: Number(cpu), t: Number(t), stack: [] };
      samples.push(current);
    } else if (current !== undefined && text.trim() !== "") {
      const parts = text.trim().split(/\s+/);
      current.stack.push(parts.slice(1).join(" "));
    }
  }
  return samples.sort((a, b) => a.t - b.t);
}

/** What the main thread was doing in one sample. */
function activity(stack) {
  const all = stack.join(" ");
  if (/Scavenge|CollectGarbage|MarkCompact|IncrementalMarking|Sweep/.test(all)) return "GC";
  const js = stack.find((frame) => frame.startsWith("JS:"));
  if (js !== undefined) return js.slice(0, 90);
  if (/epoll_pwait|uv__io_poll/.test(all)) return "(poll, no JavaScript)";
  return (stack[0] ?? "?").slice(0, 90);
}

function lowerBound(samples, t) {
  let lo = 0;
  let hi = samples.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (samples[mid].t < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function top(counts, n) {
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, samples]) => `${name} ${(samples * SAMPLE_MS).toFixed(1)}`)
    .join(", ");
}

const samples = readSamples(perfFile);
if (samples.length === 0) throw new Error(`${perfFile} holds no samples (perf script -F comm,pid,tid,cpu,time,ip,sym)`);
const cpus = [...new Set(samples.map((s) => s.cpu))].sort((a, b) => a - b);
const main = result.pid;
const first = samples[0].t;
const last = samples.at(-1).t;
console.log(
  `${result.sessions} sessions; main thread ${main}; perf ${first.toFixed(3)}–${last.toFixed(3)} s, ${samples.length} samples`,
);
console.log("ms per stall: the main thread by schedstat and by perf; who ran (host:<tid>: the host process's other");
console.log("threads, its workers and V8's helpers; others by name:<tid>); per CPU, the time with no sample at all");

for (const stall of [...result.topStalls].sort((a, b) => b.gapMs - a.gapMs).slice(0, STALLS)) {
  const from = stall.fromHr;
  const to = from + stall.gapMs / 1000;
  const phase = `${(stall.atMs / 1000).toFixed(2)} s, ${stall.phase}`;
  if (from < first || to > last) {
    console.log(`\nstall ${stall.gapMs.toFixed(1)} ms at ${phase}: outside the recording`);
    continue;
  }
  const inside = samples.slice(lowerBound(samples, from), lowerBound(samples, to));
  const threads = new Map();
  const doing = new Map();
  for (const s of inside) {
    const who =
      s.tid === main ? "MAIN" : s.tid === 0 ? "(idle)" : s.pid === main ? `host:${s.tid}` : `${s.comm}:${s.tid}`;
    threads.set(who, (threads.get(who) ?? 0) + 1);
    if (s.tid === main) doing.set(activity(s.stack), (doing.get(activity(s.stack)) ?? 0) + 1);
  }
  const mainMs = (threads.get("MAIN") ?? 0) * SAMPLE_MS;
  console.log(
    `\nstall ${stall.gapMs.toFixed(1)} ms at ${phase}: main ran ${stall.ranMs.toFixed(1)} by schedstat, ${mainMs.toFixed(1)} by perf`,
  );
  console.log(`  ran: ${top(threads, 8)}`);
  if (doing.size > 0) console.log(`  main: ${top(doing, 6)}`);
  for (const cpu of cpus) {
    const times = [from, ...inside.filter((s) => s.cpu === cpu).map((s) => s.t), to];
    let uncovered = 0;
    for (let i = 1; i < times.length; i++) {
      const gapMs = (times[i] - times[i - 1]) * 1000;
      if (gapMs > 3 * SAMPLE_MS) uncovered += gapMs - SAMPLE_MS;
    }
    console.log(`  cpu${cpu}: ${times.length - 2} samples, no sample for ${uncovered.toFixed(1)} ms`);
  }
}
