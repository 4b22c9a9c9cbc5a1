/**
 * A scripted model registered with pi-ai: `script` answers each request, and the answer streams
 * like a provider's (see scripted-stream.ts). Used by the demo models, and by test fixtures
 * (in-process, and inside workers via dist/). It keeps no per-session state.
 */
import {
  type Api,
  type AssistantMessage,
  type Context,
  type FauxModelDefinition,
  type Model,
  registerApiProvider,
  type SimpleStreamOptions,
  unregisterApiProviders,
} from "@mariozechner/pi-ai";
import { type StreamPace, streamScripted } from "./scripted-stream.js";

/** Options of {@link registerScriptedFaux}. */
export interface ScriptedFauxOptions {
  /** The api name the returned model carries (and the registry dispatches on). */
  api: string;
  provider: string;
  /** The model's fields; the same shape as pi-ai's faux provider takes. */
  model: FauxModelDefinition;
  /** Streaming pace; unset streams as fast as the agent consumes, yielding to the event loop. */
  tokensPerSecond?: number;
  tokenSize?: StreamPace["tokenSize"];
  /**
   * Answers one request; called synchronously as the request starts. A returned rejection becomes
   * an error message, as a provider reports one; a synchronous throw is thrown by the stream
   * function itself (a failure not returned as a message).
   */
  script: (context: Context, options: SimpleStreamOptions | undefined) => AssistantMessage | Promise<AssistantMessage>;
}

/** A registered scripted model. */
export interface ScriptedFaux {
  model: Model<Api>;
  unregister(): void;
}

/** Registers the model in this thread's pi-ai registry (replacing any provider of that api). */
export function registerScriptedFaux(options: ScriptedFauxOptions): ScriptedFaux {
  const definition = options.model;
  const model: Model<Api> = {
    id: definition.id,
    name: definition.name ?? definition.id,
    api: options.api,
    provider: options.provider,
    baseUrl: "http://localhost:0",
    reasoning: definition.reasoning ?? false,
    input: definition.input ?? ["text", "image"],
    cost: definition.cost ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: definition.contextWindow ?? 128_000,
    maxTokens: definition.maxTokens ?? 16_384,
  };
  const pace: StreamPace = { tokensPerSecond: options.tokensPerSecond, tokenSize: options.tokenSize };
  const stream = (requestModel: Model<Api>, context: Context, streamOptions?: SimpleStreamOptions) =>
    streamScripted(requestModel, context, streamOptions, options.script(context, streamOptions), pace);
  registerApiProvider({ api: options.api, stream, streamSimple: stream }, options.api);
  return { model, unregister: () => unregisterApiProviders(options.api) };
}
