/**
 * One session's agent loop inside a worker: a pi-agent-core `Agent`, its runs, and the
 * transcript edits the main thread's retry controller asks for.
 */
import { Agent, type AgentMessage, type AgentTool, type StreamFn } from "@mariozechner/pi-agent-core";
import { type Api, type AssistantMessage, getEnvApiKey, type Model, streamSimple } from "@mariozechner/pi-ai";
import { isRemovableFailure } from "../shared/classify.js";
import { SUMMARY_SYSTEM_PROMPT, type SummaryRequest, summaryPrompt } from "../shared/compaction/summary-prompt.js";
import { errorText } from "../shared/error-text.js";
import { LifelineError, toWireError } from "../shared/errors.js";
import type { ModelChange, RunInput, SessionInit, SessionOpened } from "../shared/protocol.js";
import { attachRequestFailure, type RequestFailure } from "../shared/request-failure.js";
import type { WorkerModuleSetup, WorkerModuleSetupFn } from "../shared/worker-module.js";
import { convertToLlm } from "./convert-to-llm.js";
import { forgetDemoSession } from "./demo-provider.js";
import type { EventBatcher } from "./event-batcher.js";
import { loadExtensionTools, type ToolSessionView } from "./extensions/extension-tools.js";
import { redactSecrets, redactStrings } from "./redact.js";
import { assertRegisteredApi } from "./registered-api.js";
import { installRequestCapture, RequestCapture } from "./request-capture.js";
import type { RequestPermits } from "./request-permits.js";
import { resolveModel } from "./resolve-model.js";

/**
 * A session inside the worker, created by `serveWorker` on `openSession`. Its methods throw typed
 * errors that `serveWorker` returns as data; its run's end is reported through the batcher.
 */
export class WorkerSession {
  readonly id: string;
  readonly #agent: Agent;
  readonly #batcher: EventBatcher;
  #activeRunId: number | undefined;
  /** Transcript length when the active run started, and message_end events forwarded since. */
  #runStart = 0;
  #forwarded = 0;
  #closed = false;
  readonly #credentials: Credentials;
  readonly #streamFn: StreamFn;
  /** Aborts the summary request of an active `summarize` run. */
  #summaryAbort: AbortController | undefined;

  private constructor(
    id: string,
    agent: Agent,
    batcher: EventBatcher,
    capture: RequestCapture,
    credentials: Credentials,
    streamFn: StreamFn,
  ) {
    this.id = id;
    this.#agent = agent;
    this.#streamFn = streamFn;
    this.#batcher = batcher;
    this.#credentials = credentials;
    const secrets = credentials.secrets;
    agent.subscribe((event) => {
      if (this.#closed) return;
      if (event.type === "message_end") this.#forwarded++;
      // A reply that fails before streaming arrives as message_start carrying a copy of the final
      // message, then message_end with the message itself; both must be treated.
      if (event.type === "message_start" || event.type === "message_end") {
        const message = event.message;
        if (message.role === "assistant" && message.stopReason === "error") {
          finishFailedMessage(message, capture.failure(), secrets);
        }
      }
      batcher.pushEvent(id, event);
    });
  }

  /**
   * Resolves the model, loads the worker module and builds the agent.
   * @throws LifelineError ERR_UNKNOWN_MODEL, ERR_WORKER_MODULE, or ERR_INVALID_OPTIONS for a model
   *   whose api no provider serves (checked after the module's setup, which may register it).
   */
  static async open(
    init: SessionInit,
    batcher: EventBatcher,
    permits?: RequestPermits,
  ): Promise<{ session: WorkerSession; opened: SessionOpened }> {
    const model = resolveModel(init.model);
    const moduleTools = init.workerModule === undefined ? [] : await loadTools(init);
    // The agent exists only below; a tool's ctx reads it when the tool runs.
    let view: ToolSessionView | undefined;
    const extensionTools =
      init.extensions === undefined || init.extensions.files.length === 0
        ? []
        : await loadExtensionTools(init.extensions, init.sessionId, () => view as ToolSessionView);
    // An extension's tool replaces a worker module's tool of the same name (as pi's replace built-ins).
    const names = new Set(extensionTools.map((tool) => tool.name));
    const tools = [...moduleTools.filter((tool) => !names.has(tool.name)), ...extensionTools];
    assertRegisteredApi(model);
    const provider = init.provider;
    installRequestCapture();
    const capture = new RequestCapture(provider.idleTimeoutMs ?? 0);
    const credentials = new Credentials();
    credentials.set(model, init.apiKey, init.authHeader === true);
    // SPEC B1: the SDK's own retries are off unless settings say otherwise.
    const stream: StreamFn = (m, context, options) =>
      capture.run(() =>
        streamSimple(m, context, {
          ...options,
          ...(credentials.authHeader && credentials.apiKey !== undefined
            ? { headers: { ...options?.headers, Authorization: `Bearer ${credentials.apiKey}` } }
            : {}),
          maxRetries: provider.maxRetries,
          ...(provider.timeoutMs === undefined ? {} : { timeoutMs: provider.timeoutMs }),
          ...(provider.maxRetryDelayMs === undefined ? {} : { maxRetryDelayMs: provider.maxRetryDelayMs }),
        }),
      );
    // B8: every model request of the session, a compaction's summary included, takes a permit.
    const streamFn =
      init.requestPermits === true && permits !== undefined ? withPermit(stream, init.sessionId, permits) : stream;
    const agent = new Agent({
      initialState: { systemPrompt: init.systemPrompt, model, tools, messages: init.messages },
      convertToLlm,
      sessionId: init.sessionId,
      getApiKey: () => credentials.apiKey,
      streamFn,
    });
    view = {
      model: () => agent.state.model,
      isStreaming: () => agent.state.isStreaming,
      abort: () => agent.abort(),
      hasPendingMessages: () => agent.hasQueuedMessages(),
    };
    const session = new WorkerSession(init.sessionId, agent, batcher, capture, credentials, streamFn);
    return { session, opened: { model } };
  }

  /**
   * Switches the model for the next request (a retried one included); the active request keeps
   * its model. @throws LifelineError ERR_UNKNOWN_MODEL, ERR_INVALID_OPTIONS (no provider for its
   * api) or ERR_MISSING_API_KEY; the model is unchanged then.
   */
  setModel(change: ModelChange): Model<Api> {
    const model = resolveModel(change.model);
    assertRegisteredApi(model);
    this.#credentials.set(model, change.apiKey, change.authHeader === true);
    this.#agent.state.model = model;
    return model;
  }

  /**
   * Queues a user message into the agent loop: `steer` before its next model call, `followUp`
   * when it would otherwise stop (pi-agent-core's queues). A retried run (`continue`) delivers
   * them too. Messages still queued when a run ends are delivered by the next run.
   */
  queueMessage(kind: "steer" | "followUp", message: AgentMessage): void {
    if (this.#closed) throw new LifelineError("ERR_SESSION_DISPOSED", `Session ${this.id} is closed.`);
    if (kind === "steer") this.#agent.steer(message);
    else this.#agent.followUp(message);
  }

  /** Starts a run without waiting for it; its end is reported as a `run_end` item. */
  startRun(runId: number, input: RunInput): void {
    if (this.#closed) throw new LifelineError("ERR_SESSION_DISPOSED", `Session ${this.id} is closed.`);
    if (this.#activeRunId !== undefined || this.#agent.state.isStreaming) {
      throw new LifelineError(
        "ERR_SESSION_BUSY",
        `Session ${this.id} is already running; wait for agent_settled before starting another run.`,
      );
    }
    this.#activeRunId = runId;
    this.#runStart = this.#agent.state.messages.length;
    this.#forwarded = 0;
    if (input.kind === "summarize") {
      this.#summarize(input.request).then(
        (summary) => this.#endRun(runId, undefined, { summary }),
        (error: unknown) => this.#endRun(runId, error, { summary: undefined }),
      );
      return;
    }
    const run = input.kind === "prompt" ? this.#agent.prompt(input.message) : this.#agent.continue();
    run.then(
      () => this.#endRun(runId),
      (error: unknown) => this.#endRun(runId, error),
    );
  }

  /**
   * A compaction's model call: the session's own model, key and provider settings, streamed,
   * abortable by {@link abort}. Resolves with the summary text, or undefined when aborted.
   * @throws Error with the provider's error text (secrets redacted) when the request fails.
   */
  async #summarize(request: SummaryRequest): Promise<string | undefined> {
    const controller = new AbortController();
    this.#summaryAbort = controller;
    try {
      const model = this.#agent.state.model;
      const maxTokens =
        request.maxTokens !== undefined && request.maxTokens > 0
          ? Math.min(request.maxTokens, model.maxTokens > 0 ? model.maxTokens : request.maxTokens)
          : undefined;
      const apiKey = this.#credentials.apiKey;
      const stream = await this.#streamFn(
        model,
        {
          systemPrompt: SUMMARY_SYSTEM_PROMPT,
          messages: [
            { role: "user", content: [{ type: "text", text: summaryPrompt(request) }], timestamp: Date.now() },
          ],
        },
        {
          signal: controller.signal,
          sessionId: this.id,
          ...(apiKey === undefined ? {} : { apiKey }),
          ...(maxTokens === undefined ? {} : { maxTokens }),
        },
      );
      const reply = await stream.result();
      if (reply.stopReason === "aborted" || controller.signal.aborted) return undefined;
      if (reply.stopReason === "error") {
        throw new LifelineError(
          "ERR_RUN_FAILED",
          `The summary request failed: ${reply.errorMessage ?? "no reason given"}`,
        );
      }
      const text = reply.content
        .map((block) => (block.type === "text" ? block.text : ""))
        .join("")
        .trim();
      if (text === "") throw new LifelineError("ERR_RUN_FAILED", "The summary request returned no text.");
      return text;
    } finally {
      if (this.#summaryAbort === controller) this.#summaryAbort = undefined;
    }
  }

  /**
   * Aborts the active run's model request or tool, and drops queued steering and follow-up
   * messages (an abort stops what the user asked for, queued requests included, as in pi).
   * Returns whether a run was active.
   */
  abort(): boolean {
    const active = this.#activeRunId !== undefined;
    this.#agent.clearAllQueues();
    this.#agent.abort();
    this.#summaryAbort?.abort();
    return active;
  }

  /** R4: removes a trailing failed assistant message. Refused while a run is active. */
  popFailedMessage(): boolean {
    if (this.#activeRunId !== undefined) return false;
    const messages = this.#agent.state.messages;
    if (!isRemovableFailure(messages[messages.length - 1])) return false;
    this.#agent.state.messages = messages.slice(0, -1);
    return true;
  }

  /** Installs a compacted transcript. Refused while a run is active (it would lose the run's messages). */
  replaceMessages(messages: AgentMessage[]): void {
    if (this.#activeRunId !== undefined || this.#agent.state.isStreaming) {
      throw new LifelineError(
        "ERR_SESSION_BUSY",
        `Session ${this.id} is running; its transcript cannot be replaced now.`,
      );
    }
    this.#agent.state.messages = messages;
  }

  /** B3: puts a message back at the end of the transcript. */
  appendMessage(message: AgentMessage): void {
    this.#agent.state.messages = [...this.#agent.state.messages, message];
  }

  close(): void {
    this.#closed = true;
    this.#agent.abort();
    this.#summaryAbort?.abort();
    forgetDemoSession(this.id);
  }

  /** `summarized`: the outcome of a `summarize` run (no summary and no error: it was aborted). */
  #endRun(runId: number, error?: unknown, summarized?: { summary: string | undefined }): void {
    if (this.#activeRunId !== runId) return;
    this.#activeRunId = undefined;
    if (this.#closed) return;
    const tail = summarized === undefined ? this.#agent.state.messages.slice(this.#runStart + this.#forwarded) : [];
    const item: Parameters<EventBatcher["pushRunEnd"]>[0] = { type: "run_end", sessionId: this.id, runId, tail };
    if (summarized !== undefined && error === undefined) {
      if (summarized.summary === undefined) item.aborted = true;
      else item.summary = redactSecrets(summarized.summary, this.#credentials.secrets);
    }
    if (error !== undefined) {
      const wire = toWireError(error, "ERR_RUN_FAILED");
      wire.message = redactSecrets(wire.message, this.#credentials.secrets);
      if (wire.stack !== undefined) wire.stack = redactSecrets(wire.stack, this.#credentials.secrets);
      item.error = wire;
    }
    this.#batcher.pushRunEnd(item);
  }
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

/**
 * The key a session's requests use. Every key it has used stays in `secrets`, so a key replaced
 * by `setModel` is still redacted from late error texts.
 */
class Credentials {
  apiKey: string | undefined;
  authHeader = false;
  readonly secrets: string[] = [];

  /** @throws LifelineError ERR_MISSING_API_KEY when `model`'s API needs a key and none is found. */
  set(model: Model<Api>, apiKey: string | undefined, authHeader: boolean): void {
    const key = apiKey ?? getEnvApiKey(model.provider);
    if (key === undefined && needsKey(model)) {
      throw new LifelineError(
        "ERR_MISSING_API_KEY",
        `No API key for provider "${model.provider}": set its API key environment variable, pass apiKey to createSession (CLI: --api-key), or set "apiKey" for it in models.json.`,
      );
    }
    this.apiKey = key;
    this.authHeader = authHeader;
    if (key !== undefined && !this.secrets.includes(key)) this.secrets.push(key);
  }
}

/**
 * B2/X6: a failed reply carries what its request exposed (message_end's object is the
 * transcript's, so the run tail and later events carry it too); an unreachable server is named;
 * and a key the server echoed in its error text, type, code or retry headers never leaves the worker.
 */
function finishFailedMessage(
  message: AssistantMessage,
  failure: RequestFailure | undefined,
  secrets: readonly string[],
): void {
  // Every string of the record may be the server's (type, code, header values, socket message).
  if (failure !== undefined) attachRequestFailure(message, redactStrings(failure, secrets), Date.now());
  if (message.errorMessage === undefined) return;
  const hinted = message.errorMessage.endsWith(HINT_END)
    ? message.errorMessage
    : message.errorMessage + unreachableHint(failure, message.provider);
  message.errorMessage = redactSecrets(hinted, secrets);
}

/** Socket errors that mean the server was never reached (as opposed to reached, then lost). */
const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);
const HINT_END = "; check its baseUrl and that the server is running)";

/**
 * What to do about a server that could not be reached: pi-ai reports only "Connection error.",
 * which names neither the address nor the provider.
 */
function unreachableHint(failure: RequestFailure | undefined, provider: string): string {
  const network = failure?.network;
  if (network?.phase !== "request" || network.code === undefined || !UNREACHABLE_CODES.has(network.code)) return "";
  const where = network.origin === undefined ? "" : ` ${network.origin}`;
  return ` (could not reach${where} for provider "${provider}": ${network.code}${HINT_END}`;
}

/**
 * pi-ai's HTTP APIs that take an API key. Bedrock and Vertex use ambient credentials, and APIs
 * registered by worker modules (fakes, custom transports) decide for themselves.
 */
const KEYED_APIS = new Set([
  "openai-completions",
  "openai-responses",
  "azure-openai-responses",
  "openai-codex-responses",
  "anthropic-messages",
  "google-generative-ai",
  "mistral-conversations",
]);

function needsKey(model: { api: string }): boolean {
  return KEYED_APIS.has(model.api);
}

async function loadTools(init: SessionInit): Promise<AgentTool[]> {
  const url = init.workerModule ?? "";
  let setup: WorkerModuleSetupFn | undefined;
  try {
    const mod = (await import(url)) as { setup?: unknown; default?: unknown };
    const candidate = mod.setup ?? mod.default;
    if (typeof candidate === "function") setup = candidate as WorkerModuleSetupFn;
  } catch (error) {
    throw moduleError(url, `failed to load: ${errorText(error)}`, error);
  }
  if (setup === undefined) {
    throw moduleError(url, "exports no setup function; export `setup(context)` or a default function");
  }
  let result: WorkerModuleSetup | AgentTool[] | undefined;
  try {
    result = await setup({ sessionId: init.sessionId, options: init.workerModuleOptions });
  } catch (error) {
    throw moduleError(url, `setup threw: ${errorText(error)}`, error);
  }
  if (result === undefined) return [];
  return Array.isArray(result) ? result : (result.tools ?? []);
}

function moduleError(url: string, problem: string, cause?: unknown): LifelineError {
  return new LifelineError(
    "ERR_WORKER_MODULE",
    `Worker module ${url} ${problem}. Fix the module and create the session again.`,
    {
      cause,
    },
  );
}
