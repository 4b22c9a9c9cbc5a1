/**
 * The worker entry piscina loads. A thin shim: it binds the port handed over in the task to
 * {@link serveWorker}. The task stays pending for the worker's life, so piscina counts the
 * worker busy and never parks it in Atomics.wait while sessions are open (fact F5 in docs/architecture.md).
 */
import type { MessagePort } from "node:worker_threads";
import type { ControlChannel } from "../shared/wire/protocol.js";
import { type ServeOptions, serveWorker } from "./serve-worker.js";
import { lowerThreadPriority } from "./thread-priority.js";

/** The task the main thread runs on the pool: one per worker link. */
export interface LinkTask {
  port: MessagePort;
  batchIntervalMs?: number;
  heartbeatMs?: number;
  signOfLifeMs?: number;
  /** The control channel for early aborts (shared/wire/protocol.ts). */
  control?: ControlChannel;
  /** The host's `workerPriority`: this thread's nice value, on Linux (thread-priority.ts). */
  priority?: number;
}

export default function serveLink(task: LinkTask): Promise<void> {
  if (task.priority !== undefined && task.priority > 0) lowerThreadPriority(task.priority);
  const options: ServeOptions = {};
  if (task.batchIntervalMs !== undefined) options.batchIntervalMs = task.batchIntervalMs;
  if (task.heartbeatMs !== undefined) options.heartbeatMs = task.heartbeatMs;
  if (task.signOfLifeMs !== undefined) options.signOfLifeMs = task.signOfLifeMs;
  if (task.control !== undefined) options.control = task.control;
  return serveWorker(task.port, options);
}
