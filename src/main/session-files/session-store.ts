/**
 * Where a host keeps its sessions: the contract between the session runtime and its storage.
 * lifeline ships {@link FileSessionStore} (pi's files); a host can pass its own store (a
 * database, object storage) as `sessions: { store }`.
 *
 * Every method is called on the main thread and must not block it: do I/O asynchronously.
 */
import type { SessionEntry, SessionHeader } from "./session-format.js";

/** One stored session, as {@link SessionStore.list} reports it. */
export interface SessionInfo {
  id: string;
  /** Where it is kept (the file path for the file store); `resumeSession` accepts it. */
  path: string;
  /** The working directory of its header. */
  cwd: string;
  created: Date;
  /** When it was last written. */
  modified: Date;
  /** Message entries in the file. */
  messageCount: number;
  /** Text of the first user message, for pickers. "" when there is none. */
  firstMessage: string;
  /** The name its latest `session_info` entry gives it (pi's `/name`), if any. */
  name?: string;
}

/**
 * Appends to one session, for as long as the session is open. While a writer is open, no other
 * writer of the same session exists, in this process or another (the store refuses it with
 * ERR_SESSION_LOCKED).
 */
export interface SessionWriter {
  /** Where the session is kept (the file path for the file store). */
  readonly path: string;
  /**
   * Appends entries, in call order. Must return without waiting for the I/O; the promise resolves
   * once they are stored as durably as the store promises (the write-ahead of a prompt awaits it)
   * and rejects with ERR_SESSION_FILE when they could not be stored. `options.lazy`: nobody waits
   * for these entries, so a store may hold them briefly to write them with later ones (the file
   * store: up to 50 ms, or until the next non-lazy append or flush).
   */
  append(entries: readonly SessionEntry[], options?: { lazy?: boolean }): Promise<void>;
  /** Resolves once everything appended so far is stored or has failed. Never rejects. */
  flush(): Promise<void>;
  /** Flushes and releases the session (its lock). Idempotent. */
  close(): Promise<void>;
}

/** A stored session as read back. */
export interface StoredSession {
  header: SessionHeader;
  /** Its entries, version 3, in file order. */
  entries: SessionEntry[];
  /** One text per damaged line that was skipped, naming where. */
  warnings: string[];
}

/** A stored session opened for appending. */
export interface OpenedSession extends StoredSession {
  writer: SessionWriter;
}

/** A place to keep sessions. */
export interface SessionStore {
  /**
   * Stores a new session with its header and opens it for appending.
   * @throws ERR_SESSION_LOCKED if it exists and is open elsewhere; ERR_SESSION_FILE if it cannot be written.
   */
  create(header: SessionHeader): Promise<SessionWriter>;
  /**
   * Opens a stored session for appending: `ref` is a path, or an id or a unique prefix of one
   * (this `cwd`'s sessions first, then all). A damaged line is skipped (see `warnings`), never fatal.
   * @throws ERR_SESSION_NOT_FOUND, ERR_INVALID_OPTIONS (an ambiguous prefix), ERR_SESSION_LOCKED,
   *   ERR_SESSION_FILE (not a session).
   */
  open(ref: string, cwd: string): Promise<OpenedSession>;
  /** Sessions of `cwd` (all of them when undefined), most recently modified first. */
  list(cwd: string | undefined): Promise<SessionInfo[]>;
  /**
   * Reads a stored session without opening it for writing (no lock: it may be open elsewhere),
   * `ref` as for {@link open}. Optional: what exports a session (`host.exportSession()`,
   * `lifeline export`) needs it; the shipped stores have it.
   * @throws as {@link open}, except ERR_SESSION_LOCKED.
   */
  read?(ref: string, cwd: string): Promise<StoredSession>;
  /**
   * Deletes a stored session that is not open for writing anywhere, `ref` as for {@link open};
   * resolves with what it was. Optional: `host.deleteSession()` and `pruneSessions()` need it;
   * the shipped stores have it.
   * @throws as {@link open} (ERR_SESSION_LOCKED: open somewhere; close it there first).
   */
  delete?(ref: string, cwd: string): Promise<SessionInfo>;
  /**
   * What {@link delete} would delete, deleting nothing and taking no lock (a concurrent open must
   * not fail for it): the same checks, that it exists and is open nowhere. A prune's dry run
   * asks it, so that it lists what a prune deletes, not also the open sessions a prune leaves;
   * without it, the dry run lists every old session.
   * @throws as {@link delete}.
   */
  deletable?(ref: string, cwd: string): Promise<SessionInfo>;
}
