/**
 * Where lifeline gets OpenTelemetry from (docs/observability.md, B9). `@opentelemetry/api` is an
 * optional peer dependency: lifeline never imports it statically, so the package loads and runs
 * without it. The first host that may record loads it with a dynamic `import()`, once per process;
 * npm dedupes the peer to the application's copy, so lifeline reads the providers the
 * application registered with that copy (a newer copy than the application's would see no-op
 * providers: the API accepts a registered global only from a minor version not older than its own).
 */
import type * as OtelApi from "@opentelemetry/api";

/** The API module as lifeline uses it. */
export type Otel = typeof OtelApi;

/** The instrumentation scope lifeline's meter and tracer are named after. */
export const SCOPE = "lifeline";

let loading: Promise<Otel | undefined> | undefined;

/**
 * The API module, or undefined when it is not installed. Loaded once per process; never rejects.
 */
export function loadOtel(): Promise<Otel | undefined> {
  loading ??= import("@opentelemetry/api").then(
    (module) => module,
    () => undefined,
  );
  return loading;
}

/**
 * Whether any copy of the API 1.x has registered a global meter or tracer provider, read where the
 * API keeps its registry (a symbol-keyed global of each major version) so that a host can tell
 * there is nothing to record into without loading the API. A copy that registered something has
 * been loaded by the application already; then {@link loadOtel} and the checks below decide.
 */
export function hasRegisteredGlobals(): boolean {
  const registry = (globalThis as Record<symbol, { metrics?: unknown; trace?: unknown } | undefined>)[
    Symbol.for("opentelemetry.js.api.1")
  ];
  return registry?.metrics !== undefined || registry?.trace !== undefined;
}

/**
 * Whether the application registered a meter provider globally: without one the API hands out
 * its shared no-op meter, the same object `createNoopMeter()` returns.
 */
export function hasGlobalMeterProvider(otel: Otel): boolean {
  return otel.metrics.getMeterProvider().getMeter(SCOPE) !== otel.createNoopMeter();
}

/**
 * Whether the application registered a tracer provider globally. The API always returns its
 * proxy provider; the proxy has a delegate tracer only once a provider was registered. (Another
 * copy of the API registers its own proxy, so the method is looked up, not the class.)
 */
export function hasGlobalTracerProvider(otel: Otel): boolean {
  const provider = otel.trace.getTracerProvider() as { getDelegateTracer?: (name: string) => unknown };
  if (typeof provider.getDelegateTracer !== "function") return true;
  return provider.getDelegateTracer(SCOPE) !== undefined;
}
