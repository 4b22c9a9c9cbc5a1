/**
 * The public shape of the host option `telemetry` (B9, docs/observability.md), on its own so that
 * lifeline's public declarations never name a type of `@opentelemetry/api`: it is an optional
 * peer, and an application that does not install it must still type-check against lifeline.
 * The providers are described structurally; any OpenTelemetry SDK's providers fit.
 */

/** A meter provider: structurally `@opentelemetry/api`'s `MeterProvider`, so no type of the optional peer is needed. */
export interface TelemetryMeterProvider {
  getMeter(name: string, version?: string, options?: { schemaUrl?: string }): object;
}

/** A tracer provider: structurally `@opentelemetry/api`'s `TracerProvider`. */
export interface TelemetryTracerProvider {
  getTracer(name: string, version?: string, options?: { schemaUrl?: string }): object;
}

/**
 * The host option `telemetry` (B9): what lifeline records into. Without providers in it a host
 * records into the providers the application registered globally (`metrics.setGlobalMeterProvider`,
 * `trace.setGlobalTracerProvider`, or an SDK's `start()`), and into nothing when none is. With
 * one or both, it records into those only: a `tracerProvider` alone records traces only, even when
 * a global meter provider is registered, and a `meterProvider` alone metrics only.
 */
export interface TelemetryOptions {
  /**
   * Record metrics here instead of the global meter provider.
   * @default the global one, if registered and no `tracerProvider` is given; else no metrics
   */
  meterProvider?: TelemetryMeterProvider;
  /**
   * Record spans here instead of the global tracer provider.
   * @default the global one, if registered and no `meterProvider` is given; else no spans
   */
  tracerProvider?: TelemetryTracerProvider;
  /**
   * Put prompt and completion text on spans (`gen_ai.input.messages`, `gen_ai.output.messages`).
   * Off by default: text may hold personal data, and spans leave the process. @default false
   */
  recordContent?: boolean;
}
