/**
 * B9 in-process: when a host records at all, the W3C `traceparent` it continues in fleet mode, and
 * the `--metrics-port` flag's check. The real OpenTelemetry API and SDK, no mocks.
 */
import { context, metrics, ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { afterEach, describe, expect, it } from "vitest";
import { HostTelemetry } from "../../../src/main/telemetry/host-telemetry.js";
import { activeTraceparent, parseTraceparent } from "../../../src/main/telemetry/traceparent.js";
import { AsyncLocalContextManager, recordInMemory } from "../../fixtures/otel.js";

const sources = {
  sessionCount: () => 0,
  coordination: () => ({ budgets: [], permits: [] }),
  workerThreads: () => [],
  watchWorkerLoops: () => {},
};

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("whether a host records", () => {
  it("B9: with no provider registered and no telemetry option, a session gets no telemetry (no listener is added)", async () => {
    const telemetry = new HostTelemetry(undefined, sources);
    cleanups.push(() => telemetry.close());
    expect(await telemetry.openSession("s1")).toBeUndefined();
  });

  it("B9: a provider registered after the host was created is used from the next session on", async () => {
    const telemetry = new HostTelemetry(undefined, sources);
    cleanups.push(() => telemetry.close());
    expect(await telemetry.openSession("s1")).toBeUndefined();
    const recorded = recordInMemory();
    cleanups.push(() => recorded.shutdown());
    metrics.setGlobalMeterProvider(recorded.meterProvider);
    cleanups.push(() => metrics.disable());
    expect(await telemetry.openSession("s2")).toBeDefined();
  });

  it("B9: telemetry false ignores registered providers", async () => {
    const recorded = recordInMemory();
    cleanups.push(() => recorded.shutdown());
    trace.setGlobalTracerProvider(recorded.tracerProvider);
    cleanups.push(() => trace.disable());
    const telemetry = new HostTelemetry(false, sources);
    expect(await telemetry.openSession("s1")).toBeUndefined();
  });
});

describe("a telemetry option with one provider", () => {
  it("B9: tracerProvider alone records traces only: a registered global meter provider gets no metrics", async () => {
    const global = recordInMemory();
    cleanups.push(() => global.shutdown());
    metrics.setGlobalMeterProvider(global.meterProvider);
    cleanups.push(() => metrics.disable());
    const own = recordInMemory();
    cleanups.push(() => own.shutdown());
    const telemetry = new HostTelemetry({ tracerProvider: own.tracerProvider }, sources);
    cleanups.push(() => telemetry.close());
    const session = await telemetry.openSession("s1");
    telemetry.workerExited("crash");
    session?.begin(session.capture());
    session?.close();
    expect(own.spans().map((span) => span.name)).toEqual(["invoke_agent"]);
    expect(await global.metrics()).toEqual([]);
  });

  it("B9: meterProvider alone records metrics only: a registered global tracer provider gets no spans", async () => {
    const global = recordInMemory();
    cleanups.push(() => global.shutdown());
    trace.setGlobalTracerProvider(global.tracerProvider);
    cleanups.push(() => trace.disable());
    const own = recordInMemory();
    cleanups.push(() => own.shutdown());
    const telemetry = new HostTelemetry({ meterProvider: own.meterProvider }, sources);
    cleanups.push(() => telemetry.close());
    const session = await telemetry.openSession("s1");
    telemetry.workerExited("crash");
    // A prompt begins and its session closes: a recorded prompt span would end now.
    session?.begin(session.capture());
    session?.close();
    expect((await own.metrics()).map((metric) => metric.descriptor.name)).toContain("lifeline.worker.exits");
    expect(global.spans()).toEqual([]);
  });
});

describe("the fleet's traceparent", () => {
  it("B9: submit()'s traceparent is the active span's, and reads back as the same remote span context", async () => {
    expect(await activeTraceparent()).toBeUndefined();
    context.setGlobalContextManager(new AsyncLocalContextManager());
    cleanups.push(() => context.disable());
    const recorded = recordInMemory();
    cleanups.push(() => recorded.shutdown());
    const span = recorded.tracerProvider.getTracer("t").startSpan("client");
    const value = await context.with(trace.setSpan(ROOT_CONTEXT, span), () => activeTraceparent());
    span.end();
    const { traceId, spanId } = span.spanContext();
    expect(value).toBe(`00-${traceId}-${spanId}-01`);
    expect(parseTraceparent(value ?? "")).toEqual({ traceId, spanId, traceFlags: 1, isRemote: true });
  });

  it("B9: malformed and all-zero traceparents are refused", () => {
    expect(parseTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")).toBeUndefined();
    expect(parseTraceparent("00-00000000000000000000000000000000-b7ad6b7169203331-01")).toBeUndefined();
    expect(parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01")).toBeUndefined();
    expect(parseTraceparent("00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01")).toBeUndefined();
  });
});
