/**
 * Who had the CPUs while the host waited: the slowest moments of a bench run matched against a
 * system-wide `perf` recording of the same run (Linux, root). Section (m)'s stalls of the host's
 * loop ("(m)", "What the stalls are, read from perf", in docs/performance-history.md), or section (l)'s
 * slowest aborts, `abort()` to the prompt settled ("(l)", "The busy tail, read from perf").
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
 *   node bench/stall-perf.mjs /tmp/m.txt /tmp/m.out [count=8]
 *
 *   node --expose-gc --perf-basic-prof bench/abort-under-load.mjs > /tmp/l.out &    # and perf as above
 *   node bench/stall-perf.mjs /tmp/l.txt /tmp/l.out 8 busy.slowest
 *
 * `-k CLOCK_MONOTONIC` puts perf's timestamps on the clock of `process.hrtime`, on which both
 * benches record when each moment began (`fromHr`); the recording must cover the run. For each of
 * the longest this prints the main thread's sampled run time (beside schedstat's, where (m) has
 * it), who ran (threads by name and id), what the main thread and the busiest other thread of
 * the host ran (GC, the poll, or their hottest JavaScript frames), and per CPU how long no sample
 * was taken at all: a CPU with no sample, not even the idle task's, was not running the guest.
 */
import { readFileSync } from "node:fs";

const [perfFile, resultFile, countArg, listPath = "topStalls"] = process.argv.slice(2);
if (perfFile === undefined || resultFile === undefined) {
  console.error(
    "usage: node bench/stall-perf.mjs <perf script output> <bench run output> [count] [list, e.g. busy.slowest]",
  );
  process.exit(2);
}
const COUNT = Number(countArg ?? 8);
/** The sampling frequency the commands above give perf: one sample is this many ms of a CPU. */
const SAMPLE_MS = 1000 / 1999;

const line = readFileSync(resultFile, "utf8")
  .split("\n")
  .find((l) => l.startsWith("BENCH_RESULT "));
if (line === undefined) throw new Error(`${resultFile} holds no BENCH_RESULT line (a bench run's output)`);
const result = JSON.parse(line.slice("BENCH_RESULT ".length));
/** The moments to look at: {fromHr, gapMs, phase, atMs?, ranMs?} each. */
const moments = listPath.split(".").reduce((value, key) => value?.[key], result);
if (result.pid === undefined || !Array.isArray(moments) || moments.some((m) => m.fromHr === undefined))
  throw new Error(`${resultFile} has no pid, or no ${listPath} with a clock: re-run it with this bench`);

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

/** What a thread was doing in one sample. */
function activity(stack) {
  const all = stack.join(" ");
  if (/Scaveng|CollectGarbage|MarkCompact|Marking|Sweep|Evacuat/.test(all)) return "GC";
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
    .map(([name, count]) => `${name} ${(count * SAMPLE_MS).toFixed(1)}`)
    .join(", ");
}

const samples = readSamples(perfFile);
if (samples.length === 0) throw new Error(`${perfFile} holds no samples (perf script -F comm,pid,tid,cpu,time,ip,sym)`);
const cpus = [...new Set(samples.map((s) => s.cpu))].sort((a, b) => a - b);
const main = result.pid;
const first = samples[0].t;
const last = samples.at(-1).t;
const who = (s) =>
  s.tid === main ? "MAIN" : s.tid === 0 ? "(idle)" : s.pid === main ? `host:${s.tid}` : `${s.comm}:${s.tid}`;
console.log(`main thread ${main}; perf ${first.toFixed(3)}–${last.toFixed(3)} s, ${samples.length} samples`);
console.log("ms: the main thread by perf (and by schedstat where known); who ran (host:<tid>: the host process's");
console.log(
  "other threads, its workers and V8's helpers; others by name:<tid>); per CPU, the time with no sample at all",
);

for (const moment of [...moments].sort((a, b) => b.gapMs - a.gapMs).slice(0, COUNT)) {
  const from = moment.fromHr;
  const to = from + moment.gapMs / 1000;
  const at = moment.atMs === undefined ? moment.phase : `${(moment.atMs / 1000).toFixed(2)} s, ${moment.phase}`;
  if (from < first || to > last) {
    console.log(`\n${moment.gapMs.toFixed(1)} ms at ${at}: outside the recording`);
    continue;
  }
  const inside = samples.slice(lowerBound(samples, from), lowerBound(samples, to));
  const threads = new Map();
  /** What each thread ran, by thread. */
  const doing = new Map();
  for (const s of inside) {
    const name = who(s);
    threads.set(name, (threads.get(name) ?? 0) + 1);
    const its = doing.get(name) ?? new Map();
    const what = activity(s.stack);
    its.set(what, (its.get(what) ?? 0) + 1);
    doing.set(name, its);
  }
  const mainMs = (threads.get("MAIN") ?? 0) * SAMPLE_MS;
  const schedstat = moment.ranMs === undefined ? "" : `, ${moment.ranMs.toFixed(1)} by schedstat`;
  console.log(`\n${moment.gapMs.toFixed(1)} ms at ${at}: main ran ${mainMs.toFixed(1)} by perf${schedstat}`);
  console.log(`  ran: ${top(threads, 8)}`);
  if (doing.has("MAIN")) console.log(`  main: ${top(doing.get("MAIN"), 6)}`);
  const busiest = [...threads.entries()].filter(([name]) => name.startsWith("host:")).sort((a, b) => b[1] - a[1])[0];
  if (busiest !== undefined) console.log(`  ${busiest[0]}: ${top(doing.get(busiest[0]), 6)}`);
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
