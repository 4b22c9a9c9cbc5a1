/**
 * The worker's copy of a session's extensions: each module is imported once per worker thread,
 * its factory is called once per session opened here, and the tools it registers become the
 * session's agent tools. `on()` handlers registered here are ignored: events are handled by the
 * main thread's copy.
 */
import type { AgentTool } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import { ExtensionLoadError } from "../../shared/errors.js";
import {
  type ExtensionContext,
  type ExtensionFactory,
  type ExtensionToolDefinition,
  malformedToolMessage,
  runExtensionFactory,
  toolProblem,
} from "../../shared/extensions/extension-api.js";
import { createUiContext, type UiTransport } from "../../shared/extensions/extension-ui.js";
import { importExtension } from "../../shared/extensions/import-extension.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import type { SessionExtensions } from "../../shared/wire/protocol.js";

/** What a tool's `ctx` reads from its session, bound once the session's agent exists. */
export interface ToolSessionView {
  model(): Model<Api>;
  isStreaming(): boolean;
  abort(): void;
  hasPendingMessages(): boolean;
  /** The agent's thinking level (pi's `getThinkingLevel()` in a tool). */
  thinkingLevel(): ThinkingLevel;
  /** Where `ctx.ui` goes: main, through the port (the host has a UI); undefined: pi's no-UI defaults. */
  readonly ui?: UiTransport | undefined;
}

/** Factories already imported in this thread, by file. */
const factories = new Map<string, Promise<ExtensionFactory>>();

function factoryOf(file: string, shownPath: string): Promise<ExtensionFactory> {
  let factory = factories.get(file);
  if (factory === undefined) {
    factory = importExtension(file, shownPath);
    factories.set(file, factory);
    // A failed import is not kept: the next session tries again (the file may have been fixed).
    factory.catch(() => factories.delete(file));
  }
  return factory;
}

/**
 * Loads the session's extensions in order and returns their tools. Among extensions, the first
 * to register a name wins (as in pi); `view` is read only when a tool runs.
 * @throws ExtensionLoadError (ERR_EXTENSION_LOAD) naming the extension that failed to load or
 *   registered a malformed tool.
 */
export async function loadExtensionTools(
  extensions: SessionExtensions,
  sessionId: string,
  view: () => ToolSessionView,
): Promise<AgentTool[]> {
  const tools = new Map<string, AgentTool>();
  for (const { file, path } of extensions.files) {
    // A tool reads the agent's level; setting it is the main thread's (no setThinkingLevel here).
    const actions = { getThinkingLevel: () => view().thinkingLevel() };
    const registrations = await runExtensionFactory(await factoryOf(file, path), "worker", path, actions);
    for (const definition of registrations.tools) {
      const tool = toAgentTool(definition, path, (signal) => toolContext(extensions.cwd, sessionId, view(), signal));
      if (!tools.has(tool.name)) tools.set(tool.name, tool);
    }
  }
  return [...tools.values()];
}

/** pi's `execute(id, params, signal, onUpdate, ctx)` as pi-agent-core's four-argument `execute`. */
function toAgentTool(
  definition: ExtensionToolDefinition,
  path: string,
  context: (signal: AbortSignal | undefined) => ExtensionContext,
): AgentTool {
  const problem = toolProblem(definition);
  if (problem !== undefined) {
    throw new ExtensionLoadError(path, malformedToolMessage(path, problem));
  }
  const tool: AgentTool = {
    name: definition.name,
    label: definition.label ?? definition.name,
    description: definition.description,
    parameters: definition.parameters as AgentTool["parameters"],
    execute: (toolCallId, params, signal, onUpdate) =>
      definition.execute(toolCallId, params as never, signal, onUpdate, context(signal)),
  };
  if (definition.prepareArguments !== undefined) {
    tool.prepareArguments = definition.prepareArguments as NonNullable<AgentTool["prepareArguments"]>;
  }
  if (definition.executionMode !== undefined) tool.executionMode = definition.executionMode;
  return tool;
}

function toolContext(
  cwd: string,
  sessionId: string,
  view: ToolSessionView,
  signal: AbortSignal | undefined,
): ExtensionContext {
  return {
    cwd,
    hasUI: view.ui !== undefined,
    ui: createUiContext(view.ui),
    sessionId,
    model: view.model(),
    signal,
    isIdle: () => !view.isStreaming(),
    abort: () => view.abort(),
    hasPendingMessages: () => view.hasPendingMessages(),
  };
}
