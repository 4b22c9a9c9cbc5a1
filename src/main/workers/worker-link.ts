/**
 * The main thread's end of one worker: the port, the bounded calls of {@link WorkerApi}
 * (bounded-calls.ts: no call can hang), what keeps the process alive for it (in-flight-work.ts),
 * and its death. What the worker's messages do (batch items to the sessions it serves, permit
 * requests to the host, extension UI requests to the host's UI) is the inbox's (link-inbox.ts).
 *
 * Life of a link: starting (until the worker's `hello`) → serving → dead. It dies once: the worker
 * exits, crashes, runs out of memory, is terminated as hung, or the host closes it. Its death is
 * typed: `WorkerStartError` if the worker never served, else {@link WorkerExitedError}
 * with the cause (SPEC X5).
 *
 * What remains here is the link's one state machine: every call reads the same death (`#dead`),
 * the same liveness (the inbox's `lastSeenAt`, which judges both the hang of a call and the
 * watchdog's) and the same port order (queued run ops go before any other call); the parts that
 * stand alone live in their own files (bounded-calls, in-flight-work, link-inbox, link-sessions,
 * link-ui, link-control, run-op-queue, worker-exit, hang-judgement).
 */

import { setTimeout as sleep } from "node:timers/promises";
import type { MessagePort } from "node:worker_threads";
import { wrap } from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { LifelineError, type WorkerExitCause, WorkerExitedError } from "../../shared/errors.js";
import type { RunInput, SessionInit, SessionOpened, WorkerApi } from "../../shared/wire/protocol.js";
import { type ApiResult, BoundedCalls, type Unwrapped } from "./bounded-calls.js";
import { hungCallError, judgeHang, LIVE_CALL_PERIODS, setupTimeoutError } from "./hang-judgement.js";
import { InFlightWork } from "./in-flight-work.js";
import { LinkControl } from "./link-control.js";
import { LinkInbox } from "./link-inbox.js";
import type { LinkEndpoint, LinkHooks, LinkTimeouts, PermitHandler } from "./link-options.js";
import { type LinkClient, LinkSessions } from "./link-sessions.js";
import { LinkUi } from "./link-ui.js";
import { RunOpQueue } from "./run-op-queue.js";
import { describeError, exitCauseOf, linkDeath } from "./worker-exit.js";

/** How long a closed port waits for the pool to say why the worker ended. */
const EXIT_REASON_WAIT_MS = 1000;

/**
 * The main side of one worker, created by `SessionHost`. Dies (once) when the worker exits, its port
 * closes, the host closes it, or it is terminated; every call pending then rejects.
 */
export class WorkerLink {
  readonly #port: MessagePort;
  readonly #calls: BoundedCalls;
  readonly #timeouts: LinkTimeouts;
  readonly #sessions = new LinkSessions();
  /** Settles (never rejects) once the worker's serve loop is over and the pool has let go of it. */
  readonly #done: Promise<void>;
  readonly #terminate: (() => void) | undefined;
  readonly #permits: PermitHandler | undefined;
  readonly #onExit: ((cause: WorkerExitCause | "start") => void) | undefined;
  /** Extension tools' `ctx.ui` requests, to the host's UI (answered with nothing without one). */
  readonly #ui: LinkUi;
  /** What the worker's messages do, and when the last one came (link-inbox.ts). */
  readonly #inbox: LinkInbox;
  #dead: LifelineError | undefined;
  /** `openSession` calls in flight: the watchdog allows their `setup()` more time. */
  #opening = 0;
  /** Why lifeline itself terminated the worker, when it did. */
  #hung: string | undefined;
  #closing = false;
  /** Only in-flight work keeps the process alive: pending calls and open runs. */
  readonly #work: InFlightWork;
  /** Run starts and failed-reply removals not sent yet, sent together as one `runOps` message (run-op-queue.ts). */
  readonly #ops: RunOpQueue;
  /** The worker's control channel (early aborts), when the endpoint has one. */
  readonly #control: LinkControl;
  /**
   * SPEC X7: this worker serves only sessions suspected of crashing their previous worker, so that
   * a poison session stops taking its neighbours down. New sessions never go to it.
   */
  readonly isolated: boolean;

  constructor(endpoint: LinkEndpoint, options: LinkTimeouts & LinkHooks) {
    this.#onExit = options.onExit;
    this.#permits = options.permits;
    this.#ui = new LinkUi(
      options.ui,
      (requestId, answer) => void this.call("answerUi", requestId, answer).catch(() => {}),
    );
    this.isolated = options.isolated ?? false;
    this.#port = endpoint.port;
    this.#timeouts = options;
    this.#terminate = endpoint.terminate;
    this.#control = new LinkControl(endpoint.control);
    this.#work = new InFlightWork((referenced) => {
      if (referenced) this.#port.ref();
      else this.#port.unref();
      endpoint.setReferenced?.(referenced);
    });
    this.#calls = new BoundedCalls(wrap<WorkerApi>(nodeEndpoint(endpoint.port)));
    this.#ops = new RunOpQueue(
      this.#calls,
      options.callTimeoutMs,
      (periods) => this.#callTimedOut("runOps", periods),
      options.pacer,
    );
    this.#inbox = new LinkInbox({
      sessions: this.#sessions,
      work: this.#work,
      ui: this.#ui,
      started: () => this.#calls.start(),
      protocolError: options.onProtocolError,
      loopDelay: options.onLoopDelay,
      link: this,
      permits: options.permits,
    });
    this.#port.on("message", (data: unknown) => this.#inbox.receive(data));
    this.#port.on("close", () => this.#onPortClose());
    this.#done = endpoint.done.then(
      () => this.#die("exit", "its serve loop ended"),
      (error: unknown) => this.#die(exitCauseOf(error), describeError(error), error),
    );
  }

  /** Sessions served by this worker, counting those still opening (see {@link reserve}). */
  get clientCount(): number {
    return this.#sessions.count;
  }

  /**
   * Counts a session that is being opened on this worker, so that concurrent createSession calls
   * see the load they are adding. Returns the function that drops the reservation.
   */
  reserve(): () => void {
    return this.#sessions.reserve();
  }

  /** True once the worker has exited or the link was closed. */
  get isDead(): boolean {
    return this.#dead !== undefined;
  }

  /** True once the worker said `hello`: its serve loop runs. */
  get isStarted(): boolean {
    return this.#calls.started;
  }

  /** For the watchdog: `performance.now()` of the worker's last message (or the link's creation). */
  get lastSeenAt(): number {
    return this.#inbox.lastSeenAt;
  }

  /** For the watchdog: a worker module's `setup()` may keep the loop busy up to `setupTimeoutMs`. */
  get allowanceMs(): number {
    return this.#opening > 0 ? this.#timeouts.setupTimeoutMs : 0;
  }

  /**
   * Resolves when the pool has finished with this link's worker. A dead worker's port can close
   * before piscina handles its exit; a new task submitted in between is queued behind the dead
   * worker and may never start, so the host waits for this before starting a replacement.
   */
  get released(): Promise<void> {
    return this.#done;
  }

  /**
   * SPEC X8: the worker stopped answering. Terminates its thread (the exit path then settles
   * everything with `exitCause` `hung`); an in-process endpoint, which cannot be terminated, is
   * abandoned. A worker that never started fails with ERR_WORKER_START instead.
   */
  terminateHung(reason: string): void {
    if (this.#dead !== undefined || this.#hung !== undefined) return;
    this.#hung = reason;
    if (!this.#calls.started || this.#terminate === undefined) {
      this.#die("hung", reason);
      return;
    }
    this.#terminate();
    // piscina settles the task when the thread is gone; if that never comes, give up on it anyway.
    setTimeout(() => this.#die("hung", reason), EXIT_REASON_WAIT_MS).unref();
  }

  /** The pool reported that a worker failed before serving: fails this link if it never started. */
  failStart(error: unknown): void {
    if (this.#calls.started || this.#dead !== undefined) return;
    this.#terminate?.();
    this.#die("crash", describeError(error), error);
  }

  attach(sessionId: string, client: LinkClient): void {
    this.#sessions.attach(sessionId, client);
  }

  detach(sessionId: string): void {
    this.#sessions.detach(sessionId);
    this.#work.sessionDetached(sessionId);
  }

  /** Pending calls plus runs between their start and their `run_end`: what keeps the process alive. */
  get inFlight(): number {
    return this.#work.count;
  }

  /**
   * Calls the worker and unwraps its {@link Result}. A call unanswered after `callTimeoutMs` is
   * judged by the worker's liveness, not by its own latency: a worker that has sent anything
   * (events, heartbeats, other replies) within `hangTimeoutMs` is busy, its port's backlog ahead of
   * this call, and the call waits one more `callTimeoutMs`, up to {@link LIVE_CALL_PERIODS} of
   * them in all. A silent worker is stuck in synchronous code (which the watchdog, X8, would also
   * find), and one that keeps sending but leaves a call unanswered that long is not serving its
   * port; either is terminated as hung, and the call rejects.
   * @throws the worker's typed error; WorkerExitedError/WorkerStartError if the worker is or becomes
   *   gone; ERR_CALL_TIMEOUT if no reply comes within `callTimeoutMs` from a silent worker, or
   *   within `LIVE_CALL_PERIODS × callTimeoutMs` from one still sending (the worker is then
   *   terminated as hung).
   */
  call<K extends keyof WorkerApi>(method: K, ...args: Parameters<WorkerApi[K]>): Promise<Unwrapped<ApiResult<K>>> {
    return this.#invoke(method, args, this.#timeouts.callTimeoutMs, (periods) => this.#callTimedOut(method, periods));
  }

  /**
   * Starts a run of the session on the worker. The run ops of one loop turn go to the worker as
   * one `runOps` message (run-op-queue.ts); each still settles on its own: resolves when the
   * worker started the run, rejects with its own refusal (ERR_SESSION_BUSY, …), or, with the
   * others of its message, as {@link call} does (the worker's death, ERR_CALL_TIMEOUT). Any other
   * call of this link sends the queued ops first, so the port's order is the order of the calls
   * (a `setModel` posted before a start, an `abort` after).
   */
  startRun(sessionId: string, runId: number, input: RunInput): Promise<void> {
    if (this.#dead !== undefined) return Promise.reject(this.#dead);
    const started = this.#ops.add({ kind: "start", sessionId, runId, input }).then(() => undefined);
    return this.#work.track("startRun", [sessionId, runId], started);
  }

  /**
   * R4: removes the session's trailing failed reply from its runtime transcript in the worker;
   * resolves with whether one was removed (none is while a run is active). Travels with the run
   * starts ({@link startRun}), in order, and settles as they do.
   */
  popFailed(sessionId: string): Promise<boolean> {
    if (this.#dead !== undefined) return Promise.reject(this.#dead);
    const popped = this.#ops.add({ kind: "pop_failed", sessionId }).then((removed) => removed === true);
    return this.#work.track("popFailed", [sessionId], popped);
  }

  /** What a timed-out ordinary call decides (see {@link call}): wait one more period, or the error. */
  #callTimedOut(method: keyof WorkerApi, periods: number): LifelineError | undefined {
    const limit = this.#timeouts.callTimeoutMs;
    const hung = judgeHang(method, periods, limit, this.#silentMs(), this.#timeouts.hangTimeoutMs + this.allowanceMs);
    if (hung === undefined) return undefined;
    this.terminateHung(hung.why);
    return hungCallError(method, periods * limit, hung);
  }
  /** How long the worker has sent nothing, in ms: its liveness (calls' hangs, the watchdog). */
  #silentMs(): number {
    return performance.now() - this.#inbox.lastSeenAt;
  }

  /**
   * A call on the shutdown path (`closeSession`, `shutdown`), bounded by `controlTimeoutMs` so
   * that `close()` never waits long; a worker that does not answer is left to the watchdog and
   * the pool. @throws as {@link call}; ERR_CALL_TIMEOUT after `controlTimeoutMs`.
   */
  control<K extends "closeSession" | "shutdown">(
    method: K,
    ...args: Parameters<WorkerApi[K]>
  ): Promise<Unwrapped<ApiResult<K>>> {
    const limit = this.#timeouts.controlTimeoutMs;
    const timedOut = () =>
      new LifelineError("ERR_CALL_TIMEOUT", `The worker did not answer ${method} within ${limit} ms.`);
    return this.#invoke(method, args, limit, timedOut);
  }

  /**
   * Aborts the session's run (X3): the early abort on the control channel, then the `abort` call
   * on the port. Resolves when the worker has acted on it: the run the early abort named is over
   * (its `run_end` came), or the call was answered, whichever comes first. A worker streaming for
   * many sessions can take longer than `controlTimeoutMs` to come back to its port while it ends
   * the run within milliseconds; such a worker is not stuck. One that has done neither within
   * `controlTimeoutMs` is judged by what it sent in that time: nothing, and it is stuck in
   * synchronous code, which only terminating the thread can stop, so it is terminated as hung
   * (the user asked for the run to stop); something, and it is busy (thousands of aborts at once,
   * a tool that ends on its own time) and gets another period, up to {@link LIVE_CALL_PERIODS}.
   * @throws as {@link call}; ERR_CALL_TIMEOUT after `controlTimeoutMs` from a silent worker, or
   *   `LIVE_CALL_PERIODS × controlTimeoutMs` from one still sending.
   */
  async abort(sessionId: string): Promise<void> {
    const limit = this.#timeouts.controlTimeoutMs;
    const runId = this.#dead === undefined ? this.#abortEarly(sessionId) : undefined;
    const runOver = runId === undefined ? undefined : this.#work.whenOver(sessionId, runId);
    const call = this.#invoke("abort", [sessionId], limit, (periods) => {
      if (runId === undefined || this.#work.isOpen(sessionId, runId)) {
        // Sent anything during the period just waited: busy (its port's backlog ahead of the
        // call, a tool finishing), not stuck.
        const hung = judgeHang("abort", periods, limit, this.#silentMs(), limit);
        if (hung === undefined) return undefined;
        this.terminateHung(hung.why);
      }
      return new LifelineError("ERR_CALL_TIMEOUT", `The worker did not answer abort within ${periods * limit} ms.`);
    });
    // With the run's end to race, whichever comes second is of no interest, a late timeout included.
    if (runOver !== undefined) call.catch(() => {});
    await (runOver === undefined ? call : Promise.race([call, runOver]));
  }

  /**
   * `awaitBash`, the one call that answers only when a command is over: no timeout (a long command
   * is not a hung worker; the watchdog judges that from heartbeats), but the worker's death still
   * rejects it (X5), and it holds the process alive meanwhile. @throws as {@link call}.
   */
  awaitBash(sessionId: string): Promise<Unwrapped<ApiResult<"awaitBash">>> {
    // The timeout never comes (no period is armed), so it decides nothing.
    return this.#invoke("awaitBash", [sessionId], Number.POSITIVE_INFINITY, () => undefined);
  }

  /**
   * Opens a session. The timeout is `setupTimeoutMs`, counted from the worker's start (a worker
   * still booting is the watchdog's business): a slow worker module `setup()` rejects this open
   * with ERR_WORKER_MODULE and cancels it in the worker, which keeps serving its other sessions.
   * @throws the worker's typed error (ERR_WORKER_MODULE, ERR_UNKNOWN_MODEL, …), or as {@link call}.
   */
  async openSession(init: SessionInit): Promise<SessionOpened> {
    this.#opening++;
    try {
      const limit = this.#timeouts.setupTimeoutMs;
      return await this.#invoke("openSession", [init], limit, () => {
        void this.control("closeSession", init.sessionId).catch(() => {});
        return setupTimeoutError(init.workerModule, limit);
      });
    } finally {
      this.#opening--;
    }
  }

  /** Asks the worker to stop serving, waits a bounded time for it, then closes the port. */
  async close(): Promise<void> {
    if (this.#dead !== undefined) return;
    this.#closing = true;
    // Closing is work in flight: the wait for the pool to finish the task must hold the process.
    this.#work.beginClosing();
    try {
      await this.control("shutdown");
      await Promise.race([this.#done, sleep(this.#timeouts.controlTimeoutMs, undefined, { ref: false })]);
    } catch {
      // The worker is already gone or stuck; the pool's destroy() terminates it.
    }
    this.#die("exit", "the host closed");
  }

  /**
   * The early half of an abort: names the session's run in flight on the control channel and
   * moves the shared counter, so a worker busy streaming for other sessions aborts it between two
   * of their events instead of at its loop's next turn (control-inbox.ts). The `abort` call that
   * follows on the port stays the ordered, acknowledged and bounded one. Returns the run named,
   * if one was (none without a control channel or a run in flight).
   */
  #abortEarly(sessionId: string): number | undefined {
    const runId = this.#work.openRun(sessionId);
    return runId !== undefined && this.#control.abortEarly(sessionId, runId) ? runId : undefined;
  }

  /** A bounded call that holds the process while it is pending; a `startRun` also holds it until its run_end. */
  #invoke<K extends keyof WorkerApi>(
    method: K,
    args: unknown[],
    timeoutMs: number,
    onTimeout: (periods: number) => LifelineError | undefined,
  ): Promise<Unwrapped<ApiResult<K>>> {
    if (this.#dead !== undefined) return Promise.reject(this.#dead);
    // The ops queued before this call go first: the port keeps the order of the calls.
    this.#ops.flush();
    return this.#work.track(method, args, this.#calls.invoke(method, args, timeoutMs, onTimeout));
  }

  /**
   * A closed port means the worker is gone (or closed it in shutdown), but the pool says why only
   * when it handles the thread's exit, which can come later: wait a moment for that reason.
   */
  #onPortClose(): void {
    if (this.#dead !== undefined) return;
    setTimeout(() => this.#die("exit", "its message port closed"), EXIT_REASON_WAIT_MS);
  }

  #die(cause: WorkerExitCause, detail: string, workerError?: unknown): void {
    if (this.#dead !== undefined) return;
    const closing = this.#closing;
    const { error, cause: reported } = linkDeath(
      { closing, started: this.#calls.started, hung: this.#hung },
      cause,
      detail,
      workerError,
    );
    this.#dead = error;
    if (!closing) this.#onExit?.(reported);
    // B8: permits die with their worker, so the requests of other workers never wait for them.
    this.#permits?.releaseAll(this);
    this.#ui.closeAll();
    this.#work.stop();
    this.#ops.failAll(error);
    this.#calls.failAll(error);
    this.#port.close();
    this.#control.close();
    this.#sessions.end(!closing && error instanceof WorkerExitedError ? error : undefined);
  }
}
