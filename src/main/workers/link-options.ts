/**
 * What a `WorkerLink` is built from: the endpoint of its worker (a pool thread's port from
 * worker-pool.ts, or one end of a `MessageChannel` in tests), the timeouts the host resolved from
 * its options, and the host's hooks.
 */
import type { MessagePort } from "node:worker_threads";
import type { WorkerExitCause } from "../../shared/errors.js";
import type { UiTransport } from "../../shared/extensions/extension-ui.js";
import type { LoopDelay } from "../../shared/wire/protocol.js";
import type { TurnPacer } from "./turn-pacer.js";

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
   * main's end of the worker's control channel (shared/wire/protocol.ts, `ControlChannel`): the port
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

/** What a permit handler answers a worker through: its link (`WorkerLink`), also the key of its permits. */
export interface PermitLink {
  call(method: "grantPermit", requestId: number, granted: boolean): Promise<unknown>;
}

/**
 * B8: where a worker's permit messages go (the host's coordination). Each is called on the main
 * thread as the message arrives; none may throw.
 */
export interface PermitHandler {
  /** A session of `link`'s worker asks for a permit for one model request; answer with `grantPermit`. */
  request(link: PermitLink, sessionId: string, requestId: number): void;
  /** That request ended or was cancelled: its permit, or its place in the queue, is given back. */
  release(link: PermitLink, requestId: number): void;
  /** The worker is gone: every permit it held or waited for is released. */
  releaseAll(link: PermitLink): void;
}

/** What the host gives a link to hear from it and to reach the host's parts. */
export interface LinkHooks {
  onProtocolError: (reason: string) => void;
  isolated?: boolean;
  permits?: PermitHandler | undefined;
  /** B9: told once how the worker ended (`start` when it never started), unless the host closed it. */
  onExit?: ((cause: WorkerExitCause | "start") => void) | undefined;
  /** B9: a loop report of the worker (thread `threadId`), once `watchEventLoop` was called. */
  onLoopDelay?: ((threadId: number, delay: LoopDelay) => void) | undefined;
  ui?: UiTransport | undefined;
  /** The host's pacer: the answers of a burst of run ops settle a slice at a time (run-op-queue.ts). */
  pacer?: TurnPacer | undefined;
}
