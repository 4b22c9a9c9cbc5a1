/**
 * The options and result of `SessionHost.pruneSessions` (host-stored-sessions.ts does the work),
 * in a file of their own: the package's declarations re-export them, and a consumer's type check
 * must not reach the host's parts (and through them optional peers such as OpenTelemetry's API).
 */
import type { SessionInfo } from "../session-files/session-store.js";

/**
 * Options of `SessionHost.pruneSessions`, which deletes the stored sessions (in the store
 * `listSessions()` reads) last written more than `olderThanMs` ago and leaves those open
 * somewhere; in fleet mode it first sweeps the sessions that expired (`fleet.sessionTtlMs`) from
 * the indexes. It throws ERR_INVALID_OPTIONS (bad options, persistence off, a store without
 * `delete`), ERR_SESSION_FILE, ERR_FLEET_UNAVAILABLE.
 */
export interface PruneOptions {
  /** Delete the sessions last written longer ago than this (ms). */
  olderThanMs: number;
  /** This directory's sessions (default: the host's cwd). */
  cwd?: string;
  /** Every directory's sessions instead. */
  allDirectories?: boolean;
  /** Delete nothing; report what would be deleted. */
  dryRun?: boolean;
}

/** What `SessionHost.pruneSessions` did. */
export interface PruneResult {
  /** The sessions deleted (with `dryRun`, those that would be), most recently modified first. */
  deleted: SessionInfo[];
  /** Old enough, but left: open for writing somewhere (or gone meanwhile); `reason` says which. */
  skipped: { session: SessionInfo; reason: string }[];
}
