/**
 * The shell commands running in one worker, at most one per session (pi runs one at a time per
 * session too: its `abortBash` reaches only the latest). Serves the `startBash` / `awaitBash` /
 * `abortBash` calls of the worker protocol; a session closed, or the worker shut down, kills its
 * command.
 */
import type { BashResult } from "../../shared/bash/bash-message.js";
import { LifelineError } from "../../shared/errors.js";
import { type RunningBash, startBash } from "./run-bash.js";

/** See the module comment. One per worker, owned by its serve loop. */
export class BashRuns {
  /** Each session's last command, kept until `wait` collects its result (a quick one ends before the call arrives). */
  readonly #running = new Map<string, RunningBash & { over: boolean }>();

  /**
   * Starts `command` for `sessionId` in `cwd`; returns the shell's pid (its process group).
   * @throws LifelineError ERR_SESSION_BUSY while the session's last command
   *   runs; ERR_INVALID_OPTIONS when it cannot start.
   */
  start(sessionId: string, command: string, cwd: string): { pid: number } {
    if (this.#running.get(sessionId)?.over === false) {
      throw new LifelineError(
        "ERR_SESSION_BUSY",
        `Session ${sessionId} is already running a bash command; wait for its result or abort it with abortBash().`,
      );
    }
    const running = { ...startBash(command, cwd), over: false };
    this.#running.set(sessionId, running);
    void running.done.then(() => {
      running.over = true;
    });
    return { pid: running.pid };
  }

  /**
   * The result of the session's running command, once it is over.
   * @throws LifelineError ERR_INVALID_OPTIONS when the session runs none.
   */
  wait(sessionId: string): Promise<BashResult> {
    const running = this.#running.get(sessionId);
    if (running === undefined) {
      throw new LifelineError("ERR_INVALID_OPTIONS", `Session ${sessionId} runs no bash command.`);
    }
    return running.done.finally(() => {
      if (this.#running.get(sessionId) === running) this.#running.delete(sessionId);
    });
  }

  /** Kills the session's running command; returns whether there was one. */
  abort(sessionId: string): boolean {
    const running = this.#running.get(sessionId);
    if (running === undefined || running.over) return false;
    running.cancel();
    return true;
  }

  /** Kills every running command (the worker shuts down). */
  abortAll(): void {
    for (const running of this.#running.values()) running.cancel();
  }
}
