/**
 * Section (i): what OpenTelemetry recording (B9, docs/observability.md) costs the host's main thread.
 *
 * Three modes, each a fresh host, interleaved over REPS rounds (medians reported):
 * - off: `telemetry: false` (nothing is checked, nothing subscribed);
 * - api: `@opentelemetry/api` installed but no provider registered (the default for most hosts):
 *   the host finds no provider and records nothing;
 * - sdk: the real SDK (sdk-metrics 2.x, sdk-trace-base 2.x) recording every metric and span, with a
 *   periodic metric reader collecting each second and a batch span processor, both exporting to a
 *   sink that drops what it gets (so the figure is lifeline's recording plus the SDK's own work).
 *
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
 *
 * BENCH_I_PARTS=short,streamed,loop runs some parts only (all by default); BENCH_I_REPS=n sets the
 * rounds.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { makeHost, mapLimit, median, pick, report, sleep, startMeter } from "./lib.mjs";

const REPS = Number(process.env.BENCH_I_REPS ?? pick(5, 1));
const SESSIONS = pick(20, 10);
const PROMPTS = pick(30, 10);
const STREAM_SESSIONS = pick(1000, 200);
const WARM_S = pick(3, 2);
const WINDOW_S = pick(6, 3);
const STREAMED_SESSIONS = pick(100, 20);
const STREAMED_PROMPTS = pick(2, 1);
const STREAMED_WORDS = 200;
const PARTS = (process.env.BENCH_I_PARTS ?? "short,streamed,loop").split(",").map((part) => part.trim());

/** An exporter that accepts and drops everything (metrics and spans share the shape). */
const sink = {
  export: (_items, done) => done({ code: 0 }),
  forceFlush: async () => {},
  shutdown: async () => {},
};

/** Host options and a shutdown for `mode`. */
function telemetryFor(mode) {
  if (mode === "off") return { options: { telemetry: false }, shutdown: async () => {} };
  if (mode === "api") return { options: {}, shutdown: async () => {} };
  const meterProvider = new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: sink, exportIntervalMillis: 1000 })],
  });
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(sink)] });
  return {
    options: { telemetry: { meterProvider, tracerProvider } },
    shutdown: async () => {
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    },
  };
}

/** Main-thread CPU per model request (ns) of `sessions` sessions on `model` sending `prompts` prompts each. */
async function cpuPerRequest(mode, { model, sessions: count, prompts, words }) {
  const telemetry = telemetryFor(mode);
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
    return m.cpuNs / (count * prompts);
  } finally {
    await close();
    await telemetry.shutdown();
  }
}

async function loopDelayWhileStreaming(mode) {
  const telemetry = telemetryFor(mode);
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
  for (let rep = 0; rep < REPS; rep++) {
    for (const mode of ["off", "api", "sdk"]) runs[mode].push(await cpuPerRequest(mode, workload));
  }
  cpu[name] = {
    usPerRequest: Object.fromEntries(Object.entries(runs).map(([mode, v]) => [mode, median(v) / 1e3])),
    // Added CPU of each round against the off run next to it (interleaved, so load drifts less between them).
    sdkAddedRuns: runs.sdk.map((ns, i) => (ns - runs.off[i]) / runs.off[i]),
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
  },
  cpu,
  loopP99Ms: Object.fromEntries(Object.entries(loop).map(([mode, v]) => [mode, median(v)])),
  loopRuns: loop,
});
