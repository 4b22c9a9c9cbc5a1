/**
 * Runs the `lifeline` command line: parses it with the command tree (program.ts), runs the
 * command, and resolves to the exit code. Commander's own refusals (an unknown option, a missing
 * argument) exit 2, as every usage error does; `--help` and `--version` exit 0.
 *
 * stdout may be closed under the command (`lifeline sessions | head -1`): the first EPIPE ends
 * the writes quietly, and the command goes on to its normal end (a session file is still
 * closed), since what it cannot print is what the reader no longer wanted.
 */
import { CommanderError } from "commander";
import type { CliContext } from "./cli-context.js";
import { lifelineProgram } from "./program.js";

/** Parses `argv` (without node and script) and runs the command; resolves to the exit code. */
export async function runCli(argv: readonly string[], context: CliContext): Promise<number> {
  let exitCode = 0;
  const program = lifelineProgram(context, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync([...argv], { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    throw error;
  }
  return exitCode;
}

/**
 * Makes writes to a closed stdout (EPIPE) end quietly: further writes are dropped instead of
 * crashing the process with an unhandled 'error' event.
 */
export function quietOnClosedStdout(stdout: NodeJS.WriteStream = process.stdout): void {
  stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    stdout.write = ((_chunk: unknown, encodingOrCallback?: unknown, callback?: unknown) => {
      const done = typeof encodingOrCallback === "function" ? encodingOrCallback : callback;
      if (typeof done === "function") (done as () => void)();
      return true;
    }) as typeof stdout.write;
  });
}
