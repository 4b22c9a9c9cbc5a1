/**
 * The session group, pi's session flags: where the modes (`-p`, `--mode rpc`, interactive) keep
 * their session and which one they open. Persistent by default under
 * `$LIFELINE_DIR/sessions/<encoded cwd>/`; `--no-session` writes nothing; `--session-dir` (or the
 * `sessionDir` setting) puts files directly in a directory; the `sessions.fsync` setting chooses
 * the fsync policy; `-c` resumes the cwd's most recent session (a new one when there is none);
 * `--session <path|id>` opens one; `-r` picks one on the terminal.
 *
 * `--session-dir` alone is the stored-sessions group, which `sessions` and `export` take too.
 */
import type { SessionsOptions } from "../../session-files/session-persistence.js";
import type { CliContext } from "../cli-context.js";
import { switchFlag, valueFlag } from "../flag.js";
import { nonBlank, usage } from "../flag-values.js";

/** Where sessions are stored: taken by every command that reads or writes them. */
export const storedSessionFlags = {
  sessionDir: valueFlag(
    "--session-dir <dir>",
    "keep session files directly in this directory, in fleet mode too (over the sessionDir setting)",
    nonBlank,
    { defaultText: "$LIFELINE_DIR/sessions/<encoded cwd>/, or the fleet's Redis in fleet mode" },
  ),
} as const;

/** Which session a mode opens. */
export const sessionFlags = {
  continue: switchFlag("-c, --continue", "continue the most recent session of this directory"),
  session: valueFlag(
    "--session <path|id>",
    "open a session file, or a stored session by id (a unique prefix will do)",
    nonBlank,
  ),
  noSession: switchFlag("--no-session", "write no session file (ephemeral)"),
  resume: switchFlag("-r, --resume", "pick one of this directory's sessions on the terminal, then continue it"),
  ...storedSessionFlags,
} as const;

/** The session flags' values. */
export interface SessionFlagValues {
  continue?: boolean | undefined;
  session?: string | undefined;
  noSession?: boolean | undefined;
  resume?: boolean | undefined;
  sessionDir?: string | undefined;
}

/**
 * Why -r cannot run with these flags, or undefined when it can: the picker needs the terminal
 * (not -p, not RPC) and a session store (not --no-session), and it is itself the choice of session.
 */
export function resumeUsageError(
  values: SessionFlagValues,
  mode: { print: boolean; rpc: boolean; terminal: boolean },
): string | undefined {
  const alternatives = "use -c to continue this directory's most recent session, or --session <path|id> to open one";
  if (values.noSession === true) {
    return "-r/--resume opens a stored session, and --no-session turns sessions off; pick one.";
  }
  if (values.session !== undefined || values.continue === true) {
    return "-r/--resume picks a session itself; drop it when you name one with --session or -c.";
  }
  if (mode.print) return `-r/--resume picks a session on the terminal and cannot run with -p; ${alternatives}.`;
  if (mode.rpc) return `-r/--resume picks a session on the terminal and cannot run in RPC mode; ${alternatives}.`;
  if (!mode.terminal) {
    return `-r/--resume needs a terminal on stdin and stdout to show its picker; ${alternatives}.`;
  }
  return undefined;
}

/**
 * The host's `sessions` option for the modes: `false` with --no-session, else the file store in
 * `--session-dir`, the `sessionDir` setting, or the default place (the fleet's Redis in fleet
 * mode, unless a directory is named).
 * @throws ERR_INVALID_OPTIONS when flags contradict each other; ERR_INVALID_SETTINGS for bad settings files.
 */
export async function sessionsOption(values: SessionFlagValues, context: CliContext): Promise<SessionsOptions | false> {
  if (values.noSession === true) {
    if (values.continue === true) usage("--no-session and --continue contradict each other; pick one.");
    if (values.session !== undefined) usage("--no-session and --session contradict each other; pick one.");
    if (values.sessionDir !== undefined) usage("--no-session writes no session; leave --session-dir out.");
    return false;
  }
  if (values.session !== undefined && values.continue === true) {
    usage("--session and --continue both choose a session; pick one.");
  }
  // Each file was checked as a layer when read; the merged whole is the host's to check.
  // Imported here, not at the top: the settings files' schema (zod) loads for a command that runs, not for --help.
  const { loadSettingsFiles } = await import("../../config/settings-store.js");
  const settings = await loadSettingsFiles(context.lifelineDir, context.cwd);
  const dir = values.sessionDir ?? settings.sessionDir;
  const fsync = settings.sessions?.fsync;
  return { ...(dir === undefined ? {} : { dir }), ...(fsync === undefined ? {} : { fsync }) };
}
