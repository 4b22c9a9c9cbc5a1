/**
 * Section (i)'s three telemetry modes, as host options (B9, docs/observability.md):
 * - off: `telemetry: false` (nothing is checked, nothing subscribed);
 * - api: `@opentelemetry/api` installed but no provider registered (the default for most hosts):
 *   the host finds no provider and records nothing;
 * - sdk: the real SDK (sdk-metrics 2.x, sdk-trace-base 2.x) recording every metric and span: a
 *   MeterProvider with a PeriodicExportingMetricReader collecting each second (the SDK's default is
 *   every 60 s, so this pays about 60 times the collections a default setup pays), and a
 *   BasicTracerProvider with a BatchSpanProcessor (what a production setup uses; the simple
 *   processor exports each span as it ends and is meant for debugging). Both export to a sink that
 *   counts what it gets and drops it: the figure is lifeline's recording plus the SDK's own work
 *   up to its exporter, not the exporter's encoding and network, which depend on the backend.
 * The SDK is imported only in sdk mode, so the other modes load none of it.
 */

/** Host options, a shutdown, and what the sink received so far, for `mode`. */
export async function telemetryFor(mode, { exportIntervalMillis = 1000 } = {}) {
  const exported = { spans: 0, metricExports: 0 };
  if (mode === "off")
    return { options: { telemetry: false }, flush: async () => {}, shutdown: async () => {}, exported };
  if (mode === "api") return { options: {}, flush: async () => {}, shutdown: async () => {}, exported };
  if (mode !== "sdk") throw new Error(`unknown telemetry mode ${mode}: off, api or sdk`);
  const { MeterProvider, PeriodicExportingMetricReader } = await import("@opentelemetry/sdk-metrics");
  const { BasicTracerProvider, BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
  const done = (callback) => callback({ code: 0 });
  const metricSink = {
    export: (_metrics, callback) => {
      exported.metricExports++;
      done(callback);
    },
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const spanSink = {
    export: (spans, callback) => {
      exported.spans += spans.length;
      done(callback);
    },
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const reader = new PeriodicExportingMetricReader({ exporter: metricSink, exportIntervalMillis });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(spanSink)] });
  return {
    options: { telemetry: { meterProvider, tracerProvider } },
    /** Collects and exports what the providers hold now. */
    flush: async () => {
      await meterProvider.forceFlush();
      await tracerProvider.forceFlush();
    },
    shutdown: async () => {
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    },
    exported,
    meterProvider,
    tracerProvider,
    reader,
  };
}
