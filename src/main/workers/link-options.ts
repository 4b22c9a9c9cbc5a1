/**
 * What a `WorkerLink` is built from besides its host's hooks: the endpoint of its worker (a pool
 * thread's port from worker-pool.ts, or one end of a `MessageChannel` in tests) and the timeouts
 * the host resolved from its options.
 */
import type { MessagePort } from "node:worker_threads";

/** A worker's port plus a promise that settles when its serve loop ends (rejects on a crash). */
export interface LinkEndpoint {
  port: MessagePort;
  done: Promise<unknown>;
  /**
   * Terminates the worker thread (which then settles `done`). Absent for in-process endpoints:
   * a link that must stop one is abandoned instead.
   */
  terminate?: () => void;
  /**
   * main's end of the worker's control channel (shared/protocol.ts, `ControlChannel`): the port
   * and the counter over the shared flag. Absent for in-process endpoints: aborts then go only as
   * calls on `port`.
   */
  control?: { port: MessagePort; posted: Int32Array };
  /** Refs or unrefs what else of the worker holds the process (the pool's own port for it). */
  setReferenced?: (referenced: boolean) => void;
}

/** Timeouts of a link, resolved by the host from its options. */
export interface LinkTimeouts {
  /**
   * Longest wait for an ordinary call to a silent worker; past it the worker is taken to be hung.
   * A worker still sending gets more periods of it (hang-judgement.ts, `LIVE_CALL_PERIODS`).
   */
  callTimeoutMs: number;
  /** SPEC X8: a worker silent this long is hung (the watchdog's bound); one heard from sooner is alive. */
  hangTimeoutMs: number;
  /** Longest wait for `openSession` once the worker has started (its module's `setup()`). */
  setupTimeoutMs: number;
  /** Longest wait for `abort`, `closeSession` and `shutdown`: the bound on `abort()` and `close()`. */
  controlTimeoutMs: number;
}
