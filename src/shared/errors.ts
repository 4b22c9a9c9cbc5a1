/**
 * Typed errors with stable codes, and their plain-data form for crossing a thread.
 *
 * Structured clone drops own fields of Error subclasses and comlink keeps only
 * `{name, message, stack}` (fact F4 in docs/architecture.md), so errors never cross as Error objects:
 * they cross as {@link WireError} and are rebuilt with {@link fromWireError}.
 */

/** Every code a lifeline error can carry. Tests and callers match on these, never on text. */
export type ErrorCode =
  | "ERR_INVALID_SETTINGS"
  | "ERR_INVALID_OPTIONS"
  | "ERR_UNKNOWN_MODEL"
  | "ERR_INVALID_MODELS"
  | "ERR_MISSING_API_KEY"
  | "ERR_AUTH_FILE"
  | "ERR_SESSION_BUSY"
  | "ERR_SESSION_DISPOSED"
  | "ERR_HOST_CLOSED"
  | "ERR_SESSION_LOCKED"
  | "ERR_SESSION_NOT_FOUND"
  | "ERR_SESSION_FILE"
  | "ERR_WORKER_EXITED"
  | "ERR_WORKER_START"
  | "ERR_SESSION_CRASHED"
  | "ERR_WORKER_MODULE"
  | "ERR_CALL_TIMEOUT"
  | "ERR_PROTOCOL"
  | "ERR_RUN_FAILED"
  | "ERR_ABORTED"
  | "ERR_COMPACTION_FAILED"
  | "ERR_RPC_TIMEOUT"
  | "ERR_RPC_EXITED"
  | "ERR_RPC_FAILED"
  | "ERR_RPC_NOT_STARTED"
  | "ERR_LOAD_FAILED"
  | "ERR_LOAD_REPORT"
  | "ERR_LOAD_FLEET_BUSY"
  | "ERR_LOAD_FLEET_GENERATORS"
  | "ERR_LOAD_FLEET_MISMATCH"
  | "ERR_EXTENSION_LOAD"
  | "ERR_EXTENSION_UNSUPPORTED"
  | "ERR_FLEET_UNAVAILABLE"
  | "ERR_FLEET_AUTH"
  | "ERR_FLEET_JOB_FAILED"
  | "ERR_FLEET_TIMEOUT"
  | "ERR_TELEMETRY_UNAVAILABLE";

/** An error as plain data: what crosses a thread or goes into an event (SPEC X6). */
export interface WireError {
  code: ErrorCode;
  message: string;
  /** HTTP status of the failed request, when there was one. */
  status?: number;
  /** Server's retry hint in milliseconds, when it gave one. */
  retryAfterMs?: number;
  /** How a worker ended, for ERR_WORKER_EXITED and ERR_SESSION_CRASHED (see {@link WorkerExitCause}). */
  exitCause?: WorkerExitCause;
  /** The message in the CLI's words, where its advice differs (a flag instead of an option). */
  cliMessage?: string;
  stack?: string;
}

/**
 * How a worker ended (SPEC X5, X8):
 * - `oom`: it ran out of heap under the host's `resourceLimits`;
 * - `exit`: it exited on its own (`process.exit()` in a tool, or its serve loop ended);
 * - `crash`: an exception nothing caught;
 * - `hung`: its event loop stopped answering and the host terminated it (the watchdog, or a call
 *   or an abort it never acknowledged).
 */
export type WorkerExitCause = "oom" | "exit" | "crash" | "hung";

/** What a {@link LifelineError} carries besides its code and message. */
export interface LifelineErrorOptions {
  cause?: unknown;
  status?: number;
  retryAfterMs?: number;
  /**
   * The message as the `lifeline` command says it, where the advice differs from the library's:
   * a flag or a command where the library names an option or a method ("pass --api-key" rather
   * than "pass apiKey to createSession"). The CLI prints it instead of `message`.
   */
  cliMessage?: string;
}

/** Base class of every error lifeline throws. `code` is stable; `message` says what to do. */
export class LifelineError extends Error {
  readonly code: ErrorCode;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  /** See {@link LifelineErrorOptions.cliMessage}; undefined where `message` serves the CLI too. */
  readonly cliMessage: string | undefined;

  constructor(code: ErrorCode, message: string, options: LifelineErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "LifelineError";
    this.code = code;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.cliMessage = options.cliMessage;
  }
}

/** Settings or options failed validation; the message names the key, the value and what is allowed. */
export class InvalidSettingsError extends LifelineError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("ERR_INVALID_SETTINGS", message, options);
    this.name = "InvalidSettingsError";
  }
}

/** A prompt arrived while the session was streaming or inside a retry chain (SPEC B3). */
export class SessionBusyError extends LifelineError {
  constructor(message: string) {
    super("ERR_SESSION_BUSY", message);
    this.name = "SessionBusyError";
  }
}

/**
 * The worker serving a session exited, crashed, ran out of memory or was terminated as hung
 * (SPEC X5, X8). `exitCause` says which; `cause` is what the thread reported (its uncaught error,
 * Node's out-of-memory error), when it reported anything.
 */
export class WorkerExitedError extends LifelineError {
  readonly exitCause: WorkerExitCause;

  constructor(message: string, exitCause: WorkerExitCause, workerError?: unknown) {
    super("ERR_WORKER_EXITED", message, workerError === undefined ? {} : { cause: workerError });
    this.name = "WorkerExitedError";
    this.exitCause = exitCause;
  }
}

/**
 * SPEC X7: the session kept killing its worker (more than `supervision.maxRestarts` restarts within
 * `supervision.windowMs`, or it could not be restored), so it was given up and closed.
 * `exitCause` is how its last worker ended; `cause` is that worker's {@link WorkerExitedError}, or,
 * when the session could not be opened again, the error that stopped the restore.
 */
export class SessionCrashedError extends LifelineError {
  readonly exitCause: WorkerExitCause;

  constructor(message: string, exitCause: WorkerExitCause, options: { cause?: unknown } = {}) {
    super("ERR_SESSION_CRASHED", message, options);
    this.name = "SessionCrashedError";
    this.exitCause = exitCause;
  }
}

/**
 * A worker thread could not start at all: its entry failed to load, or it ran out of memory (or
 * stopped answering) before serving anything. The message names the cause; `cause` is the
 * thread's own error when there was one.
 */
export class WorkerStartError extends LifelineError {
  constructor(message: string, workerError?: unknown) {
    super("ERR_WORKER_START", message, workerError === undefined ? {} : { cause: workerError });
    this.name = "WorkerStartError";
  }
}

/**
 * An extension could not be loaded: its path does not exist or holds no extension, its import
 * threw, it exports no factory, its factory threw (an unsupported API member included), or a tool
 * it registered is malformed. `extensionPath` is the path as the user gave it.
 */
export class ExtensionLoadError extends LifelineError {
  readonly extensionPath: string;

  constructor(extensionPath: string, message: string, options: { cause?: unknown } = {}) {
    super("ERR_EXTENSION_LOAD", message, options);
    this.name = "ExtensionLoadError";
    this.extensionPath = extensionPath;
  }
}

/**
 * An extension used a member of pi's extension API that lifeline does not provide (see
 * docs/extensions.md), or registered something outside its factory call. Thrown by the member.
 */
export class ExtensionUnsupportedError extends LifelineError {
  /** The member, as `pi.registerCommand` or `pi.on("tool_call")`. */
  readonly member: string;

  constructor(member: string, message: string) {
    super("ERR_EXTENSION_UNSUPPORTED", message);
    this.name = "ExtensionUnsupportedError";
    this.member = member;
  }
}

/**
 * Fleet mode could not reach its Redis: at start (the URL, with any password hidden, and what was
 * tried), or a fleet call that needs Redis while it is down. Nothing was lost: see docs/fleet.md.
 */
export class FleetUnavailableError extends LifelineError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("ERR_FLEET_UNAVAILABLE", message, options);
    this.name = "FleetUnavailableError";
  }
}

/**
 * The fleet's Redis answered but refused the credentials of `fleet.redis` (a wrong password or
 * user, or none where Redis needs one). The message names the URL with the password hidden and
 * Redis's own refusal; nothing is retried, since waiting does not mend a wrong password.
 */
export class FleetAuthError extends LifelineError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("ERR_FLEET_AUTH", message, options);
    this.name = "FleetAuthError";
  }
}

/** Converts any thrown value to plain data. Keeps the code of a LifelineError; others become `fallback`. */
export function toWireError(error: unknown, fallback: ErrorCode = "ERR_RUN_FAILED"): WireError {
  if (error instanceof LifelineError) {
    const wire: WireError = { code: error.code, message: error.message };
    if (error.status !== undefined) wire.status = error.status;
    if (error.retryAfterMs !== undefined) wire.retryAfterMs = error.retryAfterMs;
    if (error instanceof WorkerExitedError || error instanceof SessionCrashedError) wire.exitCause = error.exitCause;
    if (error.cliMessage !== undefined) wire.cliMessage = error.cliMessage;
    if (error.stack !== undefined) wire.stack = error.stack;
    return wire;
  }
  if (error instanceof Error) {
    const wire: WireError = { code: fallback, message: error.message };
    if (error.stack !== undefined) wire.stack = error.stack;
    return wire;
  }
  return { code: fallback, message: String(error) };
}

/** Rebuilds a typed error from its wire form, choosing the subclass by code. */
export function fromWireError(wire: WireError): LifelineError {
  let error: LifelineError;
  switch (wire.code) {
    case "ERR_INVALID_SETTINGS":
      error = new InvalidSettingsError(wire.message);
      break;
    case "ERR_SESSION_BUSY":
      error = new SessionBusyError(wire.message);
      break;
    case "ERR_WORKER_EXITED":
      error = new WorkerExitedError(wire.message, wire.exitCause ?? "exit");
      break;
    case "ERR_WORKER_START":
      error = new WorkerStartError(wire.message);
      break;
    case "ERR_SESSION_CRASHED":
      error = new SessionCrashedError(wire.message, wire.exitCause ?? "crash");
      break;
    default: {
      const options: LifelineErrorOptions = {};
      if (wire.status !== undefined) options.status = wire.status;
      if (wire.retryAfterMs !== undefined) options.retryAfterMs = wire.retryAfterMs;
      if (wire.cliMessage !== undefined) options.cliMessage = wire.cliMessage;
      error = new LifelineError(wire.code, wire.message, options);
    }
  }
  if (wire.stack !== undefined) error.stack = wire.stack;
  return error;
}
