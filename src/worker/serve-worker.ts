/**
 * Serves the {@link WorkerApi} for every session of one worker over one MessagePort.
 *
 * Takes any port-like endpoint, so tests run it in-process over a `MessageChannel`; the
 * worker entry only binds it to the port piscina hands over.
 */
import { type MessagePort, threadId } from "node:worker_threads";
import { expose } from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { LifelineError, toWireError } from "../shared/errors.js";
import { LoopDelaySampler } from "../shared/loop-delay.js";
import {
  type ControlChannel,
  LOOP_REPORT_BEATS,
  type Result,
  type SessionInit,
  type SessionOpened,
  type WorkerApi,
  type WorkerMessage,
} from "../shared/wire/protocol.js";
import { BashRuns } from "./bash/bash-runs.js";
import { ControlInbox } from "./control-inbox.js";
import { EventBatcher } from "./event-batcher.js";
import { WorkerUi } from "./extensions/worker-ui.js";
import { applyNetwork } from "./network/network-setup.js";
import { RequestPermits } from "./request-permits.js";
import { listModels } from "./resolve-model.js";
import { WorkerSession } from "./session/worker-session.js";

/**
 * How many calls of the sign of life (`stillHere` in {@link serveWorker}) go by between two reads
 * of the clock. A streaming worker calls it for every event; the slowest of these places (an
 * abort's dispatch under load, about 1 ms) makes a stride of 16 ms at worst, far below
 * `signOfLifeMs`.
 */
const SIGN_OF_LIFE_STRIDE = 16;

/** Options of {@link serveWorker}. */
export interface ServeOptions {
  /**
   * Minimum spacing of event batches under load, in ms. The first batch after a quiet period goes
   * out on the next macrotask. @default 8
   */
  batchIntervalMs?: number;
  /**
   * SPEC X8: how often the worker tells the main thread its event loop is turning, in ms, when
   * nothing else was sent in that time. 0 sends none (tests that serve in-process). @default 0
   */
  heartbeatMs?: number;
  /**
   * How long the worker may go without posting anything while it makes progress inside one long
   * task (see `stillHere` in {@link serveWorker}) before it posts a heartbeat from there, in ms.
   * Main sets it below its shortest liveness window (an abort's `controlTimeoutMs`). 0: none.
   * @default heartbeatMs
   */
  signOfLifeMs?: number;
  /**
   * The control channel main sends early aborts on (shared/wire/protocol.ts, `ControlChannel`). Without
   * it (tests that serve in-process) aborts come only as `abort` calls on the port.
   */
  control?: ControlChannel;
}

/**
 * Serves sessions on `port` until the main thread calls `shutdown()` or the port closes.
 * @returns a promise that resolves when serving has stopped.
 */
export function serveWorker(port: MessagePort, options: ServeOptions = {}): Promise<void> {
  const heartbeatMs = options.heartbeatMs ?? 0;
  let sentSinceBeat = false;
  /** When this worker last posted anything: what main judges its liveness by (X8, calls' hangs). */
  let lastPostAt = performance.now();
  const post = (message: WorkerMessage) => {
    sentSinceBeat = true;
    lastPostAt = performance.now();
    port.postMessage(message);
  };
  /**
   * X8's sign of life from inside a long stretch of work. The heartbeat below runs on a timer, and
   * a worker can make progress for seconds without reaching its timers: one task that carries out
   * a burst of 10,000 early aborts (a load run's end; each abort's dispatch runs before any of
   * the runs ends and posts), or a loop turn that parses every socket of thousands of streams
   * (bench (m), docs/performance-history.md, "The cut"). Main would take such a worker for one stuck in
   * synchronous code and terminate it, restoring every session it serves. The places that make
   * progress call this: each control message handled, each event pushed, each run op. A worker
   * stuck in a tool's synchronous code reaches none of them, so the watchdog still finds it.
   */
  const signOfLifeMs = options.signOfLifeMs ?? heartbeatMs;
  // The clock is read every SIGN_OF_LIFE_STRIDE-th call: the batcher calls this for every event.
  let untilClock = SIGN_OF_LIFE_STRIDE;
  const stillHere =
    signOfLifeMs > 0
      ? () => {
          if (--untilClock > 0) return;
          untilClock = SIGN_OF_LIFE_STRIDE;
          if (performance.now() - lastPostAt >= signOfLifeMs) post({ type: "heartbeat" });
        }
      : () => {};
  const sessions = new Map<string, WorkerSession>();
  const control = options.control;
  // An early abort names its run, so it can never hit a later one (WorkerSession.abortRun).
  const inbox =
    control === undefined
      ? undefined
      : new ControlInbox(control, (message) => {
          stillHere();
          sessions.get(message.sessionId)?.abortRun(message.runId);
        });
  const batcher = new EventBatcher(
    post,
    options.batchIntervalMs ?? 8,
    undefined,
    inbox === undefined
      ? stillHere
      : () => {
          inbox.poll();
          stillHere();
        },
  );
  // Posted at once, not batched: a permit request is on the critical path of a model request.
  const permits = new RequestPermits(post, () => batcher.flush());
  const bash = new BashRuns();
  const ui = new WorkerUi(post, () => batcher.flush());
  /** Sessions whose `openSession` is awaiting the worker module; a closeSession cancels them. */
  const opening = new Map<string, { cancelled: boolean }>();
  /** B9: this worker's loop-delay sampler, once the main thread asked for it (`watchEventLoop`). */
  let loopDelay: LoopDelaySampler | undefined;
  let beats = 0;
  // The timer keeps nothing alive that the port does not: the worker lives as long as its port.
  // A loop report rides on every LOOP_REPORT_BEATS-th heartbeat, which then goes out regardless.
  const heartbeat =
    heartbeatMs > 0
      ? setInterval(() => {
          beats++;
          const loop = loopDelay !== undefined && beats % LOOP_REPORT_BEATS === 0 ? loopDelay.take() : undefined;
          if (loop !== undefined) post({ type: "heartbeat", loop });
          else if (!sentSinceBeat) post({ type: "heartbeat" });
          sentSinceBeat = false;
        }, heartbeatMs)
      : undefined;
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = () => {
      clearInterval(heartbeat);
      inbox?.close();
      loopDelay?.stop();
      resolve();
    };
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
        // A cancelled open may still be finishing its setup(); its id is free again.
        if (sessions.has(init.sessionId) || opening.get(init.sessionId)?.cancelled === false) {
          throw new LifelineError("ERR_INVALID_OPTIONS", `Session id ${init.sessionId} is already open.`);
        }
        const state = { cancelled: false };
        opening.set(init.sessionId, state);
        let result: Awaited<ReturnType<typeof WorkerSession.open>>;
        try {
          // The thread's proxy and CAs, before the session's first model request (docs/network.md).
          const network = applyNetwork(init.network);
          if (network !== undefined) await network;
          result = await WorkerSession.open(
            init,
            batcher,
            permits,
            init.hasUI === true ? ui.forSession(init.sessionId) : undefined,
          );
        } finally {
          if (opening.get(init.sessionId) === state) opening.delete(init.sessionId);
        }
        if (state.cancelled) {
          // The main thread gave up waiting (setupTimeoutMs) or the host closed meanwhile.
          result.session.close();
          throw new LifelineError("ERR_SESSION_DISPOSED", `Session ${init.sessionId} was closed while it opened.`);
        }
        sessions.set(init.sessionId, result.session);
        return { ok: true, value: result.opened };
      } catch (error) {
        return { ok: false, error: toWireError(error, "ERR_INVALID_OPTIONS") };
      }
    },
    runOps: (ops) =>
      attempt(() =>
        ops.map((op) => {
          stillHere();
          return op.kind === "start"
            ? command(() => find(op.sessionId).startRun(op.runId, op.input))
            : attempt(() => find(op.sessionId).popFailedMessage());
        }),
      ),
    abort: (sessionId) => attempt(() => find(sessionId).abort()),
    appendMessage: (sessionId, message) => command(() => find(sessionId).appendMessage(message)),
    replaceMessages: (sessionId, messages) => command(() => find(sessionId).replaceMessages(messages)),
    queueMessage: (sessionId, kind, message) => command(() => find(sessionId).queueMessage(kind, message)),
    setQueueMode: (sessionId, kind, mode) => command(() => find(sessionId).setQueueMode(kind, mode)),
    setModel: (sessionId, change, thinkingLevel) => attempt(() => find(sessionId).setModel(change, thinkingLevel)),
    setThinkingLevel: (sessionId, level) => attempt(() => find(sessionId).setThinkingLevel(level)),
    listBuiltInModels: (catalogue) => attempt(() => listModels(catalogue)),
    watchEventLoop: () =>
      command(() => {
        loopDelay ??= new LoopDelaySampler();
      }),
    grantPermit: (requestId, granted) => command(() => permits.grant(requestId, granted)),
    startBash: (sessionId, line) => attempt(() => bash.start(sessionId, line, find(sessionId).cwd)),
    async awaitBash(sessionId) {
      try {
        return { ok: true, value: await bash.wait(sessionId) };
      } catch (error) {
        return { ok: false, error: toWireError(error) };
      }
    },
    abortBash: (sessionId) => attempt(() => bash.abort(sessionId)),
    answerUi: (requestId, answer) => command(() => ui.answer(requestId, answer)),
    closeSession: (sessionId) =>
      command(() => {
        const pending = opening.get(sessionId);
        if (pending !== undefined) pending.cancelled = true;
        sessions.get(sessionId)?.close();
        sessions.delete(sessionId);
        bash.abort(sessionId);
      }),
    shutdown: () =>
      command(() => {
        for (const pending of opening.values()) pending.cancelled = true;
        for (const session of sessions.values()) session.close();
        sessions.clear();
        bash.abortAll();
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
    bash.abortAll();
    stop();
  });
  expose(api, nodeEndpoint(port));
  post({ type: "hello", threadId });
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
