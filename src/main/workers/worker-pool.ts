/**
 * The piscina pool behind a host's worker links, and the failures piscina reports in ways that
 * would otherwise take the host down or leave a link waiting forever.
 *
 * - piscina emits `'error'` on the pool for a worker that fails while it runs no task: a worker
 *   whose entry fails to load, one that runs out of memory while loading (a tiny
 *   `resourceLimits`), or a late error of a worker already dropped. An EventEmitter `'error'` with
 *   no listener throws, so the pool always has one: it hands the error to `onStartFailure`, which
 *   fails the links still starting (their tasks would otherwise stay queued forever).
 * - Each link task carries an AbortSignal. Aborting it is how a hung worker is terminated: piscina
 *   removes (terminates) the worker running an aborted task and rejects the task with an
 *   AbortError, and a task still queued is simply dropped (fact F1 in docs/architecture.md: the worker gets no
 *   chance to clean up, which is the point for a thread stuck in synchronous code).
 */
import { stat } from "node:fs";
import { MessageChannel, type MessagePort, type ResourceLimits, type Worker } from "node:worker_threads";
import { Piscina } from "piscina";
import type { LinkEndpoint } from "./link-options.js";
import { trackPoolThreads } from "./pool-threads.js";

/** Options of {@link WorkerPool}. */
export interface WorkerPoolOptions {
  /** URL of the worker entry module. */
  filename: string;
  maxThreads: number;
  resourceLimits?: ResourceLimits;
  /** What each link task carries besides its port. */
  task: { batchIntervalMs?: number; heartbeatMs: number; signOfLifeMs: number; priority?: number };
  /** A worker failed outside any task: see the file comment. */
  onStartFailure: (error: unknown) => void;
}

/** A lazily created piscina pool handing out one long-lived link task per worker. */
export class WorkerPool {
  readonly #options: WorkerPoolOptions;
  #pool: Piscina | undefined;
  /** Refs or unrefs piscina's own handle of a link's worker (keep-alive.ts). */
  #poolThreads: ((port: MessagePort, referenced: boolean) => void) | undefined;

  constructor(options: WorkerPoolOptions) {
    this.#options = options;
  }

  /** Starts a link task (and so a worker, up to `maxThreads`); returns its endpoint. */
  connect(): LinkEndpoint {
    const pool = this.#ensurePool();
    const { port1, port2 } = new MessageChannel();
    // The control channel (shared/wire/protocol.ts): early aborts, ahead of a busy worker's loop.
    const control = new MessageChannel();
    const flag = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    const abort = new AbortController();
    const done = pool.run(
      { port: port2, control: { port: control.port2, flag }, ...this.#options.task },
      { transferList: [port2, control.port2], signal: abort.signal },
    );
    const poolThreads = this.#poolThreads;
    return {
      port: port1,
      control: { port: control.port1, posted: new Int32Array(flag) },
      done,
      terminate: () => abort.abort(),
      setReferenced: (referenced) => poolThreads?.(port2, referenced),
    };
  }

  /** The pool's live threads (none before the first link or after `destroy()`). */
  get threads(): readonly Worker[] {
    return this.#pool?.threads ?? [];
  }

  /** Terminates every worker. Resolves when all have exited. */
  async destroy(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.destroy();
  }

  #ensurePool(): Piscina {
    if (this.#pool !== undefined) return this.#pool;
    // libuv's thread pool (file system, DNS) is created by the first thread that uses it, and a
    // Linux thread inherits its creator's nice value: created by a lowered worker, the main
    // thread's file writes would run at the workers' priority. One use from here creates it first.
    if (this.#options.task.priority !== undefined) stat(".", () => {});
    const pool = new Piscina({
      filename: this.#options.filename,
      minThreads: 0,
      maxThreads: this.#options.maxThreads,
      // One link task per worker: each long-lived task gets a thread of its own.
      concurrentTasksPerWorker: 1,
      idleTimeout: 1000,
      // Sessions keep timers and port listeners alive between calls; the worker must never park.
      atomics: "disabled",
      ...(this.#options.resourceLimits === undefined ? {} : { resourceLimits: this.#options.resourceLimits }),
    });
    pool.on("error", (error: unknown) => this.#options.onStartFailure(error));
    this.#poolThreads = trackPoolThreads(pool);
    this.#pool = pool;
    return pool;
  }
}
