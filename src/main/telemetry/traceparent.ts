/**
 * The W3C Trace Context `traceparent` value (version 00), written and read by lifeline itself so
 * that fleet mode carries a prompt's trace from the submitting client to the serving host whether
 * or not the application registered a propagator: `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`.
 */
import type { SpanContext } from "@opentelemetry/api";
import { loadOtel } from "./otel-api.js";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const INVALID_TRACE = /^0+$/;

/** The `traceparent` of `spanContext`. */
function formatTraceparent(spanContext: SpanContext): string {
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, "0");
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/** The remote span context a `traceparent` names; undefined when malformed or all-zero. */
export function parseTraceparent(value: string): SpanContext | undefined {
  const match = TRACEPARENT.exec(value.trim());
  if (match === null) return undefined;
  const [, traceId = "", spanId = "", flags = "00"] = match;
  if (INVALID_TRACE.test(traceId) || INVALID_TRACE.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true };
}

/**
 * The `traceparent` of the span active in the caller's context, when `@opentelemetry/api` is
 * installed and a valid span is active (fleet mode's `submit()`); undefined otherwise. Never rejects.
 */
export async function activeTraceparent(): Promise<string | undefined> {
  const otel = await loadOtel();
  const spanContext = otel?.trace.getSpanContext(otel.context.active());
  if (otel === undefined || spanContext === undefined || !otel.isSpanContextValid(spanContext)) return undefined;
  return formatTraceparent(spanContext);
}
