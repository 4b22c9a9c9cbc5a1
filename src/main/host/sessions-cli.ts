/**
 * How the CLI's modes (`-p`, `--mode rpc`, interactive) open their session once the session
 * flags are resolved (cli/groups/session-flags.ts): `-c` resumes the cwd's most recent session
 * (a new one when there is none), `--session <path|id>` opens one, else a new one. The thinking
 * level the flags give (`--thinking`, or the model's `:<level>` suffix) wins over a resumed
 * session's stored level.
 */
import { LifelineError } from "../../shared/errors.js";
import { THINKING_LEVELS, type ThinkingLevel } from "../../shared/thinking.js";
import type { AgentSession } from "../session/agent-session.js";
import type { ResumeOptions } from "./host-options.js";
import type { SessionHost } from "./session-host.js";

/** What the CLI's session flags chose. */
export interface CliSessionFlags {
  /** `--session <path|id>`. */
  session?: string | undefined;
  /** `-c`. */
  continue?: boolean | undefined;
  /** -r/--resume: pick one of the cwd's sessions (interactive mode only; see runInteractive). */
  resume?: boolean | undefined;
  /** The user named a model (--provider/--model); otherwise a resumed session keeps the file's. */
  explicitModel?: boolean | undefined;
  /** --thinking, or the model's `:<level>` suffix. */
  thinkingLevel?: ThinkingLevel | undefined;
}

/**
 * Opens the CLI's session on `host` (its `sessions` from the session flags): resumed for
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
