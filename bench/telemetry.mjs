/**
 * Section (i): what OpenTelemetry recording (B9, docs/observability.md) costs a host: process CPU
 * per prompt (the target), and supplementary parts on the main thread and lifeline's recording alone.
 *
 * Three modes (bench/telemetry-modes.mjs): off (`telemetry: false`), api (`@opentelemetry/api`
 * installed, no provider registered) and sdk (the real SDK recording every metric and span, into
 * a sink), interleaved over rounds, medians reported.
 *
 * The target's part, prompts: process CPU per prompt on section (o)'s workload
 * (bench/prompt-workload.mjs: PROMPT_SESSIONS sessions prompted at once, each answered by the mock
 * in its own process with a 503, then 200 streamed tokens over HTTP/SSE): each run a fresh child
 * process (bench/telemetry-prompts.mjs) in one mode, `process.cpuUsage()` of the whole process
 * (main thread and worker threads) from the first prompt to the last settle, divided by the
 * prompts; PROMPT_REPS rounds, each running the three modes in a rotating order. Targets: api ÷ off
 * ≤ 1.02 and sdk ÷ off ≤ 1.03, ratios of the medians. What a user pays for telemetry, against the
 * whole cost of a prompt; the parts below isolate the main thread's share and lifeline's recording.
 *
 * Supplementary parts, each mode a fresh host in this process:
 * Part 1, CPU per model request, two workloads, each mode's main-thread CPU (lib.mjs) divided by
 * the requests it served:
 * - short: SESSIONS sessions on demo/demo-fast, each sending PROMPTS sequential prompts of a
 *   40-word reply (one model request each). The hard case: a short reply costs the main thread
 *   little, so telemetry's fixed cost per request is the largest share of it.
 * - streamed: STREAMED_SESSIONS sessions on demo/demo-stream (about 50 tokens/s, chunks of 3 to 5
 *   tokens, each crossing on its own), each sending STREAMED_PROMPTS sequential prompts of a
 *   STREAMED_WORDS-word reply (about 275 tokens, 70 chunks): a realistic streamed reply.
 * Part 2, the host's event-loop delay p99 with STREAM_SESSIONS sessions streaming
 * demo/demo-stream, off vs sdk, over a WINDOW_S window after WARM_S.
 * Part 3, idle: the main thread's CPU per second of a host with one session and nothing running,
 * off vs sdk, over IDLE_S: the fixed cost of recording (the loop-delay sampler's wake-ups and the
 * reader's collection each second), which the per-request figures above include, spread over
 * the requests served in the same time. Each workload's share of it is reported beside it.
 *
 * Part 4, replay: one prompt's events (a 40-word reply in 3 updates, one model request) replayed
 * REPLAY_REQUESTS times through 20 sessions' telemetry in this process, with the SDK, a collection
 * and a span flush every 500 requests: lifeline's recording alone, per request, in process CPU
 * time, so the machine's load hardly moves it (the other parts measure a whole host, where the
 * load of a shared machine blurs differences of a few µs). And the same for one prompt of (o)'s
 * workload (its events captured from a real run: a 503, a retry, a reply of TOKENS tokens whose
 * chunk gaps are one histogram record each), REPLAY_O_PROMPTS times: set against the prompts
 * part's process CPU per prompt, it says what share of a prompt lifeline's recording and the SDK
 * behind it take, without the whole-process noise.
 *
 * BENCH_I_PARTS=prompts,short,streamed,loop,idle,replay runs some parts only (all by default);
 * BENCH_I_REPS=n sets the rounds of every part; BENCH_I_N=n the sessions of prompts.
 */
import { loadavg } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { HostTelemetry } from "../dist/main/telemetry/host-telemetry.js";
import { makeHost, mapLimit, median, mockModel, pick, report, runChild, sleep, startMeter } from "./lib.mjs";
import { RETRY_DELAY_MS, startMock, TOKENS } from "./prompt-workload.mjs";
import { telemetryFor } from "./telemetry-modes.mjs";

const REPS = Number(process.env.BENCH_I_REPS ?? pick(5, 1));
const SESSIONS = pick(20, 10);
const PROMPTS = pick(30, 10);
const STREAM_SESSIONS = pick(1000, 200);
const WARM_S = pick(3, 2);
const WINDOW_S = pick(6, 3);
const STREAMED_SESSIONS = pick(100, 20);
const STREAMED_PROMPTS = pick(2, 1);
const STREAMED_WORDS = 200;
const IDLE_S = pick(5, 2);
const REPLAY_REQUESTS = pick(20_000, 5_000);
const REPLAY_O_PROMPTS = pick(5_000, 1_000);
const PROMPT_SESSIONS = Number(process.env.BENCH_I_N ?? pick(1000, 200));
const PROMPT_REPS = Number(process.env.BENCH_I_REPS ?? pick(5, 2));
const MODES = ["off", "api", "sdk"];
const PARTS = (process.env.BENCH_I_PARTS ?? "prompts,short,streamed,loop,idle,replay")
  .split(",")
  .map((part) => part.trim());

/** An exporter that accepts and drops everything (metrics and spans share the shape). */
const sink = {
  export: (_items, done) => done({ code: 0 }),
  forceFlush: async () => {},
  shutdown: async () => {},
};

/** Main-thread CPU per model request (ns) of `sessions` sessions on `model` sending `prompts` prompts each. */
async function cpuPerRequest(mode, { model, sessions: count, prompts, words }) {
  const telemetry = await telemetryFor(mode);
  const { host, close } = await makeHost(telemetry.options);
  try {
    const sessions = await mapLimit(
      Array.from({ length: count }, (_, i) => i),
      32,
      () => host.createSession({ model }),
    );
    // Warm-up: workers started, code paths compiled.
    await Promise.all(sessions.map((session) => session.prompt("[words=40] warm-up")));
    const meter = startMeter();
    await Promise.all(
      sessions.map(async (session) => {
        for (let i = 0; i < prompts; i++) await session.prompt(`[words=${words}] prompt ${i}`);
      }),
    );
    const m = meter();
    return { ns: m.cpuNs / (count * prompts), wallMsPerRequest: m.wallMs / (count * prompts) };
  } finally {
    await close();
    await telemetry.shutdown();
  }
}

async function loopDelayWhileStreaming(mode) {
  const telemetry = await telemetryFor(mode);
  const { host, close } = await makeHost(telemetry.options);
  try {
    const sessions = await mapLimit(
      Array.from({ length: STREAM_SESSIONS }, (_, i) => i),
      32,
      () => host.createSession({ model: "demo/demo-stream" }),
    );
    const running = sessions.map((session, i) => session.prompt(`[words=2000] stream ${i}`).catch(() => {}));
    await sleep(WARM_S * 1000);
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    await sleep(WINDOW_S * 1000);
    h.disable();
    await Promise.all(sessions.map((session) => session.abort()));
    await Promise.all(running);
    return h.percentile(99) / 1e6;
  } finally {
    await close();
    await telemetry.shutdown();
  }
}

/** Main-thread CPU per second (ms) of an idle host with one session. */
async function idleCpu(mode) {
  const telemetry = await telemetryFor(mode);
  const { host, close } = await makeHost(telemetry.options);
  try {
    const session = await host.createSession({ model: "demo/demo-fast" });
    await session.prompt("[words=40] warm-up");
    const meter = startMeter();
    await sleep(IDLE_S * 1000);
    const m = meter();
    return m.cpuNs / 1e6 / (m.wallMs / 1000);
  } finally {
    await close();
    await telemetry.shutdown();
  }
}

/** One prompt's events with one 40-word reply, as a session's listener receives them. */
function promptEvents(i) {
  const now = Date.now();
  const user = { role: "user", content: [{ type: "text", text: `prompt ${i}` }], timestamp: now };
  const cost = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
  const reply = {
    role: "assistant",
    content: [{ type: "text", text: "lifeline runs each agent loop in a worker thread" }],
    api: "lifeline-demo-demo-fast",
    provider: "demo",
    model: "demo-fast",
    usage: { input: 12, output: 52, cacheRead: 0, cacheWrite: 0, totalTokens: 64, cost },
    stopReason: "stop",
    timestamp: now,
  };
  const update = {
    type: "message_update",
    message: reply,
    assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "x" },
  };
  return [
    { type: "agent_start" },
    { type: "message_start", message: user },
    { type: "message_end", message: user },
    { type: "message_start", message: reply },
    update,
    update,
    update,
    { type: "message_end", message: reply },
    { type: "agent_end", messages: [], willRetry: false },
    { type: "agent_settled", stopReason: "stop", retries: 0 },
  ];
}

/**
 * The events one prompt of section (o)'s workload (a 503, then TOKENS tokens over HTTP/SSE)
 * delivers to a session's listeners, as a host with `telemetry: false` receives them.
 */
async function capturedPromptEvents() {
  const mock = await startMock();
  const { host, close } = await makeHost({ telemetry: false, settings: { retry: { baseDelayMs: RETRY_DELAY_MS } } });
  try {
    const session = await host.createSession({ model: mockModel(mock.port), apiKey: "dummy" });
    const events = [];
    session.subscribe((event) => events.push(event));
    await session.prompt("replay: answer me");
    return events;
  } finally {
    await close();
    await mock.stop();
  }
}

/**
 * Process CPU (ns) per prompt of replaying `prompts` (event lists, taken in turn) through 20
 * sessions' telemetry with the SDK, `count` prompts after a warm-up, a collection and a span flush
 * every 500 prompts.
 */
async function replayCpu(prompts, count) {
  const reader = new PeriodicExportingMetricReader({ exporter: sink, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(sink)] });
  const sources = {
    sessionCount: () => 20,
    coordination: () => ({ budgets: [], permits: [] }),
    workerThreads: () => [],
    watchWorkerLoops: () => {},
  };
  const host = new HostTelemetry({ meterProvider, tracerProvider }, sources);
  try {
    const sessions = await Promise.all(Array.from({ length: 20 }, (_, i) => host.openSession(`s${i}`)));
    const replay = async (count) => {
      for (let i = 0; i < count; i++) {
        const telemetry = sessions[i % sessions.length];
        telemetry.begin(telemetry.capture());
        for (const event of prompts[i % prompts.length]) telemetry.handle(event);
        if (i % 500 === 499) {
          await reader.forceFlush();
          await tracerProvider.forceFlush();
        }
      }
    };
    await replay(Math.min(5000, count));
    const start = process.cpuUsage();
    await replay(count);
    const used = process.cpuUsage(start);
    return ((used.user + used.system) * 1000) / count;
  } finally {
    host.close();
    await meterProvider.shutdown();
    await tracerProvider.shutdown();
  }
}

/**
 * The prompts part: PROMPT_REPS rounds of the three modes, each run a fresh child process; the
 * order rotates each round, so that no mode always runs first or last.
 */
async function promptRounds() {
  const runs = [];
  for (let round = 0; round < PROMPT_REPS; round++) {
    const order = MODES.map((_, i) => MODES[(i + round) % MODES.length]);
    for (const mode of order) {
      process.stderr.write(
        `  (i) prompts round ${round + 1}/${PROMPT_REPS}: ${mode}, ${PROMPT_SESSIONS} sessions … (loadavg ${loadavg()[0].toFixed(2)})\n`,
      );
      const r = await runChild("./telemetry-prompts.mjs", [mode, String(PROMPT_SESSIONS)]);
      runs.push({
        round,
        mode,
        failed: r.failed,
        processCpuUsPerPrompt: r.processCpuUsPerPrompt,
        mainCpuUsPerPrompt: r.mainCpuUsPerPrompt,
        workerCpuUsPerPrompt: r.workerCpuUsPerPrompt,
        wallMs: r.wallMs,
        spansPerPrompt: r.spansPerPrompt,
        metricExports: r.metricExports,
        loadavg: r.loadavg[0],
      });
    }
  }
  const of = (mode, key) => runs.filter((r) => r.mode === mode).map((r) => r[key]);
  const medians = {};
  for (const mode of MODES) {
    medians[mode] = {
      processCpuUsPerPrompt: median(of(mode, "processCpuUsPerPrompt")),
      mainCpuUsPerPrompt: median(of(mode, "mainCpuUsPerPrompt")),
      workerCpuUsPerPrompt: median(of(mode, "workerCpuUsPerPrompt")),
      wallMs: median(of(mode, "wallMs")),
    };
  }
  const base = medians.off.processCpuUsPerPrompt;
  // Each round's ratio against its own off run too: the runs of a round are minutes apart at most,
  // so the machine's load drifts less between them than across the whole part.
  const roundRatios = (mode) =>
    Array.from({ length: PROMPT_REPS }, (_, round) => {
      const cpu = (m) => runs.find((r) => r.round === round && r.mode === m).processCpuUsPerPrompt;
      return cpu(mode) / cpu("off");
    });
  return {
    config: { sessions: PROMPT_SESSIONS, reps: PROMPT_REPS, tokens: TOKENS },
    runs,
    medians,
    ratio: { api: medians.api.processCpuUsPerPrompt / base, sdk: medians.sdk.processCpuUsPerPrompt / base },
    roundRatios: { api: roundRatios("api"), sdk: roundRatios("sdk") },
  };
}

const prompts = PARTS.includes("prompts") ? await promptRounds() : undefined;

const replayRuns = [];
/** Replays of one prompt of (o)'s workload (a 503, then TOKENS tokens), and how many chunk gaps its reply had. */
const replayO = { runs: [], noGapsRuns: [], chunkGaps: 0, events: 0 };
if (PARTS.includes("replay")) {
  const shortPrompts = Array.from({ length: 500 }, (_, i) => promptEvents(i));
  for (let rep = 0; rep < REPS; rep++) replayRuns.push(await replayCpu(shortPrompts, REPLAY_REQUESTS));
  const captured = await capturedPromptEvents();
  replayO.events = captured.length;
  replayO.chunkGaps = captured.reduce(
    (n, e) => n + (e.type === "message_end" ? (e.timing?.chunkGapsMs.length ?? 0) : 0),
    0,
  );
  // The same events with the reply's chunk gaps left out: what the per-chunk records cost.
  const noGaps = captured.map((e) =>
    e.type === "message_end" && e.timing !== undefined ? { ...e, timing: { ...e.timing, chunkGapsMs: [] } } : e,
  );
  for (let rep = 0; rep < REPS; rep++) {
    replayO.runs.push(await replayCpu([captured], REPLAY_O_PROMPTS));
    replayO.noGapsRuns.push(await replayCpu([noGaps], REPLAY_O_PROMPTS));
  }
}

const idle = { off: [], sdk: [] };
if (PARTS.includes("idle")) {
  for (let rep = 0; rep < REPS; rep++) {
    for (const mode of ["off", "sdk"]) idle[mode].push(await idleCpu(mode));
  }
}
/** SDK minus off, ms of main-thread CPU per second, idle (NaN when not measured). */
const fixedMsPerS = idle.off.length > 0 ? median(idle.sdk) - median(idle.off) : Number.NaN;

const WORKLOADS = {
  short: { model: "demo/demo-fast", sessions: SESSIONS, prompts: PROMPTS, words: 40 },
  streamed: {
    model: "demo/demo-stream",
    sessions: STREAMED_SESSIONS,
    prompts: STREAMED_PROMPTS,
    words: STREAMED_WORDS,
  },
};
const cpu = {};
for (const [name, workload] of Object.entries(WORKLOADS)) {
  if (!PARTS.includes(name)) continue;
  const runs = { off: [], api: [], sdk: [] };
  const wall = [];
  for (let rep = 0; rep < REPS; rep++) {
    for (const mode of ["off", "api", "sdk"]) {
      const { ns, wallMsPerRequest } = await cpuPerRequest(mode, workload);
      runs[mode].push(ns);
      if (mode === "sdk") wall.push(wallMsPerRequest);
    }
  }
  cpu[name] = {
    usPerRequest: Object.fromEntries(Object.entries(runs).map(([mode, v]) => [mode, median(v) / 1e3])),
    // Added CPU of each round against the off run next to it (interleaved, so load drifts less between them).
    sdkAddedRuns: runs.sdk.map((ns, i) => (ns - runs.off[i]) / runs.off[i]),
    // The idle host's fixed cost spread over this workload's requests: ms/s × s per request, in µs.
    fixedUsPerRequest: fixedMsPerS * median(wall),
    runs,
  };
}
const loop = { off: [], sdk: [] };
if (PARTS.includes("loop")) {
  for (let rep = 0; rep < Math.min(REPS, 3); rep++) {
    for (const mode of ["off", "sdk"]) loop[mode].push(await loopDelayWhileStreaming(mode));
  }
}
report({
  config: {
    REPS,
    SESSIONS,
    PROMPTS,
    STREAMED_SESSIONS,
    STREAMED_PROMPTS,
    STREAMED_WORDS,
    STREAM_SESSIONS,
    WARM_S,
    WINDOW_S,
    IDLE_S,
  },
  prompts,
  idleMsPerS: idle,
  replayNsPerRequest: replayRuns,
  replayO,
  cpu,
  loopP99Ms: Object.fromEntries(Object.entries(loop).map(([mode, v]) => [mode, median(v)])),
  loopRuns: loop,
});
