/**
 * One writer per session file, across processes: a lock file `<session file>.lock` holding the
 * writer's pid and host name.
 *
 * Why a pid file and not `proper-lockfile`: proper-lockfile judges a lock stale by its age (it
 * refreshes the lock's mtime on a timer, and waits at least `stale` ms, 2 s or more, before
 * taking over), so a host killed with SIGKILL would keep its sessions locked for that long and
 * `--continue` right after a crash would fail. A pid says at once whether the holder is alive.
 *
 * Taking a lock: the content is written to a private temp file first and `link`ed to the lock
 * path, which fails if the path exists, so a lock file is never seen half-written. If it exists,
 * its holder is asked `kill(pid, 0)`: alive (or alive as another user) → ERR_SESSION_LOCKED; dead
 * → the stale file is removed (only if it still names that dead pid) and the link is tried again.
 *
 * Limits, documented in docs/sessions.md: a lock held from another host (same file on a network
 * share) is never judged stale; a dead holder's pid reused by an unrelated process makes the lock
 * look held until that process ends; two processes taking over the same stale lock at the same
 * instant are ordered by the `link`, but one may remove the other's fresh lock in the window
 * between reading the stale content and removing it.
 */
import { randomUUID } from "node:crypto";
import { link, readFile, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { LifelineError } from "../../shared/errors.js";

interface LockContent {
  pid: number;
  hostname: string;
  token: string;
}

/** A held lock; `release()` removes the lock file if it is still ours. */
export interface SessionLock {
  readonly path: string;
  release(): Promise<void>;
}

/**
 * Takes the lock of `sessionFile` for this process.
 * @throws LifelineError ERR_SESSION_LOCKED when a live process (this one included) holds it;
 *   ERR_SESSION_FILE when the lock file cannot be written.
 */
export async function lockSessionFile(sessionFile: string): Promise<SessionLock> {
  const path = `${sessionFile}.lock`;
  const content: LockContent = { pid: process.pid, hostname: hostname(), token: randomUUID() };
  const temp = `${path}.${content.token}.tmp`;
  await writeFile(temp, JSON.stringify(content), { flag: "wx" }).catch((error: unknown) => {
    throw new LifelineError("ERR_SESSION_FILE", `Could not write the lock file ${temp}: ${String(error)}`, {
      cause: error,
    });
  });
  try {
    // Bounded: each round either takes the lock, throws, or removed a dead holder's file.
    for (let round = 0; round < 5; round++) {
      try {
        await link(temp, path);
        return { path, release: () => releaseLock(path, content.token) };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = await readHolder(path);
      if (holder === "gone") continue;
      if (holder !== undefined && isAlive(holder)) throw heldError(sessionFile, holder);
      await removeIfUnchanged(path, holder);
    }
    throw new LifelineError(
      "ERR_SESSION_LOCKED",
      `Session file ${sessionFile}: its lock ${path} keeps changing hands; another process is opening it. Try again.`,
    );
  } catch (error) {
    if (error instanceof LifelineError) throw error;
    throw new LifelineError("ERR_SESSION_FILE", `Could not lock session file ${sessionFile}: ${String(error)}`, {
      cause: error,
    });
  } finally {
    await unlink(temp).catch(() => {});
  }
}

/**
 * Throws as {@link lockSessionFile} would when a live process holds `sessionFile`'s lock, without
 * taking it (a dry run must not make a concurrent open fail); a missing or stale lock passes.
 * @throws LifelineError ERR_SESSION_LOCKED; ERR_SESSION_FILE when the lock file cannot be read.
 */
export async function assertNotLocked(sessionFile: string): Promise<void> {
  const holder = await readHolder(`${sessionFile}.lock`).catch((error: unknown) => {
    throw new LifelineError("ERR_SESSION_FILE", `Could not read the lock of ${sessionFile}: ${String(error)}`, {
      cause: error,
    });
  });
  if (holder !== "gone" && holder !== undefined && isAlive(holder)) throw heldError(sessionFile, holder);
}

function heldError(sessionFile: string, holder: LockContent): LifelineError {
  return new LifelineError(
    "ERR_SESSION_LOCKED",
    `Session file ${sessionFile} is open for writing by process ${holder.pid} on ${holder.hostname}. Close that session (or that process) first, or open another session.`,
  );
}

/** The holder named by the lock file; undefined when unreadable (a damaged file: stale); "gone" if removed meanwhile. */
async function readHolder(path: string): Promise<LockContent | undefined | "gone"> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "gone";
    throw error;
  }
  try {
    const value = JSON.parse(text) as Partial<LockContent>;
    if (typeof value.pid === "number" && typeof value.hostname === "string" && typeof value.token === "string") {
      return value as LockContent;
    }
  } catch {
    // Damaged: no live writer could have written it (the content is linked in whole).
  }
  return undefined;
}

/** Alive unless this host's kernel says the pid does not exist. Another host's holder counts as alive. */
function isAlive(holder: LockContent): boolean {
  if (holder.hostname !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists and belongs to another user.
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

async function removeIfUnchanged(path: string, stale: LockContent | undefined): Promise<void> {
  const now = await readHolder(path);
  if (now === "gone") return;
  if (stale === undefined ? now !== undefined : now?.token !== stale.token) return;
  await unlink(path).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  });
}

async function releaseLock(path: string, token: string): Promise<void> {
  const holder = await readHolder(path).catch(() => undefined);
  if (holder === "gone" || holder?.token !== token) return;
  await unlink(path).catch(() => {});
}
