/**
 * What a command's run is given besides its flags: where it runs (the working directory, the
 * user directory, whether it has a terminal) and the runtime that carries out what the flags
 * resolved to. (Environment variables that stand in for flags are read by commander from
 * `process.env`.) The real CLI passes the process's own (main.ts); the flag table
 * test passes a runtime that records what each library call would have received.
 */
import type { CliRuntime } from "./runtime.js";

/** The process a command runs in, and the runtime its request goes to. */
export interface CliContext {
  /** The working directory: relative paths, the project's settings and the sessions' directory. */
  cwd: string;
  /** `$LIFELINE_DIR` or `~/.lifeline`: settings.json, models.json, auth.json, sessions. */
  lifelineDir: string;
  /** stdin and stdout are both terminals (the interactive mode's condition). */
  terminal: boolean;
  /** lifeline's version, for `--version`. */
  version: string;
  runtime: CliRuntime;
}
