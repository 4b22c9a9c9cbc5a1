/**
 * The tools a session's agent gets: those of its worker module (`workerModule`'s `setup`), and
 * those of its pi extensions, an extension's tool replacing a module's tool of the same name (as
 * pi's replace built-ins).
 */
import type { AgentTool } from "@mariozechner/pi-agent-core";
import { LifelineError } from "../../shared/errors.js";
import { errorText } from "../../shared/failures/error-text.js";
import type { SessionInit } from "../../shared/wire/protocol.js";
import type { WorkerModuleSetup, WorkerModuleSetupFn } from "../../shared/worker-module.js";
import { loadExtensionTools, type ToolSessionView } from "../extensions/extension-tools.js";

/**
 * Loads the session's tools, the worker module's first. `view` is read only when a tool runs.
 * @throws LifelineError ERR_WORKER_MODULE when the worker module fails to load or set up; what
 *   loading an extension throws.
 */
export async function loadSessionTools(init: SessionInit, view: () => ToolSessionView): Promise<AgentTool[]> {
  const moduleTools = init.workerModule === undefined ? [] : await loadModuleTools(init);
  const extensionTools =
    init.extensions === undefined || init.extensions.files.length === 0
      ? []
      : await loadExtensionTools(init.extensions, init.sessionId, view);
  const names = new Set(extensionTools.map((tool) => tool.name));
  return [...moduleTools.filter((tool) => !names.has(tool.name)), ...extensionTools];
}

/** Imports the worker module and runs its `setup` (or default export) for this session. */
async function loadModuleTools(init: SessionInit): Promise<AgentTool[]> {
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
