/**
 * How the CLI (`-p`, `--mode rpc`, interactive) chooses its session file, as pi does: persistent
 * by default under `$LIFELINE_DIR/sessions/<encoded cwd>/`; `--no-session` writes nothing;
 * `--session-dir` (or the `sessionDir` setting) puts files directly in a directory; the
 * `sessions.fsync` setting chooses the fsync policy; `-c` resumes
 * the cwd's most recent session (a new one when there is none); `--session <path|id>` opens one.
 * The thinking level, as pi's CLI takes it: `--thinking <level>`, or a `:<level>` suffix on the
 * model (`provider/id:high`); the flag wins over the suffix, and either wins over a resumed
 * session's stored level.
 */
import { LifelineError } from "../../shared/errors.js";
import { parseSettings } from "../../shared/settings.js";
import { isThinkingLevel, THINKING_LEVELS, type ThinkingLevel } from "../../shared/thinking.js";
import { loadSettingsFiles, resolveLifelineDir } from "../config/settings-store.js";
import type { AgentSession } from "../session/agent-session.js";
import type { SessionsOptions } from "../session-files/session-persistence.js";
import type { ResumeOptions } from "./host-options.js";
import type { SessionHost } from "./session-host.js";

/** The CLI's session flags. `session` is commander's: a ref, `false` for --no-session, else undefined. */
export interface CliSessionFlags {
  session?: string | boolean | undefined;
  sessionDir?: string | undefined;
  continue?: boolean | undefined;
  /** -r/--resume: pick one of the cwd's sessions (interactive mode only; see runInteractive). */
  resume?: boolean | undefined;
  /** The user named a model (--provider/--model); otherwise a resumed session keeps the file's. */
  explicitModel?: boolean | undefined;
  /** --thinking, or the model's `:<level>` suffix (see {@link cliThinking}). */
  thinkingLevel?: ThinkingLevel | undefined;
}

/**
 * Splits pi's `:<level>` suffix off the CLI's model (`"provider/id:high"`) and applies
 * `--thinking` over it (pi's precedence). A suffix that is not a level stays part of the id (ids
 * may hold colons); the model then fails to resolve with a hint (see {@link openCliSession}).
 * @throws ERR_INVALID_OPTIONS when `thinking` is not a level, naming the levels.
 */
export function cliThinking(
  model: string,
  thinking: string | undefined,
): { model: string; thinkingLevel?: ThinkingLevel } {
  if (thinking !== undefined && !isThinkingLevel(thinking)) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `Invalid thinking level "${thinking}" (--thinking). Valid values: ${THINKING_LEVELS.join(", ")}.`,
    );
  }
  const colon = model.lastIndexOf(":");
  const suffix = colon > model.indexOf("/") ? model.slice(colon + 1) : undefined;
  const split = isThinkingLevel(suffix) ? { model: model.slice(0, colon), level: suffix } : { model };
  const level = thinking ?? split.level;
  return level === undefined ? { model: split.model } : { model: split.model, thinkingLevel: level };
}

/**
 * Why -r cannot run with these flags, or undefined when it can: the picker needs the terminal
 * (not -p, not RPC) and a session store (not --no-session), and it is itself the choice of session.
 */
export function resumeUsageError(
  opts: {
    session?: string | boolean | undefined;
    continue?: boolean | undefined;
    print?: string | undefined;
    mode?: string | undefined;
  },
  interactive: boolean,
): string | undefined {
  const alternatives = "use -c to continue this directory's most recent session, or --session <path|id> to open one";
  if (opts.session === false) {
    return "-r/--resume opens a stored session, and --no-session turns sessions off; pick one.";
  }
  if (typeof opts.session === "string" || opts.continue === true) {
    return "-r/--resume picks a session itself; drop it when you name one with --session or -c.";
  }
  if (opts.print !== undefined) {
    return `-r/--resume picks a session on the terminal and cannot run with -p; ${alternatives}.`;
  }
  if (opts.mode === "rpc") {
    return `-r/--resume picks a session on the terminal and cannot run in RPC mode; ${alternatives}.`;
  }
  if (!interactive) return `-r/--resume needs a terminal on stdin and stdout to show its picker; ${alternatives}.`;
  return undefined;
}

/**
 * The host's `sessions` option for the CLI: `false` with --no-session, else the file store in
 * `--session-dir`, the `sessionDir` setting, or the default place.
 * @throws ERR_INVALID_OPTIONS when flags contradict each other; ERR_INVALID_SETTINGS for bad settings files.
 */
export async function cliSessionsOption(flags: CliSessionFlags): Promise<SessionsOptions | false> {
  if (flags.session === false) {
    if (flags.continue === true) {
      throw new LifelineError("ERR_INVALID_OPTIONS", "--no-session and --continue contradict each other; pick one.");
    }
    return false;
  }
  if (typeof flags.session === "string" && flags.continue === true) {
    throw new LifelineError("ERR_INVALID_OPTIONS", "--session and --continue both choose a session; pick one.");
  }
  const settings = parseSettings(await loadSettingsFiles(resolveLifelineDir(), process.cwd()), "the settings files");
  const dir = flags.sessionDir ?? settings.sessionDir;
  const fsync = settings.sessions?.fsync;
  return { ...(dir === undefined ? {} : { dir }), ...(fsync === undefined ? {} : { fsync }) };
}

/**
 * Opens the CLI's session on `host` (created with {@link cliSessionsOption}'s result): resumed for
 * -c (when the cwd has a session) or --session, else new.
 * @throws what createSession and resumeSession throw (ERR_SESSION_NOT_FOUND, ERR_SESSION_LOCKED, ...).
 */
export async function openCliSession(
  host: SessionHost,
  flags: CliSessionFlags,
  given: ResumeOptions,
): Promise<AgentSession> {
  const options = flags.thinkingLevel === undefined ? given : { ...given, thinkingLevel: flags.thinkingLevel };
  const { model: _default, ...withoutModel } = options;
  const resumeOptions = flags.explicitModel === true ? options : withoutModel;
  try {
    if (typeof flags.session === "string") return await host.resumeSession(flags.session, resumeOptions);
    if (flags.continue === true) {
      const recent = (await host.listSessions())[0];
      if (recent !== undefined) return await host.resumeSession(recent.path, resumeOptions);
    }
    return await host.createSession(options);
  } catch (error) {
    throw withSuffixHint(error, options.model);
  }
}

/** An unknown model whose id ends in `:<word>`: the word may have been meant as a thinking level. */
function withSuffixHint(error: unknown, model: ResumeOptions["model"]): unknown {
  if (!(error instanceof LifelineError) || error.code !== "ERR_UNKNOWN_MODEL" || typeof model !== "string") {
    return error;
  }
  const colon = model.lastIndexOf(":");
  if (colon <= model.indexOf("/")) return error;
  return new LifelineError(
    "ERR_UNKNOWN_MODEL",
    `${error.message} If ":${model.slice(colon + 1)}" was meant as a thinking level, use one of: ${THINKING_LEVELS.join(", ")}.`,
    { cause: error },
  );
}
