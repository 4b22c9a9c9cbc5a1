/**
 * Runs one shell command for a session, in its worker: `bash -c <command>` (`sh` where there is no
 * bash) in the session's working directory, stdout and stderr into one bounded {@link BashOutput}.
 *
 * The shell leads a process group of its own, so cancelling kills the whole tree (a pipeline, a
 * `sleep` the shell started) with one SIGKILL to the group, as pi does. The result settles once
 * the shell has exited and its pipes have closed, or shortly after the exit when a background
 * process it started still holds them (that process is not waited for).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import type { BashResult } from "../../shared/bash/bash-message.js";
import { LifelineError } from "../../shared/errors.js";
import { BashOutput } from "./bash-output.js";

/** How long pipes may stay open after the shell exited (held by something it left running). */
const PIPE_GRACE_MS = 100;

/** A command started by {@link startBash}. */
export interface RunningBash {
  /** The shell's pid, which is also its process group's id. */
  readonly pid: number;
  /** Settles with the result once the command is over; never rejects. */
  readonly done: Promise<BashResult>;
  /** Kills the command's process group; `done` then settles with `cancelled: true`. Idempotent. */
  cancel(): void;
}

/**
 * Starts `command`. @throws LifelineError ERR_INVALID_OPTIONS when `cwd` does not exist or no
 * shell could be started.
 */
export function startBash(command: string, cwd: string): RunningBash {
  if (!existsSync(cwd)) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `The session's working directory ${cwd} does not exist; bash cannot run there.`,
    );
  }
  const shell = existsSync("/bin/bash") ? "/bin/bash" : "sh";
  const child = spawn(shell, ["-c", command], { cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const pid = child.pid;
  if (pid === undefined) {
    child.on("error", () => {});
    throw new LifelineError("ERR_INVALID_OPTIONS", `Could not start ${shell} for the command.`);
  }
  const output = new BashOutput();
  child.stdout?.on("data", (chunk: Buffer) => output.push(chunk));
  child.stderr?.on("data", (chunk: Buffer) => output.push(chunk));
  let cancelled = false;
  const cancel = () => {
    if (cancelled) return;
    cancelled = true;
    killGroup(pid);
  };
  const done = exited(child).then(async (code) => {
    const { output: text, truncated, fullOutputPath } = await output.finish();
    const result: BashResult = { output: text, exitCode: cancelled ? undefined : code, cancelled, truncated };
    if (fullOutputPath !== undefined) result.fullOutputPath = fullOutputPath;
    return result;
  });
  return { pid, done, cancel };
}

/** SIGKILL to the process group led by `pid`; to `pid` alone if the group is gone. Never throws. */
function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

/**
 * The shell's exit code (undefined when a signal ended it), once its pipes closed, or
 * {@link PIPE_GRACE_MS} after it exited if something it started keeps them open.
 */
function exited(child: ChildProcess): Promise<number | undefined> {
  return new Promise((resolve) => {
    let grace: NodeJS.Timeout | undefined;
    const finish = (code: number | null) => {
      clearTimeout(grace);
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve(code ?? undefined);
    };
    child.once("close", finish);
    child.once("exit", (code) => {
      grace = setTimeout(() => {
        child.removeListener("close", finish);
        finish(code);
      }, PIPE_GRACE_MS);
    });
    child.once("error", () => finish(null));
  });
}
