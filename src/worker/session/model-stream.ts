/**
 * How a session's model requests are sent: pi-ai's `streamSimple` inside the session's request
 * capture, with the session's current key and the provider settings of SPEC B1, same-role turns
 * merged only for an API that requires alternating roles (alternating-turns.ts), behind a permit
 * of the main thread when B8's request permits are on. Every model request of the session takes
 * this path, a compaction's summary included.
 */
import type { StreamFn } from "@mariozechner/pi-agent-core";
import { type Api, type SimpleStreamOptions, streamSimple } from "@mariozechner/pi-ai";
import type { ProviderSettings } from "../../shared/wire/protocol.js";
import type { RequestCapture } from "../request-capture/request-capture.js";
import type { RequestPermits } from "../request-permits.js";
import { alternatingTurns } from "./alternating-turns.js";
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
        ...withAlternatingTurns(m.api, streamOptions?.onPayload),
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
 * The `onPayload` of a request to `api`: the caller's, then, for an API that requires alternating
 * roles, the merge of same-role turns (alternating-turns.ts), so no other API's request changes.
 */
function withAlternatingTurns(
  api: Api,
  onPayload: SimpleStreamOptions["onPayload"],
): Pick<SimpleStreamOptions, "onPayload"> {
  const merge = alternatingTurns(api);
  if (merge === undefined) return onPayload === undefined ? {} : { onPayload };
  return {
    onPayload: async (payload, model) => merge((await onPayload?.(payload, model)) ?? payload),
  };
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
