/**
 * What a host does with its stored sessions without opening them itself: list them, export one as
 * a pi session file or an HTML page, fork or clone one (session-forks.ts), delete one or prune the
 * old ones. The checks of each
 * call's arguments are here; `SessionHost` checks that it is open and delegates.
 */
import { basename, resolve } from "node:path";
import { LifelineError } from "../../shared/errors.js";
import {
  forkArgumentsSchema,
  htmlPathSchema,
  listSessionsOptionsSchema,
  pruneSessionsOptionsSchema,
  validate,
} from "../config/option-schemas.js";
import type { AgentSession } from "../session/agent-session.js";
import { writeSessionHtml } from "../session/commands/session-html.js";
import { RedisSessionStore } from "../session-files/redis-session-store.js";
import type { ForkMessage } from "../session-files/session-fork.js";
import type { SessionInfo, SessionStore } from "../session-files/session-store.js";
import type { HostParts } from "./host-parts.js";
import type { PruneOptions, PruneResult } from "./prune-options.js";
import { type ForkHost, type ForkOptions, type ForkResult, forkSession, sessionForkMessages } from "./session-forks.js";

/** The store's `delete`. @throws ERR_INVALID_OPTIONS when the store has none. */
function deleter(store: SessionStore, what: string): (ref: string, cwd: string) => Promise<SessionInfo> {
  if (store.delete === undefined) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `${what} needs a session store with delete(); this host's has none.`,
    );
  }
  return store.delete.bind(store);
}

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

  async delete(ref: string): Promise<SessionInfo> {
    if (typeof ref !== "string" || ref === "") {
      throw new LifelineError("ERR_INVALID_OPTIONS", "deleteSession() needs a session file path or id.");
    }
    await this.#parts.fleet.connection();
    return deleter(this.#parts.files.requireStore(undefined, "deleteSession()"), "deleteSession()")(
      ref,
      this.#parts.config.cwd(),
    );
  }

  async prune(options: PruneOptions): Promise<PruneResult> {
    validate(pruneSessionsOptionsSchema, options, "pruneSessions options");
    await this.#parts.fleet.connection();
    const store = this.#parts.files.requireStore(undefined, "pruneSessions()");
    const remove = deleter(store, "pruneSessions()");
    if (store instanceof RedisSessionStore && options.dryRun !== true) await store.sweepExpired();
    const cwd = options.allDirectories === true ? undefined : (options.cwd ?? this.#parts.config.cwd());
    const cutoff = Date.now() - options.olderThanMs;
    // A dry run asks the store what it would delete: an open session is one a prune leaves. A
    // store without `deletable` cannot tell; its dry run lists every old session.
    const check = options.dryRun === true ? store.deletable?.bind(store) : remove;
    const result: PruneResult = { deleted: [], skipped: [] };
    for (const info of await store.list(cwd)) {
      if (info.modified.getTime() >= cutoff) continue;
      if (check === undefined) {
        result.deleted.push(info);
        continue;
      }
      try {
        result.deleted.push(await check(info.path, this.#parts.config.cwd()));
      } catch (error) {
        // Open somewhere (its writer is using it) or gone meanwhile: the others go on.
        if (!(error instanceof LifelineError)) throw error;
        if (error.code !== "ERR_SESSION_LOCKED" && error.code !== "ERR_SESSION_NOT_FOUND") throw error;
        result.skipped.push({ session: info, reason: error.message });
      }
    }
    return result;
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
