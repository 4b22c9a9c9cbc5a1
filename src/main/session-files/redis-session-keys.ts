/**
 * Where the Redis session store keeps a session, under the fleet's prefix `lifeline:<fleet>:`
 * (docs/fleet.md, "Sessions in the fleet"):
 *
 *   session:<id>:entries    LIST    the header line, then one line per entry, in append order
 *                                   (each exactly a line of pi's JSONL file, without its newline)
 *   session:<id>:info       HASH    id, cwd, created (the header's time), modified (ms, Redis's
 *                                   clock), messages (count), first (first user text), name
 *   session:<id>:lock       STRING  `<fence>:<owner>` with a PX lease: the one writer
 *   session:<id>:fence      STRING  the session's fencing token counter (INCR per taking)
 *   sessions:all            ZSET    id → modified ms, for listing every session
 *   sessions:cwd:<cwd>      ZSET    id → modified ms, for listing one working directory's
 *   sessions:ids            ZSET    id → 0, for finding ids by prefix (ZRANGE BYLEX)
 *   sessions:expiry         ZSET    `<cwd>\n<id>` → the ms its idle time runs out (fleet.sessionTtlMs)
 *
 * With `fleet.sessionTtlMs`, a session's entries, info and fence carry that TTL, renewed when it
 * is created, and when it is opened, its lease renewed or released once a tenth of the TTL has
 * passed; the index keys carry it too, renewed with every session's, so they outlive their
 * newest member. Redis deletes an idle session's keys on its own; creating a session removes up
 * to 100 expired ones from the indexes (redis-session-scripts.ts, RETENTION), and a prune all of
 * them, so nothing of them is left.
 *
 * A session id has no `/`, `\`, `..` or control characters (assertValidSessionId), and the suffix
 * after it never contains `:`, so no two sessions' keys can meet.
 */
import type { FleetConnection } from "../redis/fleet-connection.js";

/** The keys of one session, plus the indexes an append touches. */
export interface SessionKeys {
  /** The session's working directory (its header's), which names `byCwd`. */
  cwd: string;
  entries: string;
  info: string;
  lock: string;
  fence: string;
  all: string;
  byCwd: string;
}

/** The keys of session `id` (in working directory `cwd`). */
export function sessionKeys(connection: FleetConnection, id: string, cwd: string): SessionKeys {
  return {
    entries: connection.key("session", id, "entries"),
    info: connection.key("session", id, "info"),
    lock: connection.key("session", id, "lock"),
    fence: connection.key("session", id, "fence"),
    all: allSessionsKey(connection),
    byCwd: cwdSessionsKey(connection, cwd),
    cwd,
  };
}

/** The index of every session of the fleet. */
export function allSessionsKey(connection: FleetConnection): string {
  return connection.key("sessions", "all");
}

/** The index of one working directory's sessions. */
export function cwdSessionsKey(connection: FleetConnection, cwd: string): string {
  return connection.key("sessions", "cwd", cwd);
}

/** The index of ids, for prefix lookups. */
export function sessionIdsKey(connection: FleetConnection): string {
  return connection.key("sessions", "ids");
}

/**
 * What a Redis session reports as its `path` (`session.sessionFile`, `SessionInfo.path`):
 * `lifeline:<fleet>:session:<id>`; the store's `open` accepts it back.
 */
export function sessionPath(connection: FleetConnection, id: string): string {
  return connection.key("session", id);
}
