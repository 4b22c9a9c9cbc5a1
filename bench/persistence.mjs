/**
 * Section (e): what session persistence costs the host's event loop (the target: persistence
 * must not move the host's event-loop p99 by more than 20 %).
 *
 * Variants, each in a fresh process, interleaved, REPS times each:
 *   off  N — N lifeline sessions on demo/demo-stream, no session files (the baseline)
 *   on   N — the same with `sessions: { dir }` and the default fsync policy ("batch")
 * for N = 1,000. Unlike section (c), every session keeps finishing short answers and starting the
 * next prompt for the whole window, so the window is full of what persistence writes: each prompt's
 * user message (written ahead, before its run is posted) and each reply at its end.
 *
 * Reported per variant: event-loop delay (monitorEventLoopDelay, 1 ms resolution) p50/p99/max,
 * prompts completed in the window, main-thread CPU per prompt, and (on) the bytes written.
 */
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { makeHost, mapLimit, median, pick, report, runChild, sleep, startMeter } from "./lib.mjs";

const SIZE = 1000;
const WORDS = 12;
const WARM_S = pick(3, 1.5);
const WINDOW_S = pick(10, 4);
const REPS = pick(3, 1);

async function dirBytes(dir) {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath ?? entry.path, entry.name))).size;
  }
  return total;
}

async function variant(mode, n) {
  const { host, dir, close } = await makeHost(mode === "on" ? { sessions: {} } : {});
  const sessionsDir = join(dir, "sessions");
  const sessions = await mapLimit(
    Array.from({ length: n }, (_, i) => i),
    32,
    () => host.createSession({ model: "demo/demo-stream" }),
  );
  let settled = 0;
  let stop = false;
  const loops = sessions.map(async (session, i) => {
    while (!stop) {
      await session.prompt(`[words=${WORDS}] session ${i}: a short answer, then the next prompt`);
      settled++;
    }
  });
  await sleep(WARM_S * 1000);
  const before = settled;
  const bytesBefore = mode === "on" ? await dirBytes(sessionsDir) : 0;
  const h = monitorEventLoopDelay({ resolution: 1 });
  const meter = startMeter();
  h.enable();
  await sleep(WINDOW_S * 1000);
  h.disable();
  const m = meter();
  const prompts = settled - before;
  stop = true;
  await Promise.all(sessions.map((session) => session.abort()));
  await Promise.allSettled(loops);
  for (const session of sessions) await session.flushSession?.();
  const bytes = mode === "on" ? (await dirBytes(sessionsDir)) - bytesBefore : 0;
  await close();
  const ms = (ns) => ns / 1e6;
  return {
    mode,
    sessions: n,
    delay: { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) },
    promptsPerS: prompts / (m.wallMs / 1e3),
    mainCpuUsPerPrompt: m.cpuNs / 1e3 / prompts,
    elu: m.elu,
    bytesWrittenPerS: bytes / (m.wallMs / 1e3),
  };
}

const [mode, n] = process.argv.slice(2);
if (mode !== undefined) {
  report(await variant(mode, Number(n)));
} else {
  const runs = [];
  for (let rep = 1; rep <= REPS; rep++) {
    for (const m of ["off", "on"]) {
      process.stderr.write(`  (e) run ${rep}/${REPS}: persistence ${m} × ${SIZE} …\n`);
      runs.push({ rep, ...(await runChild("./persistence.mjs", [m, String(SIZE)])) });
    }
  }
  const aggregates = ["off", "on"].map((m) => {
    const mine = runs.filter((r) => r.mode === m);
    const of = (get) => mine.map(get);
    return {
      mode: m,
      sessions: SIZE,
      reps: mine.length,
      p50: median(of((r) => r.delay.p50)),
      p99: median(of((r) => r.delay.p99)),
      p99Min: Math.min(...of((r) => r.delay.p99)),
      p99Max: Math.max(...of((r) => r.delay.p99)),
      max: median(of((r) => r.delay.max)),
      promptsPerS: median(of((r) => r.promptsPerS)),
      mainCpuUsPerPrompt: median(of((r) => r.mainCpuUsPerPrompt)),
      elu: median(of((r) => r.elu)),
      bytesWrittenPerS: median(of((r) => r.bytesWrittenPerS)),
    };
  });
  report({ section: "e", config: { SIZE, WORDS, WARM_S, WINDOW_S, REPS }, aggregates, runs });
}
