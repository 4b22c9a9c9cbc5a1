/**
 * The liveness rule of a worker call that went unanswered (worker-link.ts): a worker still
 * sending is busy, its port's backlog ahead of the call, and the call waits more periods; a silent
 * one, or one that keeps sending but never answers, is hung. Ordinary calls and aborts use it,
 * each with its own period and window of liveness.
 */
import { LifelineError } from "../../shared/errors.js";

/**
 * How many `callTimeoutMs` periods an ordinary call waits for a worker that is still sending
 * (worker-link.ts, `WorkerLink.call`; an abort likewise, in periods of `controlTimeoutMs`): a worker streaming for thousands of sessions answers its port
 * behind a backlog (bench (m), docs/performance.md), and killing it for that restores every one
 * of its sessions. The bound keeps "nothing waits forever" for a worker that sends but never answers.
 */
export const LIVE_CALL_PERIODS = 4;

/** A hung worker: whether it was still sending, and why it is taken to be hung (for its exit). */
export interface Hang {
  alive: boolean;
  why: string;
}

/**
 * Judges `method`, unanswered after `periods` periods of `limitMs`, from a worker silent for
 * `silentMs`: undefined while it sent anything within `liveWindowMs` and fewer than
 * {@link LIVE_CALL_PERIODS} periods have passed (it is busy: wait one more); else how it is hung.
 */
export function judgeHang(
  method: string,
  periods: number,
  limitMs: number,
  silentMs: number,
  liveWindowMs: number,
): Hang | undefined {
  const alive = silentMs < liveWindowMs;
  if (alive && periods < LIVE_CALL_PERIODS) return undefined;
  const waited = periods * limitMs;
  const why = alive
    ? `it did not answer ${method} within ${waited} ms although it kept sending`
    : `it did not answer ${method} within ${waited} ms and sent nothing for ${Math.round(silentMs)} ms`;
  return { alive, why };
}

/**
 * How long a worker busy inside one long task may go without posting before it posts a heartbeat
 * from there (serve-worker.ts, `signOfLifeMs`): its timer heartbeat's period, or a quarter of an
 * abort's liveness window (`controlTimeoutMs`, judged by {@link judgeHang} on what the worker sent
 * in it) if that is shorter, so that a worker making progress sends something within every window.
 * At least 10 ms: a busy worker posts at most a hundred heartbeats a second.
 */
export function signOfLifeMs(heartbeatMs: number, controlTimeoutMs: number): number {
  return Math.max(10, Math.min(heartbeatMs, Math.floor(controlTimeoutMs / 4)));
}

/** The error of an ordinary call unanswered after `waitedMs` from a worker judged `hung` (it is terminated). */
export function hungCallError(method: string, waitedMs: number, hung: Hang): LifelineError {
  const why = hung.alive
    ? "it kept sending but does not serve its port"
    : "it is taken to be blocked in synchronous code";
  return new LifelineError(
    "ERR_CALL_TIMEOUT",
    `The worker did not answer ${method} within ${waitedMs} ms; ${why} and is terminated. Raise callTimeoutMs or check the worker module's tools.`,
  );
}

/** The error of an `openSession` unanswered within `limitMs` (`setupTimeoutMs`): its worker module's `setup()`, or the open itself. */
export function setupTimeoutError(workerModule: string | undefined, limitMs: number): LifelineError {
  const what =
    workerModule === undefined
      ? "The worker did not open the session"
      : `Worker module ${workerModule} setup() did not finish`;
  return new LifelineError(
    "ERR_WORKER_MODULE",
    `${what} within ${limitMs} ms (setupTimeoutMs); the session was not created and the worker keeps serving. Raise setupTimeoutMs or make setup() faster.`,
  );
}
