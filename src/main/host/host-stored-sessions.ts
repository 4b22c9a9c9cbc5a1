/**
 * What a host does with its stored sessions without opening them itself: list them, export one as
 * a pi session file or an HTML page, fork or clone one (session-forks.ts). The checks of each
 * call's arguments are here; `SessionHost` checks that it is open and delegates.
 */
import { basename, resolve } from "node:path";
import { LifelineError } from "../../shared/errors.js";
import { forkArgumentsSchema, htmlPathSchema, listSessionsOptionsSchema, validate } from "../config/option-schemas.js";
import type { AgentSession } from "../session/agent-session.js";
import { writeSessionHtml } from "../session/commands/session-html.js";
import type { ForkMessage } from "../session-files/session-fork.js";
import type { SessionInfo } from "../session-files/session-store.js";
import type { HostParts } from "./host-parts.js";
import { type ForkHost, type ForkOptions, type ForkResult, forkSession, sessionForkMessages } from "./session-forks.js";

/** One host's stored-session calls; each is documented on the `SessionHost` method of its name. */
export class HostStoredSessions {
  readonly #parts: HostParts;
  readonly #forks: ForkHost;

  /** `resume` opens a stored session as `SessionHost.resumeSession` does. */
  constructor(parts: HostParts, resume: (path: string) => Promise<AgentSession>) {
    this.#parts = parts;
    this.#forks = {
      store: (what) => parts.files.requireStore(undefined, what),
      cwd: () => parts.config.cwd(),
      resume,
    };
  }

  async list(options: { cwd?: string; allDirectories?: boolean }): Promise<SessionInfo[]> {
    validate(listSessionsOptionsSchema, options, "listSessions options");
    await this.#parts.fleet.connection();
    const cwd = options.allDirectories === true ? undefined : (options.cwd ?? this.#parts.config.cwd());
    return this.#parts.files.requireStore(undefined, "listSessions()").list(cwd);
  }

  async export(ref: string): Promise<{ text: string; warnings: string[] }> {
    if (typeof ref !== "string" || ref === "") {
      throw new LifelineError("ERR_INVALID_OPTIONS", "exportSession() needs a session file path or id.");
    }
    await this.#parts.fleet.connection();
    return this.#parts.files.exportSession(ref, this.#parts.config.cwd());
  }

  async fork(session: AgentSession, entryId: string, options: ForkOptions): Promise<ForkResult> {
    validate(forkArgumentsSchema, { entryId, ...options }, "forkSession() arguments");
    return forkSession(this.#forks, session, entryId, options.position ?? "before");
  }

  async clone(session: AgentSession): Promise<AgentSession> {
    return (await forkSession(this.#forks, session, undefined, "at")).session;
  }

  forkMessages(session: AgentSession): Promise<ForkMessage[]> {
    return sessionForkMessages(this.#forks, session);
  }

  async exportHtml(session: AgentSession, outputPath: string | undefined): Promise<string> {
    validate(htmlPathSchema, outputPath, "exportHtml() outputPath", "outputPath");
    const file = session.sessionFile;
    const name = file === undefined ? session.id : basename(file, ".jsonl");
    const path = resolve(this.#parts.config.cwd(), outputPath ?? `lifeline-session-${name}.html`);
    const { id, sessionName, model, history, stats } = session;
    await writeSessionHtml({ id, sessionFile: file, sessionName, model, history, stats }, path);
    return path;
  }
}
