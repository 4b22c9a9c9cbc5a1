/**
 * Where a single-use `RpcClient` is in its life, and what a call made now rejects with:
 * "new" → "running" → "exited" (the child died on its own) or "stopped"; "new" → "stopped".
 */
import { LifelineError } from "../../shared/errors.js";

/** The phases of an `RpcClient`. */
export type Phase = "new" | "running" | "exited" | "stopped";

/** The phase of one `RpcClient` (or `RpcHostClient`), with the error each phase answers calls with. */
export class RpcClientPhase {
  readonly #className: string;
  #phase: Phase = "new";
  /** Set once the child is gone: the error every later call rejects with (unless stopped). */
  #exitError: LifelineError | undefined;

  /** @param className the client class that calls name in errors */
  constructor(className = "RpcClient") {
    this.#className = className;
  }

  get value(): Phase {
    return this.#phase;
  }

  /** The child was spawned. */
  run(): void {
    this.#phase = "running";
  }

  /** `stop()` was called: every later call is refused as not started. */
  stop(): void {
    this.#phase = "stopped";
  }

  /** The child is gone; if it went on its own while running, every later call rejects with `error`. */
  exit(error: LifelineError): void {
    if (this.#phase === "running") {
      this.#phase = "exited";
      this.#exitError = error;
    }
  }

  /** Why a call cannot be made now, or undefined when it can. */
  blocked(what: string): LifelineError | undefined {
    switch (this.#phase) {
      case "running":
        return undefined;
      case "exited":
        return this.#exitError;
      case "new":
      case "stopped":
        return this.notStarted(what);
      default: {
        const unknown: never = this.#phase;
        throw new Error(`unknown RpcClient phase ${String(unknown)}`);
      }
    }
  }

  /** @throws LifelineError the error of {@link blocked}, when there is one. */
  assertUsable(what: string): void {
    const blocked = this.blocked(what);
    if (blocked !== undefined) throw blocked;
  }

  /** `ERR_RPC_NOT_STARTED` for `<client>.<what>()`, saying whether start() or a new client is the fix. */
  notStarted(what: string): LifelineError {
    const name = this.#className;
    return this.#phase === "new"
      ? new LifelineError("ERR_RPC_NOT_STARTED", `${name}.${what}() was called before start(); await start() first.`)
      : new LifelineError(
          "ERR_RPC_NOT_STARTED",
          `${name}.${what}() was called after stop() (or a failed start()); create a new ${name} to run another child.`,
        );
  }
}
