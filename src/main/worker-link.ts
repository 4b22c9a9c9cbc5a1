/**
 * The main thread's end of one worker: the port, the comlink proxy for {@link WorkerApi} calls,
 * and the dispatch of batch items to the sessions the worker serves.
 *
 * comlink never rejects a pending call when the worker dies (runtime-notes §0.3), so every call
 * goes through {@link WorkerLink.call}, which settles on the reply, on the worker's death, or on a
 * timeout, whichever comes first: no call can hang. The link holds its proxy strongly: a
 * garbage-collected comlink proxy would close the worker's port.
 */
import type { MessagePort } from "node:worker_threads";
import { type Remote, wrap } from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { fromWireError, LifelineError, WorkerExitedError } from "../shared/errors.js";
import { type BatchItem, decodeWorkerMessage, type Result, type WorkerApi } from "../shared/protocol.js";
import { KeepAlive } from "./keep-alive.js";

/** A worker's port plus a promise that settles when its serve loop ends (rejects on a crash). */
export interface LinkEndpoint {
  port: MessagePort;
  done: Promise<unknown>;
  /** Refs or unrefs what else of the worker holds the process (the pool's own port for it). */
  setReferenced?: (referenced: boolean) => void;
}

/** What a session registers with its link. */
export interface LinkClient {
  handleItem(item: BatchItem): void;
  handleWorkerExit(error: WorkerExitedError): void;
}

type ApiResult<K extends keyof WorkerApi> = Awaited<ReturnType<WorkerApi[K]>>;
type Unwrapped<R> = R extends { ok: false } ? never : R extends { ok: true; value: infer T } ? T : R;

/**
 * The main side of one worker, created by `SessionHost`. Dies (once) when the worker exits, its port
 * closes, the host closes it, or it is abandoned; every call pending then rejects.
 */
export class WorkerLink {
  readonly #port: MessagePort;
  readonly #remote: Remote<WorkerApi>;
  readonly #callTimeoutMs: number;
  readonly #clients = new Map<string, LinkClient>();
  readonly #pending = new Set<(error: LifelineError) => void>();
  /** Settles (never rejects) once the worker's serve loop is over and the pool has let go of it. */
  readonly #done: Promise<void>;
  readonly #onProtocolError: (reason: string) => void;
  #dead: WorkerExitedError | undefined;
  #reserved = 0;
  readonly #onUnresponsive: (link: WorkerLink) => void;
  /** Why the worker is being terminated, when lifeline itself decided to (it stopped answering). */
  #hung: string | undefined;
  /** Thread id of the worker, learnt from its first openSession. */
  threadId: number | undefined;
  #closing = false;
  /** Only in-flight work keeps the process alive (keep-alive.ts): pending calls and open runs. */
  readonly #keepAlive: KeepAlive;
  /** Runs started and not yet ended (`sessionId#runId`), each counted once in #keepAlive. */
  readonly #openRuns = new Set<string>();

  constructor(
    endpoint: LinkEndpoint,
    options: {
      callTimeoutMs: number;
      onProtocolError: (reason: string) => void;
      /** Called once when a call gets no answer in time: the worker is taken to be hung. */
      onUnresponsive: (link: WorkerLink) => void;
    },
  ) {
    this.#port = endpoint.port;
    this.#callTimeoutMs = options.callTimeoutMs;
    this.#onProtocolError = options.onProtocolError;
    this.#onUnresponsive = options.onUnresponsive;
    this.#remote = wrap<WorkerApi>(nodeEndpoint(endpoint.port));
    this.#keepAlive = new KeepAlive((referenced) => {
      if (referenced) this.#port.ref();
      else this.#port.unref();
      endpoint.setReferenced?.(referenced);
    });
    this.#port.on("message", (data: unknown) => this.#onMessage(data));
    this.#port.on("close", () => this.#die("its message port closed"));
    this.#done = endpoint.done.then(
      () => this.#die("it stopped serving"),
      (error: unknown) => this.#die(error instanceof Error ? error.message : String(error), error),
    );
  }

  /** Sessions served by this worker, counting those still opening (see {@link reserve}). */
  get clientCount(): number {
    return this.#clients.size + this.#reserved;
  }

  /**
   * Counts a session that is being opened on this worker, so that concurrent createSession calls
   * see the load they are adding. Returns the function that drops the reservation.
   */
  reserve(): () => void {
    this.#reserved++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#reserved--;
    };
  }

  /** True once the worker has exited or the link was closed. */
  get isDead(): boolean {
    return this.#dead !== undefined;
  }

  /**
   * Resolves when the pool has finished with this link's worker. A dead worker's port can close
   * before piscina handles its exit; a new task submitted in between is queued behind the dead
   * worker and may never start, so the host waits for this before starting a replacement.
   */
  get released(): Promise<void> {
    return this.#done;
  }

  /** Gives up on a worker that does not answer: rejects its calls and notifies its sessions. */
  abandon(reason: string): void {
    this.#die(reason);
  }

  attach(sessionId: string, client: LinkClient): void {
    this.#clients.set(sessionId, client);
  }

  detach(sessionId: string): void {
    this.#clients.delete(sessionId);
    for (const run of this.#openRuns) if (run.startsWith(`${sessionId}#`)) this.#endRun(run);
  }

  /** Pending calls plus runs between their start and their `run_end`: what keeps the process alive. */
  get inFlight(): number {
    return this.#keepAlive.inFlight;
  }

  /**
   * Calls the worker and unwraps its {@link Result}.
   * @throws the worker's typed error; WorkerExitedError if the worker is or becomes gone;
   *   ERR_CALL_TIMEOUT if no reply comes within the call timeout.
   */
  call<K extends keyof WorkerApi>(method: K, ...args: Parameters<WorkerApi[K]>): Promise<Unwrapped<ApiResult<K>>> {
    if (this.#dead !== undefined) return Promise.reject(this.#dead);
    const run = method === "startRun" ? `${String(args[0])}#${String(args[1])}` : undefined;
    if (run !== undefined && !this.#openRuns.has(run)) {
      this.#openRuns.add(run);
      this.#keepAlive.begin();
    }
    this.#keepAlive.begin();
    const call = new Promise<Unwrapped<ApiResult<K>>>((resolve, reject) => {
      const fail = (error: LifelineError) => {
        clearTimeout(timer);
        this.#pending.delete(fail);
        reject(error);
      };
      const timer = setTimeout(() => {
        fail(
          new LifelineError(
            "ERR_CALL_TIMEOUT",
            `The worker did not answer ${method} within ${this.#callTimeoutMs} ms; it is taken to be blocked in synchronous code and is terminated. Raise callTimeoutMs or check the worker module's tools.`,
          ),
        );
        if (this.#hung === undefined && this.#dead === undefined) {
          this.#hung = `it did not answer ${method} within ${this.#callTimeoutMs} ms and was terminated`;
          this.#onUnresponsive(this);
        }
      }, this.#callTimeoutMs);
      timer.unref();
      this.#pending.add(fail);
      const invoke = this.#remote[method] as unknown as (...a: unknown[]) => Promise<ApiResult<K>>;
      invoke(...args).then(
        (result) => {
          if (!this.#pending.has(fail)) return;
          clearTimeout(timer);
          this.#pending.delete(fail);
          if (isResult(result)) {
            if (result.ok) resolve(result.value as Unwrapped<ApiResult<K>>);
            else reject(fromWireError(result.error));
          } else {
            resolve(result as Unwrapped<ApiResult<K>>);
          }
        },
        (error: unknown) => fail(new LifelineError("ERR_PROTOCOL", `Worker call ${method} failed: ${String(error)}`)),
      );
    });
    call.then(
      () => this.#keepAlive.end(),
      () => {
        this.#keepAlive.end();
        // A refused start opens no run, so no run_end will come for it.
        if (run !== undefined) this.#endRun(run);
      },
    );
    return call;
  }

  /** Asks the worker to stop serving, waits up to `timeoutMs` for it, then closes the port. */
  async close(timeoutMs: number): Promise<void> {
    if (this.#dead !== undefined) return;
    this.#closing = true;
    // Closing is work in flight: the wait for the pool to finish the task must hold the process.
    this.#keepAlive.begin();
    try {
      await this.call("shutdown");
      await Promise.race([this.#done, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
    } catch {
      // The worker is already gone or stuck; the pool's destroy() terminates it.
    }
    this.#die("the host closed");
  }

  #onMessage(data: unknown): void {
    const decoded = decodeWorkerMessage(data);
    switch (decoded.kind) {
      case "comlink":
        return;
      case "invalid":
        this.#onProtocolError(decoded.reason);
        return;
      case "message":
        for (const item of decoded.message.items) {
          if (item.type === "run_end") this.#endRun(`${item.sessionId}#${item.runId}`);
          this.#clients.get(item.sessionId)?.handleItem(item);
        }
        return;
      default: {
        const unreachable: never = decoded;
        throw new LifelineError("ERR_PROTOCOL", `Unhandled decoded message ${JSON.stringify(unreachable)}`);
      }
    }
  }

  #endRun(run: string): void {
    if (this.#openRuns.delete(run)) this.#keepAlive.end();
  }

  #die(exitReason: string, cause?: unknown): void {
    if (this.#dead !== undefined) return;
    const reason = this.#hung ?? exitReason;
    const error = new WorkerExitedError(
      this.#closing
        ? "The session host was closed."
        : `The worker serving this session exited (${reason}). Pending calls were rejected; create a new session to go on (this session's history is kept on the main thread).`,
      cause === undefined ? {} : { cause },
    );
    this.#dead = error;
    this.#keepAlive.stop();
    for (const fail of [...this.#pending]) fail(error);
    this.#port.close();
    const clients = [...this.#clients.values()];
    this.#clients.clear();
    if (!this.#closing) for (const client of clients) client.handleWorkerExit(error);
  }
}

function isResult(value: unknown): value is Result<unknown> {
  return (
    value !== null && typeof value === "object" && "ok" in value && typeof (value as { ok: unknown }).ok === "boolean"
  );
}
