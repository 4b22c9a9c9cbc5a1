/**
 * How a worker ended, in words and as a {@link WorkerExitCause}: what the pool reported, turned
 * into the cause and the message of the typed error a session's callers get (SPEC X5), and that
 * error itself for a link that dies ({@link linkDeath}).
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
function exitMessage(cause: WorkerExitCause, detail: string): string {
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
function startMessage(detail: string, workerError: unknown): string {
  const code = (workerError as { code?: unknown } | undefined)?.code;
  if (code === "ERR_WORKER_OUT_OF_MEMORY") {
    return `The worker thread could not start: it ran out of memory while loading (${detail}). resourceLimits leave too little heap for lifeline's worker; raise maxOldGenerationSizeMb.`;
  }
  if (workerError === undefined) return `The worker thread could not start: ${detail}.`;
  return `The worker thread could not start: its entry failed to load (${detail}). Check that the worker entry exists and its imports resolve.`;
}

/** What a link knew of its worker when it died. */
interface LinkState {
  /** The host closed the link. */
  closing: boolean;
  /** The worker said `hello`: it served. */
  started: boolean;
  /** Why lifeline terminated the worker as hung, when it did. */
  hung: string | undefined;
}

/**
 * The typed error a dead link's calls reject with, and the cause it reports (`start` for a worker
 * that never served): {@link WorkerStartError} if the worker never served, else
 * {@link WorkerExitedError} with the cause; a plain exit when the host closed the link. Once
 * lifeline has terminated a worker as hung, that is its cause, whatever the pool reports.
 */
export function linkDeath(
  link: LinkState,
  cause: WorkerExitCause,
  detail: string,
  workerError: unknown,
): { error: WorkerExitedError | WorkerStartError; cause: WorkerExitCause | "start" } {
  const finalCause = link.hung === undefined ? cause : "hung";
  const finalDetail = link.hung ?? detail;
  if (link.closing) return { error: new WorkerExitedError("The session host was closed.", "exit"), cause: "exit" };
  if (!link.started) {
    return { error: new WorkerStartError(startMessage(finalDetail, workerError), workerError), cause: "start" };
  }
  return {
    error: new WorkerExitedError(exitMessage(finalCause, finalDetail), finalCause, workerError),
    cause: finalCause,
  };
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
