/**
 * Section (c): main-thread event-loop delay while many sessions stream at once.
 *
 * Variants, each in a fresh process (this file spawns itself with arguments):
 *   lifeline  N  — N lifeline sessions (piscina worker, default thread count) on demo/demo-stream
 *   inprocess N  — N pi-agent-core `Agent`s on the main thread, same demo-stream model (imported
 *                  from dist/worker/demo-provider.js, so the same faux stream runs in this thread)
 * for N = 100 and 1,000.
 *
 * Workload: every session gets the same prompt, `[words=WORDS] …`, all started at once. The demo
 * model streams ~50 tokens/s per session (a 3–5-token chunk every 60–100 ms), the rate of a real
 * streaming LLM, so N sessions mean ~12·N deltas/s. WORDS is large enough that no answer ends
 * inside the measured window, so both sides do steady streaming for the whole window. (demo-fast
 * was not used: it emits a whole answer in one burst of microtasks, which measures one long stall
 * per prompt rather than the steady interleaving of many live streams.)
 *
 * Phases: sessions created and subscribed (not measured) → IDLE_S with all sessions idle
 * (reported as "idle") → all prompts started → WARM_S ramp (its max is reported as "startMax")
 * → WINDOW_S measured window: monitorEventLoopDelay (resolution 1 ms), main-thread CPU,
 * event-loop utilisation, and what the listeners received (events, text chars) to show that both
 * sides did the same work. Then every run is aborted and the host closed.
 *
 * Histogram values are as Node reports them: each sample is the interval between two ticks of a
 * 1 ms timer, so an idle loop reads ~1.1 ms, not 0. Ratios use these raw values (conservative
 * for lifeline, whose figures sit closer to the 1 ms floor).
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Agent } from "@mariozechner/pi-agent-core";
import { demoModels } from "../dist/worker/demo-provider.js";
import { fullGc, makeHost, mapLimit, pick, report, runChild, sleep, startMeter } from "./lib.mjs";

const IDLE_S = pick(2, 1);
const WARM_S = pick(2, 1.5);
const WINDOW_S = pick(10, 4);
const WORDS = 1000;
const SIZES = [100, 1000];

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
  const counts = { events: 0, updates: 0, chars: 0, settled: 0 };
  const listener = (event) => {
    counts.events++;
    if (event.type === "message_update") {
      counts.updates++;
      const inner = event.assistantMessageEvent;
      if (inner.type === "text_delta") counts.chars += inner.delta.length;
    }
  };

  // ---- setup (not measured)
  let runners;
  let stopAll;
  let closeHost = async () => {};
  let workers;
  if (mode === "lifeline") {
    const { host, close } = await makeHost();
    closeHost = close;
    const sessions = await mapLimit(
      Array.from({ length: n }, (_, i) => i),
      32,
      () => host.createSession({ model: "demo/demo-stream" }),
    );
    for (const session of sessions) session.subscribe(listener);
    workers = host.workerCount;
    runners = sessions.map((session) => (text) => session.prompt(text));
    stopAll = () => Promise.all(sessions.map((session) => session.abort()));
  } else if (mode === "inprocess") {
    const model = demoModels().get("demo-stream");
    const agents = Array.from(
      { length: n },
      () =>
        new Agent({
          initialState: { systemPrompt: "", model, tools: [], messages: [] },
          sessionId: crypto.randomUUID(),
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
  const before = { ...counts };
  const h = monitorEventLoopDelay({ resolution: 1 });
  const meter = startMeter();
  h.enable();
  await sleep(WINDOW_S * 1000);
  h.disable();
  const m = meter();
  const window = {
    events: counts.events - before.events,
    updates: counts.updates - before.updates,
    chars: counts.chars - before.chars,
    settled: counts.settled - before.settled,
  };
  const rssMb = process.memoryUsage().rss / 2 ** 20;

  // ---- stop
  stop = true;
  await stopAll();
  await Promise.allSettled(loops);
  await closeHost();

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
    settledInWindow: window.settled,
    rssMb,
  };
}

const [mode, n] = process.argv.slice(2);
if (mode !== undefined) {
  report(await variant(mode, Number(n)));
} else {
  const runs = [];
  for (const size of SIZES) {
    for (const m of ["inprocess", "lifeline"]) {
      process.stderr.write(`  (c) ${m} × ${size} …\n`);
      runs.push(await runChild("./event-loop.mjs", [m, String(size)]));
    }
  }
  report({ section: "c", config: { IDLE_S, WARM_S, WINDOW_S, WORDS, SIZES }, runs });
}
