/**
 * How a worker ended, in words and as a {@link WorkerExitCause}: what the pool reported, turned
 * into the cause and the message of the typed error a session's callers get (SPEC X5).
 */
import { LifelineError, type WorkerExitCause, WorkerExitedError, WorkerStartError } from "../../shared/errors.js";

/** Classifies what the pool reported when a worker's task failed. */
export function exitCauseOf(error: unknown): WorkerExitCause {
  const { code, name, message } = (error ?? {}) as { code?: unknown; name?: unknown; message?: unknown };
  if (code === "ERR_WORKER_OUT_OF_MEMORY") return "oom";
  if (name === "AbortError") return "hung";
  if (typeof message === "string" && /^worker exited with code/i.test(message)) return "exit";
  return "crash";
}

/** What a session's caller can do after its worker died. */
const NEXT_STEP =
  "Pending calls were rejected; create a new session to go on (this session's history is kept on the main thread).";

/** The message of ERR_WORKER_EXITED for `cause`, with the detail the pool or the host gave. */
export function exitMessage(cause: WorkerExitCause, detail: string): string {
  switch (cause) {
    case "oom":
      return `The worker serving this session ran out of memory (${detail}). Raise resourceLimits.maxOldGenerationSizeMb or hold less per session. ${NEXT_STEP}`;
    case "hung":
      return `The worker serving this session stopped answering (${detail}) and was terminated. A tool or worker module blocked its event loop; raise hangTimeoutMs if that work is legitimate. ${NEXT_STEP}`;
    case "crash":
      return `The worker serving this session crashed (${detail}). ${NEXT_STEP}`;
    case "exit":
      return `The worker serving this session exited (${detail}). ${NEXT_STEP}`;
    default: {
      const unreachable: never = cause;
      return unreachable;
    }
  }
}

/** The message of ERR_WORKER_START: out of memory while loading, a load error, or no start at all. */
export function startMessage(detail: string, workerError: unknown): string {
  const code = (workerError as { code?: unknown } | undefined)?.code;
  if (code === "ERR_WORKER_OUT_OF_MEMORY") {
    return `The worker thread could not start: it ran out of memory while loading (${detail}). resourceLimits leave too little heap for lifeline's worker; raise maxOldGenerationSizeMb.`;
  }
  if (workerError === undefined) return `The worker thread could not start: ${detail}.`;
  return `The worker thread could not start: its entry failed to load (${detail}). Check that the worker entry exists and its imports resolve.`;
}

/** An error as one line: `CODE: message` when it has a code. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

/**
 * Whether a failed worker call means the worker is gone: it exited, never started, or a call
 * timed out (which terminates it as hung). The session settles such failures through the
 * worker's exit (SPEC X5, X7), not through the call.
 */
export function isWorkerGone(error: unknown): boolean {
  if (error instanceof WorkerExitedError || error instanceof WorkerStartError) return true;
  return error instanceof LifelineError && error.code === "ERR_CALL_TIMEOUT";
}
