/**
 * Opens a session's agent inside the worker: resolves the model, loads the tools, checks that a
 * provider serves the model's API, sets the key, and builds pi-agent-core's `Agent` over the
 * session's model stream (model-stream.ts), with its request capture installed.
 */
import { Agent, type StreamFn } from "@mariozechner/pi-agent-core";
import { type Api, clampThinkingLevel, type Model } from "@mariozechner/pi-ai";
import type { UiTransport } from "../../shared/extensions/extension-ui.js";
import type { SessionInit } from "../../shared/wire/protocol.js";
import { convertToLlm } from "../convert-to-llm.js";
import type { ToolSessionView } from "../extensions/extension-tools.js";
import { assertRegisteredApi } from "../registered-api.js";
import { installRequestCapture, RequestCapture } from "../request-capture/request-capture.js";
import type { RequestPermits } from "../request-permits.js";
import { resolveModel } from "../resolve-model.js";
import { Credentials } from "./credentials.js";
import { modelStream } from "./model-stream.js";
import { loadSessionTools } from "./session-tools.js";

/** A session's agent and what its requests go through. */
export interface SessionAgent {
  agent: Agent;
  /** The model the session opened on. */
  model: Model<Api>;
  /** Records what the session's latest model request exposed. */
  capture: RequestCapture;
  /** The key of the session's requests; a model switch sets it again. */
  credentials: Credentials;
  /** Every model request of the session goes through it, a compaction's summary included. */
  streamFn: StreamFn;
}

/**
 * Builds the agent of the session `init` describes.
 * @throws LifelineError ERR_UNKNOWN_MODEL, ERR_WORKER_MODULE, ERR_INVALID_OPTIONS for a model
 *   whose api no provider serves (checked after the module's setup, which may register it), or
 *   ERR_MISSING_API_KEY.
 */
export async function openSessionAgent(
  init: SessionInit,
  permits?: RequestPermits,
  ui?: UiTransport,
): Promise<SessionAgent> {
  const model = resolveModel(init.model);
  // A tool's ctx reads the agent when the tool runs; the agent exists only below.
  const view: ToolSessionView = {
    model: () => agent.state.model,
    isStreaming: () => agent.state.isStreaming,
    abort: () => agent.abort(),
    hasPendingMessages: () => agent.hasQueuedMessages(),
    thinkingLevel: () => agent.state.thinkingLevel,
    ui,
  };
  const tools = await loadSessionTools(init, () => view);
  assertRegisteredApi(model);
  installRequestCapture();
  const capture = new RequestCapture(init.provider.idleTimeoutMs ?? 0, init.provider.maxRetries > 0);
  const credentials = new Credentials();
  credentials.set(model, init.apiKey, init.authHeader === true);
  // B8: every model request of the session, a compaction's summary included, takes a permit.
  const streamFn = modelStream({
    provider: init.provider,
    capture,
    credentials,
    permits: init.requestPermits === true && permits !== undefined ? { sessionId: init.sessionId, permits } : undefined,
  });
  const agent = new Agent({
    // pi's clamp: a model without reasoning runs at "off", xhigh only where the model names it.
    initialState: {
      systemPrompt: init.systemPrompt,
      model,
      tools,
      messages: init.messages,
      thinkingLevel: clampThinkingLevel(model, init.thinkingLevel ?? "off"),
    },
    convertToLlm,
    sessionId: init.sessionId,
    getApiKey: () => credentials.apiKey,
    streamFn,
    // Fleet mode: a tool runs only once the reply that called it is stored (see the protocol).
    ...(init.storeToolCalls === true && permits !== undefined
      ? {
          beforeToolCall: async (_context: unknown, signal?: AbortSignal) => {
            await permits.stored(init.sessionId, signal);
            return undefined;
          },
        }
      : {}),
  });
  return { agent, model, capture, credentials, streamFn };
}
