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
 * Part 1, CPU per model request: SESSIONS sessions on demo/demo-fast, each sending PROMPTS
 * sequential prompts of 40 words (one model request each); main-thread CPU (lib.mjs) divided by the
 * requests. Part 2, the host's event-loop delay p99 with STREAM_SESSIONS sessions streaming
 * demo/demo-stream (about 50 tokens/s each), off vs sdk, over a WINDOW_S window after WARM_S.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { makeHost, mapLimit, median, pick, report, sleep, startMeter } from "./lib.mjs";

const REPS = pick(5, 1);
const SESSIONS = pick(20, 10);
const PROMPTS = pick(30, 10);
const STREAM_SESSIONS = pick(1000, 200);
const WARM_S = pick(3, 2);
const WINDOW_S = pick(6, 3);

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

async function cpuPerRequest(mode) {
  const telemetry = telemetryFor(mode);
  const { host, close } = await makeHost(telemetry.options);
  try {
    const sessions = await Promise.all(
      Array.from({ length: SESSIONS }, () => host.createSession({ model: "demo/demo-fast" })),
    );
    // Warm-up: workers started, code paths compiled.
    await Promise.all(sessions.map((session) => session.prompt("[words=40] warm-up")));
    const meter = startMeter();
    await Promise.all(
      sessions.map(async (session) => {
        for (let i = 0; i < PROMPTS; i++) await session.prompt(`[words=40] prompt ${i}`);
      }),
    );
    const m = meter();
    return m.cpuNs / (SESSIONS * PROMPTS);
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

const cpu = { off: [], api: [], sdk: [] };
for (let rep = 0; rep < REPS; rep++) {
  for (const mode of ["off", "api", "sdk"]) cpu[mode].push(await cpuPerRequest(mode));
}
const loop = { off: [], sdk: [] };
for (let rep = 0; rep < Math.min(REPS, 3); rep++) {
  for (const mode of ["off", "sdk"]) loop[mode].push(await loopDelayWhileStreaming(mode));
}
report({
  config: { REPS, SESSIONS, PROMPTS, STREAM_SESSIONS, WARM_S, WINDOW_S },
  cpuUsPerRequest: Object.fromEntries(Object.entries(cpu).map(([mode, v]) => [mode, median(v) / 1e3])),
  cpuRuns: cpu,
  loopP99Ms: Object.fromEntries(Object.entries(loop).map(([mode, v]) => [mode, median(v)])),
  loopRuns: loop,
});
