/**
 * The API object an extension's factory receives: the subset of pi's `ExtensionAPI` that lifeline
 * supports, built the same way on both threads (see docs/extensions.md for the table).
 *
 * One extension module is loaded twice per session: on the main thread, where only its `on()`
 * handlers matter (they receive the session's events), and in the worker serving the session,
 * where only its `registerTool()` tools matter (the agent loop calls them there, SPEC X1). The
 * factory runs on both; what it registers for the other thread is accepted and ignored, so one
 * module works unchanged. Every member of pi's API that lifeline does not provide throws an
 * {@link ExtensionUnsupportedError} naming it, rather than being a silent no-op: an extension
 * that gates tools with `tool_call`, say, must not load and quietly gate nothing.
 */
import type { AgentToolResult, AgentToolUpdateCallback } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import { ExtensionLoadError, ExtensionUnsupportedError, LifelineError } from "../errors.js";
import type { SessionEvent } from "../events.js";
import { errorText } from "../failures/error-text.js";
import { isThinkingLevel, THINKING_LEVELS, type ThinkingLevel } from "../thinking.js";
import type { ExtensionUIContext } from "./extension-ui.js";

/** Which copy of the extension a factory call builds. A lifeline addition to pi's API. */
export type ExtensionThread = "main" | "worker";

/**
 * What handlers (main thread) and tools (worker) receive as `ctx`: the part of pi's
 * `ExtensionContext` that lifeline provides. No `sessionManager`, no `modelRegistry`.
 */
export interface ExtensionContext {
  /** The host's working directory. */
  cwd: string;
  /** Whether the host has a UI for `ui` (RPC mode, or a library host's `extensionUi`); check it before dialogs, as in pi. */
  hasUI: boolean;
  /** Dialogs and notices (extension-ui.ts); without a UI, dialogs resolve with pi's defaults at once. */
  ui: ExtensionUIContext;
  /** The session this call belongs to (a lifeline addition: one host serves many sessions). */
  sessionId: string;
  /** The session's current model. */
  model: Model<Api> | undefined;
  /** In a tool: the tool call's abort signal. In a handler: undefined (handlers only observe). */
  signal: AbortSignal | undefined;
  /** Whether the session has no prompt in progress (main) or no run streaming (worker). */
  isIdle(): boolean;
  /** Aborts the session's prompt: `session.abort()` on main; the agent's run in the worker. */
  abort(): void;
  /** Whether steering or follow-up messages wait to be delivered. */
  hasPendingMessages(): boolean;
}

/**
 * Events delivered to extensions only, with pi's names and shapes: the lifecycle pair, and
 * `thinking_level_select` where the session emits `thinking_level_changed` (pi gives extensions
 * that event instead, with the level before).
 */
export type ExtensionLifecycleEvent =
  | { type: "session_start"; reason: "startup" | "resume" }
  | { type: "session_shutdown"; reason: "quit" }
  | { type: "thinking_level_select"; level: ThinkingLevel; previousLevel: ThinkingLevel };

/**
 * Every event an extension can receive: the session's events (but `extension_error`,
 * `queue_update`, which pi gives its extensions neither, and `thinking_level_changed`, which
 * reaches them as `thinking_level_select`) and the events above.
 */
export type ExtensionEvent =
  | Exclude<SessionEvent, { type: "extension_error" | "queue_update" | "thinking_level_changed" }>
  | ExtensionLifecycleEvent;

/** The event types `on()` accepts. */
export type ExtensionEventType = ExtensionEvent["type"];

/** A handler: its return value is ignored (lifeline's events are not interceptable). */
export type ExtensionHandler<E = ExtensionEvent> = (event: E, ctx: ExtensionContext) => unknown;

/** pi's tool definition, for the members lifeline uses; rendering members are accepted and ignored. */
export interface ExtensionToolDefinition {
  /** Tool name, as the model calls it. */
  name: string;
  /** Human-readable label. @default the name */
  label?: string;
  /** What the model is told the tool does. */
  description: string;
  /** TypeBox schema or plain JSON schema of the arguments. */
  parameters: object;
  /** Optional shim run on raw arguments before validation. */
  prepareArguments?: (args: unknown) => unknown;
  /** Per-tool execution mode, as pi-agent-core's. */
  executionMode?: "sequential" | "parallel";
  /** Runs in the worker. Throw to report a failure to the model (`isError: true`). */
  execute(
    toolCallId: string,
    params: never,
    signal: AbortSignal | undefined,
    onUpdate: AgentToolUpdateCallback<unknown> | undefined,
    ctx: ExtensionContext,
  ): Promise<AgentToolResult<unknown>>;
  /** Accepted for compatibility with pi's tool definitions; lifeline does not use them. */
  promptSnippet?: string;
  promptGuidelines?: string[];
  renderCall?: unknown;
  renderResult?: unknown;
  renderShell?: unknown;
}

/** The API object (see the module comment). */
export interface ExtensionAPI {
  /** Which thread this copy runs on (a lifeline addition): `"main"` or `"worker"`. */
  readonly thread: ExtensionThread;
  /**
   * Subscribes to an event. Handlers run on the main thread, per session, in event order.
   * @throws ExtensionUnsupportedError for pi events lifeline never emits (`tool_call`, `context`, …).
   */
  on<T extends ExtensionEventType>(event: T, handler: ExtensionHandler<Extract<ExtensionEvent, { type: T }>>): void;
  /** Registers a tool the model can call; it runs in the worker. Only during the factory call. */
  registerTool(tool: ExtensionToolDefinition): void;
  /**
   * The session's thinking level (pi's). Not while the factory runs (as in pi: the session is not
   * bound yet). In a tool, the level of the worker's agent.
   * @throws ExtensionUnsupportedError during the factory call.
   */
  getThinkingLevel(): ThinkingLevel;
  /**
   * Sets the session's thinking level, clamped to its model (pi's `setThinkingLevel`): in a
   * handler on the main thread; the change takes effect, and `thinking_level_changed` is emitted,
   * once the session's worker has taken it.
   * @throws ExtensionUnsupportedError during the factory call, and in a tool (the level is the
   *   main thread's: set it from a handler); LifelineError ERR_INVALID_OPTIONS for a value that is
   *   not a thinking level.
   */
  setThinkingLevel(level: ThinkingLevel): void;
}

/**
 * What `getThinkingLevel`/`setThinkingLevel` reach on a thread, given by whoever runs the factory
 * and read only after it returned. `setThinkingLevel` absent: the thread cannot set the level.
 */
export interface ExtensionSessionActions {
  getThinkingLevel(): ThinkingLevel;
  setThinkingLevel?(level: ThinkingLevel): void;
}

/** An extension module's default export. */
export type ExtensionFactory = (pi: ExtensionAPI) => void | Promise<void>;

/**
 * pi's extension events that lifeline never emits, with what to use instead. `on()` refuses them:
 * a handler that would never run (or a gate that would never close) must not load quietly.
 */
const PI_EVENTS_NOT_EMITTED: Readonly<Record<string, string>> = {
  resources_discover: "lifeline has no skills, prompt templates or themes",
  session_before_switch: "a lifeline session never switches files in place",
  session_before_fork: "lifeline has no /fork",
  session_before_compact: "compaction is not interceptable; observe compaction_start",
  session_compact: "observe compaction_end",
  session_before_tree: "lifeline has no /tree",
  session_tree: "lifeline has no /tree",
  context: "extensions cannot rewrite what the model sees",
  before_provider_request: "extensions cannot rewrite provider payloads",
  after_provider_response: "failed requests reach extensions as agent_end and auto_retry_start",
  before_agent_start: "extensions cannot inject messages or change the system prompt",
  model_select: "lifeline emits no model selection event",
  tool_call: "tools cannot be blocked by extensions; observe tool_execution_start",
  tool_result: "tool results cannot be rewritten by extensions; observe tool_execution_end",
  user_bash: "lifeline has no ! commands",
  input: "prompts cannot be intercepted; observe message_start of the user message",
};

/**
 * Every event type delivered to extensions. A record keyed by the union, so that a new session
 * event type fails to compile here until it is listed (and thereby delivered).
 */
const DELIVERED: Record<ExtensionEventType, true> = {
  agent_start: true,
  agent_end: true,
  turn_start: true,
  turn_end: true,
  message_start: true,
  message_update: true,
  message_end: true,
  tool_execution_start: true,
  tool_execution_update: true,
  tool_execution_end: true,
  auto_retry_start: true,
  auto_retry_end: true,
  provider_gate_wait: true,
  coordination_fallback_start: true,
  coordination_fallback_end: true,
  agent_settled: true,
  compaction_start: true,
  compaction_end: true,
  worker_exited: true,
  session_restored: true,
  session_info_changed: true,
  session_start: true,
  session_shutdown: true,
  thinking_level_select: true,
};

/** The event types extensions can subscribe to, in a stable order (for messages and docs). */
const DELIVERED_EVENT_TYPES: readonly string[] = Object.keys(DELIVERED);

/** Members of pi's `ExtensionAPI` lifeline does not provide; each throws when used. */
const UNSUPPORTED_API_MEMBERS = [
  "registerCommand",
  "registerShortcut",
  "registerFlag",
  "getFlag",
  "registerMessageRenderer",
  "sendMessage",
  "sendUserMessage",
  "appendEntry",
  "setSessionName",
  "getSessionName",
  "setLabel",
  "exec",
  "getActiveTools",
  "getAllTools",
  "setActiveTools",
  "getCommands",
  "setModel",
  "registerProvider",
  "unregisterProvider",
  "events",
] as const;

/** What a factory call registered. */
export interface ExtensionRegistrations {
  /** Handlers by event type, in registration order. */
  handlers: Map<string, ExtensionHandler<never>[]>;
  tools: ExtensionToolDefinition[];
}

/**
 * Builds the API object for one factory call. Registration works while the factory runs; call
 * `close()` once it has returned (or its promise settled): later registrations throw, since the
 * other thread's copy could never learn of them.
 */
function createExtensionApi(
  thread: ExtensionThread,
  actions: ExtensionSessionActions,
): {
  api: ExtensionAPI;
  registrations: ExtensionRegistrations;
  close: () => void;
} {
  const registrations: ExtensionRegistrations = { handlers: new Map(), tools: [] };
  let open = true;
  // pi refuses its action methods while extensions load: no session is bound yet.
  const assertBound = (member: string) => {
    if (!open) return;
    throw new ExtensionUnsupportedError(
      member,
      `pi.${member}() cannot be called while the extension's factory runs (the session is not bound yet); call it from an event handler or a tool.`,
    );
  };
  const assertOpen = (member: string) => {
    if (open) return;
    throw new ExtensionUnsupportedError(
      member,
      `pi.${member}() was called after the extension's factory returned; lifeline takes registrations only while the factory runs (it runs once per session on each thread). Register everything in the factory.`,
    );
  };
  const api = {
    thread,
    on(event: string, handler: ExtensionHandler<never>) {
      assertOpen("on");
      if (typeof event !== "string") {
        throw new TypeError(`pi.on() takes an event name string, got ${typeof event}.`);
      }
      const why = Object.hasOwn(PI_EVENTS_NOT_EMITTED, event) ? PI_EVENTS_NOT_EMITTED[event] : undefined;
      if (why !== undefined) {
        throw new ExtensionUnsupportedError(
          `on("${event}")`,
          `lifeline does not emit pi's "${event}" event (${why}). Remove the handler, or see docs/extensions.md for the events lifeline delivers.`,
        );
      }
      if (!Object.hasOwn(DELIVERED, event)) {
        throw new ExtensionUnsupportedError(
          `on("${event}")`,
          `"${event}" is not an event lifeline delivers to extensions; use one of: ${DELIVERED_EVENT_TYPES.join(", ")}.`,
        );
      }
      if (typeof handler !== "function") {
        throw new TypeError(`pi.on("${event}", handler): the handler must be a function.`);
      }
      const list = registrations.handlers.get(event) ?? [];
      list.push(handler);
      registrations.handlers.set(event, list);
    },
    registerTool(tool: ExtensionToolDefinition) {
      assertOpen("registerTool");
      registrations.tools.push(tool);
    },
    getThinkingLevel() {
      assertBound("getThinkingLevel");
      return actions.getThinkingLevel();
    },
    setThinkingLevel(level: ThinkingLevel) {
      assertBound("setThinkingLevel");
      if (actions.setThinkingLevel === undefined) {
        throw new ExtensionUnsupportedError(
          "setThinkingLevel",
          "pi.setThinkingLevel() cannot be called from a tool: the session's thinking level is kept on the main thread; call it from an on() handler.",
        );
      }
      if (!isThinkingLevel(level)) {
        throw new LifelineError(
          "ERR_INVALID_OPTIONS",
          `pi.setThinkingLevel(${JSON.stringify(level)}): not a thinking level; use one of ${THINKING_LEVELS.join(", ")}.`,
        );
      }
      actions.setThinkingLevel(level);
    },
  };
  for (const member of UNSUPPORTED_API_MEMBERS) {
    const fail = () => {
      throw new ExtensionUnsupportedError(
        member,
        `lifeline does not support pi.${member}; remove it from the extension or guard it (the supported subset is in docs/extensions.md).`,
      );
    };
    Object.defineProperty(api, member, member === "events" ? { get: fail } : { value: fail });
  }
  return {
    api: api as ExtensionAPI,
    registrations,
    close: () => {
      open = false;
    },
  };
}

/**
 * Calls `factory` with a fresh API object for `thread` and returns what it registered.
 * @throws ExtensionLoadError (ERR_EXTENSION_LOAD) when the factory throws or rejects (an unsupported
 *   member included: the error names it).
 */
export async function runExtensionFactory(
  factory: ExtensionFactory,
  thread: ExtensionThread,
  shownPath: string,
  actions: ExtensionSessionActions,
): Promise<ExtensionRegistrations> {
  const { api, registrations, close } = createExtensionApi(thread, actions);
  try {
    await factory(api);
  } catch (error) {
    const unsupported = error instanceof ExtensionUnsupportedError ? " (an API member lifeline does not support)" : "";
    throw new ExtensionLoadError(
      shownPath,
      `Extension ${shownPath} failed in its factory on the ${thread} thread${unsupported}: ${errorText(error)}`,
      { cause: error },
    );
  } finally {
    close();
  }
  return registrations;
}

/**
 * What is wrong with a registered tool definition, or undefined when it has what a tool needs.
 * Checked on both threads, so a malformed tool fails the load on main, naming its extension.
 */
export function toolProblem(definition: ExtensionToolDefinition): string | undefined {
  if (definition === null || typeof definition !== "object") return "registerTool() needs a tool definition object";
  if (typeof definition.name !== "string" || definition.name === "") return "name must be a non-empty string";
  if (typeof definition.description !== "string") return `tool "${definition.name}": description must be a string`;
  if (definition.parameters === null || typeof definition.parameters !== "object") {
    return `tool "${definition.name}": parameters must be a schema object`;
  }
  if (typeof definition.execute !== "function") return `tool "${definition.name}": execute must be a function`;
  return undefined;
}

/** The message of a malformed tool's load error. */
export function malformedToolMessage(path: string, problem: string): string {
  return `Extension ${path} registered a malformed tool: ${problem}. A tool needs name, description, parameters (a TypeBox or JSON schema) and execute(toolCallId, params, signal, onUpdate, ctx).`;
}
