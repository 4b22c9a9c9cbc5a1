/**
 * The contract of a worker module: a file the host names in `createSession({ workerModule })`,
 * imported inside the worker thread that serves the session.
 *
 * It exports `setup` (or a default function) taking a {@link WorkerModuleContext} and returning
 * the session's tools. It runs in the worker, so it may also register pi-ai providers there.
 * If it throws, or its import throws, `createSession()` rejects with ERR_WORKER_MODULE.
 */
import type { AgentTool } from "@mariozechner/pi-agent-core";

/** What `setup` receives. */
export interface WorkerModuleContext {
  sessionId: string;
  /** The session's `workerModuleOptions`, structured-cloned. */
  options: unknown;
}

/** What `setup` may return. */
export interface WorkerModuleSetup {
  tools?: AgentTool[];
}

/** The shape of a worker module's `setup` (or default) export. */
export type WorkerModuleSetupFn = (
  context: WorkerModuleContext,
) => WorkerModuleSetup | AgentTool[] | undefined | Promise<WorkerModuleSetup | AgentTool[] | undefined>;
