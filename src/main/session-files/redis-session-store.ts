/**
 * The Redis store: a fleet's sessions in its Redis (docs/fleet.md, "Sessions in the fleet"), so
 * that any host of the fleet can continue any session. Each session is pi's v3 JSONL kept line by
 * line in a Redis list (the header, then the entries in append order; key layout in
 * redis-session-keys.ts), so an export is byte for byte the file the file store would have
 * written for the same entries.
 *
 * The guarantees are the file store's (session-store.ts): an append resolves once Redis
 * acknowledged it (durable as Redis's AOF policy makes it), failed attempts are entries like any
 * other, and one writer per session exists in the whole fleet: a lease with a fencing token
 * (redis-session-lease.ts) instead of a lock file. Opening a session held elsewhere fails at once
 * with ERR_SESSION_LOCKED and `retryAfterMs`, the time its lease has left.
 *
 * Main thread only; every call is one or two Redis round trips. While Redis is away, `create`,
 * `open`, `read` and `list` fail at once with ERR_FLEET_UNAVAILABLE (the connection does not
 * queue commands); appends are tried again for a while (redis-session-writer.ts).
 */

import { FleetUnavailableError, LifelineError } from "../../shared/errors.js";
import { errorText } from "../../shared/failures/error-text.js";
import type { FleetConnection } from "../redis/fleet-connection.js";
import {
  allSessionsKey,
  cwdSessionsKey,
  type SessionKeys,
  sessionIdsKey,
  sessionKeys,
  sessionPath,
} from "./redis-session-keys.js";
import { lockedError, newOwner } from "./redis-session-lease.js";
import { ACQUIRE, CREATE, DELETE, RELEASE, runScript, SWEEP } from "./redis-session-scripts.js";
import { RedisSessionWriter } from "./redis-session-writer.js";
import { assertValidSessionId, type SessionHeader, serializeLine } from "./session-format.js";
import { parseSessionText } from "./session-reader.js";
import type { OpenedSession, SessionInfo, SessionStore, SessionWriter, StoredSession } from "./session-store.js";
import { summarizeEntries } from "./session-summary.js";

/** Most ids a prefix lookup considers; more matches than this are ambiguous anyway. */
const PREFIX_MATCHES = 1000;

/** Sessions in the fleet's Redis; see the file comment. */
export class RedisSessionStore implements SessionStore {
  readonly #connection: FleetConnection;

  /** A store on `connection` (its fleet's prefix and `leaseMs`). Cheap: no I/O until used. */
  constructor(connection: FleetConnection) {
    this.#connection = connection;
  }

  /**
   * Stores a new session (its header) and takes its lease.
   * @throws ERR_SESSION_LOCKED (with `retryAfterMs`) when its id is held; ERR_SESSION_FILE when a
   *   session of that id exists; ERR_INVALID_OPTIONS for a bad id; ERR_FLEET_UNAVAILABLE.
   */
  async create(header: SessionHeader): Promise<SessionWriter> {
    assertValidSessionId(header.id);
    const connection = this.#connection;
    const keys = sessionKeys(connection, header.id, header.cwd);
    const owner = newOwner();
    const reply = (await this.#command("store session", () =>
      runScript(connection.redis, CREATE, [
        keys.entries,
        keys.info,
        keys.lock,
        keys.fence,
        keys.all,
        keys.byCwd,
        sessionIdsKey(connection),
        header.id,
        owner,
        connection.settings.leaseMs,
        serializeLine(header).slice(0, -1),
        header.cwd,
        header.timestamp,
        connection.prefix,
        connection.settings.sessionTtlMs,
      ]),
    )) as unknown[];
    if (reply[0] === "locked") throw lockedError(header.id, Number(reply[1]), String(reply[2]));
    if (reply[0] === "exists") {
      throw new LifelineError(
        "ERR_SESSION_FILE",
        `A session with id ${header.id} already exists in the fleet; resume it, or pick another id.`,
      );
    }
    return new RedisSessionWriter(connection, {
      id: header.id,
      path: sessionPath(connection, header.id),
      keys,
      fence: String(reply[1]),
      owner,
      length: 1,
      hasFirstMessage: false,
    });
  }

  /**
   * Takes the lease of a stored session and reads it. `ref`: an id, a unique prefix of one (this
   * `cwd`'s sessions first, then all), or the `path` the store reports.
   * @throws ERR_SESSION_NOT_FOUND, ERR_INVALID_OPTIONS (ambiguous prefix), ERR_SESSION_LOCKED (with
   *   `retryAfterMs`: its lease's time left), ERR_SESSION_FILE (no header, or not version 3),
   *   ERR_FLEET_UNAVAILABLE.
   */
  async open(ref: string, cwd: string): Promise<OpenedSession> {
    const connection = this.#connection;
    const id = await this.#resolve(ref, cwd);
    const owner = newOwner();
    const lockKeys = sessionKeys(connection, id, cwd);
    const reply = (await this.#command("open session", () =>
      runScript(connection.redis, ACQUIRE, [
        lockKeys.entries,
        lockKeys.lock,
        lockKeys.fence,
        owner,
        connection.settings.leaseMs,
        id,
        connection.prefix,
        connection.settings.sessionTtlMs,
      ]),
    )) as unknown[];
    if (reply[0] === "missing") throw notFound(id);
    if (reply[0] === "locked") throw lockedError(id, Number(reply[1]), String(reply[2]));
    const fence = String(reply[1]);
    const lines = reply.slice(2).map(String);
    let stored: StoredSession;
    try {
      stored = this.#parse(id, lines);
    } catch (error) {
      // No id given: the lock alone; the session's deadline stays what ACQUIRE made it.
      const release = [lockKeys.lock, `${fence}:${owner}`, "", "", connection.prefix, 0];
      await runScript(connection.redis, RELEASE, release).catch(() => {});
      throw error;
    }
    const writer = new RedisSessionWriter(connection, {
      id,
      path: sessionPath(connection, id),
      keys: sessionKeys(connection, id, stored.header.cwd),
      fence,
      owner,
      length: lines.length,
      hasFirstMessage: summarizeEntries(stored.entries).firstMessage !== "",
    });
    return { ...stored, writer };
  }

  /**
   * Reads a stored session without taking its lease (for an export): what was stored when Redis
   * answered. @throws as {@link open}, without ERR_SESSION_LOCKED.
   */
  async read(ref: string, cwd: string): Promise<StoredSession> {
    const id = await this.#resolve(ref, cwd);
    const key = sessionKeys(this.#connection, id, cwd).entries;
    const lines = await this.#command("read session", () => this.#connection.redis.lrange(key, 0, -1));
    if (lines.length === 0) throw notFound(id);
    return this.#parse(id, lines);
  }

  /** Sessions of `cwd` (every session of the fleet when undefined), most recently modified first. */
  async list(cwd: string | undefined): Promise<SessionInfo[]> {
    const connection = this.#connection;
    const index = cwd === undefined ? allSessionsKey(connection) : cwdSessionsKey(connection, cwd);
    const ids = await this.#command("list sessions", () => connection.redis.zrevrange(index, 0, -1));
    const infos = await this.#command("list sessions", async () => {
      const pipeline = connection.redis.pipeline();
      for (const id of ids) pipeline.hgetall(sessionKeys(connection, id, "").info);
      return (await pipeline.exec()) ?? [];
    });
    const sessions: SessionInfo[] = [];
    for (const [error, value] of infos) {
      // An id whose info is gone expired and waits for a sweep (redis-session-keys.ts).
      const info = error === null ? toInfo(connection, value as Record<string, string> | null) : undefined;
      if (info !== undefined) sessions.push(info);
    }
    return sessions;
  }

  /**
   * Deletes a stored session no one holds (its keys, and it from every index); resolves with what
   * it was. `ref` as for {@link open}.
   * @throws ERR_SESSION_NOT_FOUND, ERR_INVALID_OPTIONS (ambiguous prefix), ERR_SESSION_LOCKED (open
   *   on a host: close it there first), ERR_FLEET_UNAVAILABLE.
   */
  async delete(ref: string, cwd: string): Promise<SessionInfo> {
    const connection = this.#connection;
    const { id, keys, info } = await this.#toDelete(ref, cwd);
    const reply = (await this.#command("delete session", () =>
      runScript(connection.redis, DELETE, [keys.entries, keys.info, keys.lock, keys.fence, id, connection.prefix]),
    )) as unknown[];
    if (reply[0] === "missing" || info === undefined) throw notFound(id);
    if (reply[0] === "locked") throw lockedError(id, Number(reply[1]), String(reply[2]));
    return info;
  }

  /**
   * What {@link delete} would delete: it reads the session's lease instead of deleting.
   * @throws as {@link delete}.
   */
  async deletable(ref: string, cwd: string): Promise<SessionInfo> {
    const redis = this.#connection.redis;
    const { id, keys, info } = await this.#toDelete(ref, cwd);
    const [holder, pttl] = await this.#command("read session", () =>
      Promise.all([redis.get(keys.lock), redis.pttl(keys.lock)]),
    );
    if (info === undefined) throw notFound(id);
    if (holder !== null) throw lockedError(id, pttl, holder);
    return info;
  }

  /** The id `ref` names, its keys, and its info (undefined when it has none). */
  async #toDelete(ref: string, cwd: string): Promise<{ id: string; keys: SessionKeys; info: SessionInfo | undefined }> {
    const connection = this.#connection;
    const id = await this.#resolve(ref, cwd);
    const keys = sessionKeys(connection, id, cwd);
    const info = toInfo(connection, await this.#command("read session", () => connection.redis.hgetall(keys.info)));
    return { id, keys, info };
  }

  /**
   * Removes from the indexes every session whose idle time (fleet.sessionTtlMs) ran out; Redis
   * has deleted their keys already. Creating a session sweeps a hundred at a time; this sweeps
   * until none is left. Resolves with how many it removed.
   * @throws ERR_FLEET_UNAVAILABLE.
   */
  async sweepExpired(): Promise<number> {
    const connection = this.#connection;
    let removed = 0;
    for (;;) {
      const count = Number(
        await this.#command("sweep sessions", () => runScript(connection.redis, SWEEP, [connection.prefix, 1000])),
      );
      removed += count;
      if (count < 1000) return removed;
    }
  }

  /** Lines as stored → header and entries; damaged lines skipped with warnings, as the file store does. */
  #parse(id: string, lines: readonly string[]): StoredSession {
    const where = sessionPath(this.#connection, id);
    const parsed = parseSessionText(lines.map((line) => `${line}\n`).join(""), where);
    if (parsed.migrated) {
      throw new LifelineError(
        "ERR_SESSION_FILE",
        `${where} is a session of an older version than 3; lifeline stores only version 3 in Redis. Open it from a file instead.`,
      );
    }
    return { header: parsed.header, entries: parsed.entries, warnings: parsed.warnings };
  }

  /** An id, a unique prefix (this cwd's sessions first, then all), or the store's own path. */
  async #resolve(ref: string, cwd: string): Promise<string> {
    const own = sessionPath(this.#connection, "");
    const id = ref.startsWith(own) ? ref.slice(own.length) : ref;
    if (id.includes("/") || id.endsWith(".jsonl")) {
      throw new LifelineError(
        "ERR_SESSION_NOT_FOUND",
        `"${ref}" looks like a file, but this host keeps its sessions in the fleet's Redis (fleet mode); name the session by its id, or pass sessions: { dir } (--session-dir) to use files.`,
      );
    }
    assertValidSessionId(id);
    const redis = this.#connection.redis;
    const matches = await this.#command("find session", () =>
      redis.zrangebylex(
        sessionIdsKey(this.#connection),
        Buffer.from(`[${id}`),
        Buffer.concat([Buffer.from(`[${id}`), Buffer.from([0xff])]),
        "LIMIT",
        0,
        PREFIX_MATCHES,
      ),
    );
    const cwds =
      matches.length === 0
        ? []
        : await this.#command("find session", () =>
            Promise.all(matches.map((match) => redis.hget(sessionKeys(this.#connection, match, cwd).info, "cwd"))),
          );
    const here = matches.filter((_, index) => cwds[index] === cwd);
    for (const scope of [here, matches]) {
      const exact = scope.filter((match) => match === id);
      if (exact.length === 1 || scope.length === 1) return (exact[0] ?? scope[0]) as string;
      if (scope.length > 1) {
        throw new LifelineError(
          "ERR_INVALID_OPTIONS",
          `Session id prefix "${id}" matches ${scope.length} sessions (${scope.slice(0, 20).join(", ")}); give more of the id.`,
        );
      }
    }
    throw notFound(id);
  }

  /** Runs a Redis call; a connection failure becomes ERR_FLEET_UNAVAILABLE naming `what`. */
  async #command<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof LifelineError) throw error;
      throw new FleetUnavailableError(
        `Could not ${what} in the fleet's Redis (fleet.redis): ${errorText(error)}. Check that Redis is running, then try again.`,
        { cause: error },
      );
    }
  }
}

/** A session's info hash as a {@link SessionInfo}; undefined when there is none. */
function toInfo(connection: FleetConnection, info: Record<string, string> | null): SessionInfo | undefined {
  if (info?.id === undefined || info.cwd === undefined) return undefined;
  return {
    id: info.id,
    path: sessionPath(connection, info.id),
    cwd: info.cwd,
    created: new Date(info.created ?? 0),
    modified: new Date(Number(info.modified ?? 0)),
    messageCount: Number(info.messages ?? 0),
    firstMessage: info.first ?? "",
    ...(info.name === undefined || info.name === "" ? {} : { name: info.name }),
  };
}

function notFound(ref: string): LifelineError {
  return new LifelineError(
    "ERR_SESSION_NOT_FOUND",
    `No session in the fleet with an id starting "${ref}"; list them with listSessions().`,
    { cliMessage: `No session in the fleet with an id starting "${ref}"; list them with \`lifeline sessions\`.` },
  );
}
