/**
 * How a session's model requests are sent: pi-ai's `streamSimple` inside the session's request
 * capture, with the session's current key and the provider settings of SPEC B1, behind a permit
 * of the main thread when B8's request permits are on. Every model request of the session takes
 * this path, a compaction's summary included.
 */
import type { StreamFn } from "@mariozechner/pi-agent-core";
import { streamSimple } from "@mariozechner/pi-ai";
import type { ProviderSettings } from "../../shared/protocol.js";
import type { RequestCapture } from "../request-capture/request-capture.js";
import type { RequestPermits } from "../request-permits.js";
import type { Credentials } from "./credentials.js";

/** What {@link modelStream} sends a session's requests with. */
export interface ModelStreamOptions {
  provider: ProviderSettings;
  capture: RequestCapture;
  /** Read at each request, so a model switch applies to the next one. */
  credentials: Credentials;
  /** B8: present when each request must wait for a permit. */
  permits?: { sessionId: string; permits: RequestPermits } | undefined;
}

/** The session's stream function, as pi-agent-core's `Agent` takes it. */
export function modelStream(options: ModelStreamOptions): StreamFn {
  const { provider, capture, credentials } = options;
  // SPEC B1: the SDK's own retries are off unless settings say otherwise.
  const stream: StreamFn = (m, context, streamOptions) =>
    capture.run(() =>
      streamSimple(m, context, {
        ...streamOptions,
        ...(credentials.authHeader && credentials.apiKey !== undefined
          ? { headers: { ...streamOptions?.headers, Authorization: `Bearer ${credentials.apiKey}` } }
          : {}),
        maxRetries: provider.maxRetries,
        ...(provider.timeoutMs === undefined ? {} : { timeoutMs: provider.timeoutMs }),
        ...(provider.maxRetryDelayMs === undefined ? {} : { maxRetryDelayMs: provider.maxRetryDelayMs }),
      }),
    );
  return options.permits === undefined
    ? stream
    : withPermit(stream, options.permits.sessionId, options.permits.permits);
}

/**
 * B8: `stream` behind a permit of the main thread: asked for before the request is sent (an abort
 * while waiting ends the wait), given back when the response stream ends, whatever the end.
 */
function withPermit(stream: StreamFn, sessionId: string, permits: RequestPermits): StreamFn {
  return async (model, context, options) => {
    const requestId = await permits.acquire(sessionId, options?.signal);
    try {
      const events = await stream(model, context, options);
      const release = () => permits.release(requestId);
      events.result().then(release, release);
      return events;
    } catch (error) {
      permits.release(requestId);
      throw error;
    }
  };
}
