/**
 * When a model request's moments happened, stamped in the worker where they happen (the HTTP call,
 * the response's arrival, each streamed delta as the provider's stream reader parses it) and carried
 * on the reply's `message_end`. The worker batches what crosses to the main thread (8 ms apart by
 * default), so times taken where the events arrive are quantized by the batching; these are not.
 *
 * Stamps are epoch milliseconds on the worker's high-resolution clock (`performance.timeOrigin +
 * performance.now()`), to the microsecond. Differences of stamps of one request come from one
 * monotonic clock and are exact whatever the batching. Comparing a stamp with a main-thread time
 * (`performance.timeOrigin + performance.now()` there) relies on the two threads' time origins,
 * which Node takes from the same wall clock as each thread starts: they agree to well under a
 * millisecond unless the system clock was stepped between the two starts.
 */

/** A model request's moments (see the file comment); `message_end.timing` of an assistant reply. */
export interface RequestTiming {
  /**
   * The request's start: the provider's first HTTP request of this model call, or the call of the
   * stream function when the provider does not use `fetch` (Bedrock, in-process providers).
   */
  requestStartMs: number;
  /** The response's status and headers arrived (the last HTTP response, when the SDK retried); absent without one. */
  firstByteMs?: number;
  /** The first streamed text, thinking or tool-call delta; absent when none came. */
  firstTokenMs?: number;
  /** The reply ended (its `message_end` in the worker). */
  endMs: number;
  /** Streamed deltas (chunks) received: text, thinking and tool-call deltas, each as the provider parsed it. */
  chunks: number;
  /**
   * The gaps between consecutive deltas, in ms (`chunks − 1` entries, in order): what the GenAI
   * conventions call the time per output chunk. Each delta counts, even those the worker later
   * merges into one `message_update` before it crosses.
   */
  chunkGapsMs: number[];
}

/**
 * When a tool execution started and ended, stamped in the worker on the same clock as
 * {@link RequestTiming} (X9) and carried on its `tool_execution_end`: `startMs` as the agent loop
 * announces the call (`tool_execution_start`, before the tool's arguments are checked and it
 * runs), `endMs` as it announces the end (after the tool settled). So `endMs − startMs` is never
 * shorter than the tool's own time, whatever the worker's batching and the main thread's load:
 * times taken where the events arrive put the batching's delay of the end against the main
 * thread's delay of the start, and read short under load.
 */
export interface ToolTiming {
  startMs: number;
  endMs: number;
}

/** Epoch ms on this thread's high-resolution clock, to the microsecond: the base of every {@link RequestTiming} stamp. */
export function epochNow(): number {
  return roundMicros(performance.timeOrigin + performance.now());
}

/** Rounds ms to the microsecond: the clocks' useful resolution, and short JSON. */
export function roundMicros(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
