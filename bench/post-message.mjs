/**
 * Section (a): what one delivered event costs the main thread, against raw postMessage.
 *
 * Baseline (same process, same run):
 * - raw round trip: main posts a ~60-byte message to a bare worker (bench/echo-worker.mjs), which
 *   posts it straight back; N sequential round trips. Main-thread CPU per round trip (one send +
 *   one receive) and the round-trip latency.
 * - raw one-way: the worker posts N small event-shaped messages; main-thread CPU per message received.
 *
 * lifeline: prompts through a real session (piscina worker) on the demo models; a subscribe()
 * listener counts what it receives. Main-thread CPU from the first prompt() to the last
 * settlement, divided by the events delivered. For reference, the same prompts run through
 * pi-agent-core's Agent in-process on the main thread (what lifeline moves off the main thread).
 *
 * Main-thread CPU is the main thread's own scheduler run time (lib.mjs mainThreadCpuNs), not
 * process.cpuUsage(), which also counts the worker threads.
 */
import { Worker } from "node:worker_threads";
import { Agent } from "@mariozechner/pi-agent-core";
import { demoModels } from "../dist/worker/demo-provider.js";
import { cpuClockName, makeHost, pick, report, sleep, startMeter, summarize } from "./lib.mjs";

const RTT_N = pick(20_000, 4_000);
const RTT_WARMUP = pick(2_000, 500);
const FLOOD_N = pick(100_000, 20_000);
const FAST_PROMPTS = pick(300, 60);
const FAST_WARMUP = pick(30, 10);
const FAST_WORDS = 100;
const STREAM_SESSIONS = pick(100, 30);
const STREAM_WORDS = pick(60, 30);

// ---------------------------------------------------------------- raw postMessage baseline

async function rawBaseline() {
  const worker = new Worker(new URL("./echo-worker.mjs", import.meta.url));
  await new Promise((resolve) => worker.once("online", resolve));

  // Round trips: { type, id, args: { sessionId, n, text } }, about 60 bytes, as in fact F7 of docs/architecture.md.
  let pending;
  worker.on("message", (message) => pending?.(message));
  const roundTrip = (n) =>
    new Promise((resolve) => {
      pending = resolve;
      worker.postMessage({ cmd: "echo", id: n, args: { sessionId: "s-1", n, text: "hello" } });
    });
  for (let i = 0; i < RTT_WARMUP; i++) await roundTrip(i);
  const latencies = new Array(RTT_N);
  const meter = startMeter();
  for (let i = 0; i < RTT_N; i++) {
    const t0 = performance.now();
    await roundTrip(i);
    latencies[i] = (performance.now() - t0) * 1e3; // µs
  }
  const rtt = meter();
  pending = undefined;

  // One-way stream of event-shaped messages (no transcript inside), like a bare delta.
  const payload = {
    type: "event",
    sessionId: "6f1d3c1e-2b7a-4c55-9d1e-0a8b7c6d5e4f",
    event: {
      type: "message_update",
      assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "lifeline runs " },
    },
  };
  const flood = (count) =>
    new Promise((resolve) => {
      let received = 0;
      const onMessage = (message) => {
        if (message.cmd === "flood_done") {
          worker.off("message", onMessage);
          resolve(received);
        } else received++;
      };
      worker.on("message", onMessage);
      worker.postMessage({ cmd: "flood", count, payload });
    });
  await flood(Math.min(10_000, FLOOD_N));
  const floodMeter = startMeter();
  const received = await flood(FLOOD_N);
  const oneWay = floodMeter();
  await worker.terminate();

  return {
    rttLatencyUs: summarize(latencies),
    rttMainCpuNsPerMessage: rtt.cpuNs / RTT_N,
    rttMainEluMsPerMessage: rtt.eluActiveMs / RTT_N,
    oneWayMainCpuNsPerMessage: oneWay.cpuNs / received,
    oneWayMessages: received,
  };
}

// ---------------------------------------------------------------- lifeline and in-process runs

function countingListener(counts) {
  return (event) => {
    counts.events++;
    if (event.type === "message_update") {
      counts.updates++;
      const inner = event.assistantMessageEvent;
      if (inner.type === "text_delta") counts.chars += inner.delta.length;
    }
  };
}

const newCounts = () => ({ events: 0, updates: 0, chars: 0 });

/** Sequential prompts on one session, demo-fast (no delay between chunks). */
async function lifelineFastSequential() {
  const { host, close } = await makeHost();
  try {
    const session = await host.createSession({ model: "demo/demo-fast" });
    const counts = newCounts();
    session.subscribe(countingListener(counts));
    for (let i = 0; i < FAST_WARMUP; i++) await session.prompt(`[words=${FAST_WORDS}] warm-up ${i}`);
    Object.assign(counts, newCounts());
    const meter = startMeter();
    for (let i = 0; i < FAST_PROMPTS; i++) {
      const result = await session.prompt(`[words=${FAST_WORDS}] prompt ${i}`);
      if (result.stopReason !== "stop") throw new Error(`unexpected stop ${result.stopReason}`);
    }
    const m = meter();
    return { ...m, ...counts, prompts: FAST_PROMPTS, workers: host.workerCount };
  } finally {
    await close();
  }
}

function inProcessAgent(model) {
  return new Agent({
    initialState: { systemPrompt: "", model, tools: [], messages: [] },
    sessionId: crypto.randomUUID(),
  });
}

async function inProcessFastSequential() {
  const model = demoModels().get("demo-fast");
  const agent = inProcessAgent(model);
  const counts = newCounts();
  agent.subscribe(countingListener(counts));
  for (let i = 0; i < FAST_WARMUP; i++) await agent.prompt(`[words=${FAST_WORDS}] warm-up ${i}`);
  Object.assign(counts, newCounts());
  const meter = startMeter();
  for (let i = 0; i < FAST_PROMPTS; i++) await agent.prompt(`[words=${FAST_WORDS}] prompt ${i}`);
  const m = meter();
  return { ...m, ...counts, prompts: FAST_PROMPTS };
}

/** STREAM_SESSIONS sessions stream one demo-stream answer each, concurrently. */
async function lifelineStreamConcurrent() {
  const { host, close } = await makeHost();
  try {
    const sessions = [];
    for (let i = 0; i < STREAM_SESSIONS; i++) sessions.push(await host.createSession({ model: "demo/demo-stream" }));
    const counts = newCounts();
    for (const session of sessions) session.subscribe(countingListener(counts));
    await sleep(200);
    const meter = startMeter();
    await Promise.all(sessions.map((session, i) => session.prompt(`[words=${STREAM_WORDS}] stream ${i}`)));
    const m = meter();
    return { ...m, ...counts, prompts: STREAM_SESSIONS, workers: host.workerCount };
  } finally {
    await close();
  }
}

async function inProcessStreamConcurrent() {
  const model = demoModels().get("demo-stream");
  const agents = Array.from({ length: STREAM_SESSIONS }, () => inProcessAgent(model));
  const counts = newCounts();
  for (const agent of agents) agent.subscribe(countingListener(counts));
  const meter = startMeter();
  await Promise.all(agents.map((agent, i) => agent.prompt(`[words=${STREAM_WORDS}] stream ${i}`)));
  const m = meter();
  return { ...m, ...counts, prompts: STREAM_SESSIONS };
}

// ---------------------------------------------------------------- main

const raw = await rawBaseline();
const lifelineFast = await lifelineFastSequential();
const inProcessFast = await inProcessFastSequential();
const lifelineStream = await lifelineStreamConcurrent();
const inProcessStream = await inProcessStreamConcurrent();

const row = (name, r, extra = {}) => ({
  name,
  prompts: r.prompts,
  events: r.events,
  updates: r.updates,
  chars: r.chars,
  mainCpuMs: r.cpuNs / 1e6,
  wallMs: r.wallMs,
  mainCpuNsPerEvent: r.cpuNs / r.events,
  mainCpuNsPerPrompt: r.cpuNs / r.prompts,
  ...extra,
});

const runs = [
  row("lifeline demo-fast, 1 session, sequential", lifelineFast, { workers: lifelineFast.workers }),
  row("in-process Agent demo-fast, 1 session, sequential", inProcessFast),
  row(`lifeline demo-stream, ${STREAM_SESSIONS} sessions concurrent`, lifelineStream, {
    workers: lifelineStream.workers,
  }),
  row(`in-process Agent demo-stream, ${STREAM_SESSIONS} sessions concurrent`, inProcessStream),
];
// Source events: what the agent emits before batching. The in-process run of the same prompts
// counts them; lifeline's worker emits the same sequence (coalescing happens after).
runs[0].sourceEventsEstimate = inProcessFast.events * (lifelineFast.prompts / inProcessFast.prompts);
runs[0].mainCpuNsPerSourceEvent = lifelineFast.cpuNs / runs[0].sourceEventsEstimate;
runs[2].sourceEventsEstimate = inProcessStream.events;
runs[2].mainCpuNsPerSourceEvent = lifelineStream.cpuNs / inProcessStream.events;

report({
  section: "a",
  clock: cpuClockName(),
  config: { RTT_N, FLOOD_N, FAST_PROMPTS, FAST_WORDS, STREAM_SESSIONS, STREAM_WORDS },
  raw,
  runs,
});
