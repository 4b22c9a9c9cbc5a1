/**
 * Where lifeline keeps its user files, in a module of its own without the settings' schema: the
 * CLI needs it before it knows which command runs, and `lifeline --help` loads no zod.
 */
import { homedir } from "node:os";
import { join } from "node:path";

/** The user directory: `$LIFELINE_DIR`, or `~/.lifeline`. */
export function resolveLifelineDir(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.LIFELINE_DIR;
  return fromEnv !== undefined && fromEnv !== "" ? fromEnv : join(homedir(), ".lifeline");
}
