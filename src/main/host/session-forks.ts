/**
 * pi's `/fork` and clone for a host's persisted sessions (`SessionHost.forkSession`,
 * `cloneSession`, `forkMessages`): the stored session is read back (after a flush, so it holds
 * everything the session recorded), the new session is written to the host's store as pi writes
 * a branched session (session-files/session-fork.ts), and then opened like any stored session.
 * The original session stays open: the caller decides whether to dispose it (RPC mode does).
 */
import { LifelineError } from "../../shared/errors.js";
import type { AgentSession } from "../session/agent-session.js";
import { type ForkMessage, type ForkPosition, forkedSession, forkMessages } from "../session-files/session-fork.js";
import type { SessionStore, StoredSession } from "../session-files/session-store.js";

/** What the forks need of their host. */
export interface ForkHost {
  /** The host's store (the one `listSessions()` reads). @throws ERR_INVALID_OPTIONS when persistence is off. */
  store(what: string): SessionStore;
  cwd(): string;
  /** Opens a stored session, as `resumeSession` does. */
  resume(path: string): Promise<AgentSession>;
}

/** `SessionHost.forkSession`'s options. */
export interface ForkOptions {
  /** Fork before the user message (`"before"`) or at the entry, including it (`"at"`). @default "before" */
  position?: ForkPosition;
}

/** A new session made from a point of another, and the user message's text for a fork "before" it. */
export interface ForkResult {
  session: AgentSession;
  text: string | undefined;
}

/** The user messages of `session` a fork may start from, with their entry ids, in order. */
export async function sessionForkMessages(host: ForkHost, session: AgentSession): Promise<ForkMessage[]> {
  return forkMessages((await readStored(host, session, "forkMessages()")).entries);
}

/**
 * Writes a new session of `session`'s path up to `entryId` (see {@link ForkPosition}), or up to
 * its last entry when `entryId` is undefined (a clone), and opens it.
 * @throws ERR_INVALID_OPTIONS (not persisted, a store without `read`, an entry that is not one, an
 *   empty session to clone); what the store and `resumeSession` throw.
 */
export async function forkSession(
  host: ForkHost,
  session: AgentSession,
  entryId: string | undefined,
  position: ForkPosition,
): Promise<ForkResult> {
  const what = entryId === undefined ? "cloneSession()" : "forkSession()";
  const stored = await readStored(host, session, what);
  const at = entryId ?? stored.entries.at(-1)?.id;
  if (at === undefined) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      "Cannot clone session: no current entry selected (it has none yet).",
    );
  }
  const file = session.sessionFile as string;
  const fork = forkedSession({ header: stored.header, entries: stored.entries, file }, at, position);
  const writer = await host.store(what).create(fork.header);
  try {
    if (fork.entries.length > 0) await writer.append(fork.entries);
  } finally {
    await writer.close();
  }
  return { session: await host.resume(writer.path), text: fork.text };
}

/** Everything `session` recorded so far, read back from its store. */
async function readStored(host: ForkHost, session: AgentSession, what: string): Promise<StoredSession> {
  const file = session.sessionFile;
  if (file === undefined) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `${what} needs a persisted session; session ${session.id} has no session file (sessions: false or --no-session).`,
    );
  }
  const store = host.store(what);
  if (store.read === undefined) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `${what} needs a session store with read(); this host's store has none.`,
    );
  }
  await session.flushSession();
  return store.read(file, host.cwd());
}
