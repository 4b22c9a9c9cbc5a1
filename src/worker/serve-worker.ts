/**
 * Serves the {@link WorkerApi} for every session of one worker over one MessagePort.
 *
 * Takes any port-like endpoint, so tests run it in-process over a `MessageChannel`; the
 * worker entry only binds it to the port piscina hands over.
 */
import type { MessagePort } from "node:worker_threads";
import { expose } from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { LifelineError, toWireError } from "../shared/errors.js";
import type { Result, SessionInit, SessionOpened, WorkerApi, WorkerMessage } from "../shared/protocol.js";
import { demoModels } from "./demo-provider.js";
import { EventBatcher } from "./event-batcher.js";
import { WorkerSession } from "./worker-session.js";

/** Options of {@link serveWorker}. */
export interface ServeOptions {
  /**
   * Minimum spacing of event batches under load, in ms. The first batch after a quiet period goes
   * out on the next macrotask. @default 8
   */
  batchIntervalMs?: number;
}

/**
 * Serves sessions on `port` until the main thread calls `shutdown()` or the port closes.
 * @returns a promise that resolves when serving has stopped.
 */
export function serveWorker(port: MessagePort, options: ServeOptions = {}): Promise<void> {
  const batcher = new EventBatcher((message: WorkerMessage) => port.postMessage(message), options.batchIntervalMs ?? 8);
  const sessions = new Map<string, WorkerSession>();
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });

  const find = (sessionId: string): WorkerSession => {
    const session = sessions.get(sessionId);
    if (session === undefined) {
      throw new LifelineError("ERR_SESSION_DISPOSED", `Session ${sessionId} is not open in this worker.`);
    }
    return session;
  };

  const api: WorkerApi = {
    async openSession(init: SessionInit): Promise<Result<SessionOpened>> {
      try {
        if (sessions.has(init.sessionId)) {
          throw new LifelineError("ERR_INVALID_OPTIONS", `Session id ${init.sessionId} is already open.`);
        }
        const { session, opened } = await WorkerSession.open(init, batcher);
        sessions.set(init.sessionId, session);
        return { ok: true, value: opened };
      } catch (error) {
        return { ok: false, error: toWireError(error, "ERR_INVALID_OPTIONS") };
      }
    },
    startRun: (sessionId, runId, input) => command(() => find(sessionId).startRun(runId, input)),
    abort: (sessionId) => attempt(() => find(sessionId).abort()),
    popFailedMessage: (sessionId) => attempt(() => find(sessionId).popFailedMessage()),
    appendMessage: (sessionId, message) => command(() => find(sessionId).appendMessage(message)),
    queueMessage: (sessionId, kind, message) => command(() => find(sessionId).queueMessage(kind, message)),
    setModel: (sessionId, change) => attempt(() => find(sessionId).setModel(change)),
    listBuiltInModels: () => attempt(() => [...demoModels().values()]),
    closeSession: (sessionId) =>
      command(() => {
        sessions.get(sessionId)?.close();
        sessions.delete(sessionId);
      }),
    shutdown: () =>
      command(() => {
        for (const session of sessions.values()) session.close();
        sessions.clear();
        batcher.flush();
        // Let comlink post this call's reply before the port goes away.
        setImmediate(() => {
          port.close();
          stop();
        });
      }),
  };

  port.on("close", () => {
    for (const session of sessions.values()) session.close();
    sessions.clear();
    stop();
  });
  expose(api, nodeEndpoint(port));
  return stopped;
}

/** Runs `fn`, returning its value as a Result, and any throw as a typed error in data form. */
function attempt<T>(fn: () => T): Result<T> {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, error: toWireError(error) };
  }
}

/** {@link attempt} for commands with no value: success is `null`, which crosses a port as itself. */
function command(fn: () => void): Result<null> {
  return attempt(() => {
    fn();
    return null;
  });
}
