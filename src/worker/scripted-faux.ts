/**
 * pi-ai's faux provider turned into an unbounded scripted model: `script` answers each request.
 * Used by the demo models, and by test fixtures (in-process, and inside workers via dist/).
 */
import {
  type Api,
  type AssistantMessage,
  type Context,
  type FauxModelDefinition,
  getApiProvider,
  type Model,
  type RegisterFauxProviderOptions,
  registerApiProvider,
  registerFauxProvider,
  type SimpleStreamOptions,
  unregisterApiProviders,
} from "@mariozechner/pi-ai";

/** Options of {@link registerScriptedFaux}. */
export interface ScriptedFauxOptions {
  /** The api name the returned model carries (and the registry dispatches on). */
  api: string;
  provider: string;
  model: FauxModelDefinition;
  /** Streaming pace; unset streams every chunk in one chain of microtasks. */
  tokensPerSecond?: number;
  tokenSize?: RegisterFauxProviderOptions["tokenSize"];
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

/** Registers the model in this thread's pi-ai registry. */
export function registerScriptedFaux(options: ScriptedFauxOptions): ScriptedFaux {
  const fauxApi = `${options.api}-faux`;
  const faux = registerFauxProvider({
    api: fauxApi,
    provider: options.provider,
    models: [options.model],
    ...(options.tokensPerSecond === undefined ? {} : { tokensPerSecond: options.tokensPerSecond }),
    ...(options.tokenSize === undefined ? {} : { tokenSize: options.tokenSize }),
  });
  const fauxStream = getApiProvider(fauxApi)?.streamSimple;
  if (fauxStream === undefined) throw new Error(`pi-ai did not register the faux provider ${fauxApi}`);
  // The faux provider answers from a queue; topping it up right before each request makes the
  // script unbounded and keeps concurrent sessions from starving each other. pi-ai checks that a
  // model's api matches the provider it is dispatched to, hence the re-tagging.
  const stream = (model: Model<Api>, context: Context, streamOptions?: SimpleStreamOptions) => {
    const answer = options.script(context, streamOptions);
    faux.appendResponses([() => answer]);
    return fauxStream({ ...model, api: fauxApi }, context, streamOptions);
  };
  registerApiProvider({ api: options.api, stream, streamSimple: stream }, options.api);
  return {
    model: { ...faux.getModel(), api: options.api },
    unregister: () => {
      faux.unregister();
      unregisterApiProviders(options.api);
    },
  };
}
