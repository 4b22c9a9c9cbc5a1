/**
 * The session host, where an embedding program starts: `createSessionHost` checks the options and
 * loads the host's extensions; `SessionHost` is the facade over the host's parts (host-parts.ts:
 * worker roster, session files, configuration sources, B8 coordination; workers start only when
 * first needed): it checks each call, opens and resumes sessions through the session assembly,
 * keeps the open ones by id, hands stored-session calls to host-stored-sessions.ts, and closes it
 * all in order. Placing sessions on workers, and a worker's death, are the roster's.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Api, Model } from "@mariozechner/pi-ai";
import { LifelineError } from "../../shared/errors.js";
import type { Settings, SettingsInput } from "../../shared/settings/settings.js";
import type { AuthStorage } from "../auth/auth-storage.js";
import { ExtensionRunner } from "../extensions/extension-runner.js";
import { resolveExtensions } from "../extensions/resolve-extensions.js";
import type { FleetConnection } from "../redis/fleet-connection.js";
import type { AgentSession } from "../session/agent-session.js";
import type { ForkMessage } from "../session-files/session-fork.js";
import type { SessionInfo } from "../session-files/session-store.js";
import { availableModels } from "./host-models.js";
import {
  checkHostOptions,
  checkResumeOptions,
  checkSessionOptions,
  type ResumeOptions,
  type SessionHostOptions,
  type SessionOptions,
} from "./host-options.js";
import { closeHostParts, type HostParts, makeHostParts } from "./host-parts.js";
import { HostStoredSessions } from "./host-stored-sessions.js";
import type { PruneOptions, PruneResult } from "./prune-options.js";
import type { ForkOptions, ForkResult } from "./session-forks.js";

/** The option types of this module's functions, for callers that import the host alone. */
export type { ResumeOptions, SessionHostOptions, SessionOptions } from "./host-options.js";

/**
 * Creates a host. Cheap: the pool and its workers start with the first session.
 * @throws ERR_INVALID_OPTIONS for a malformed option, ERR_INVALID_SETTINGS for invalid `settings`,
 *   ERR_EXTENSION_LOAD for an extension path that does not exist or holds no extension.
 */
export function createSessionHost(options: SessionHostOptions = {}): SessionHost {
  checkHostOptions(options);
  const cwd = options.cwd ?? process.cwd();
  const extensions =
    options.extensions === undefined || options.extensions.length === 0
      ? undefined
      : new ExtensionRunner(resolveExtensions(options.extensions, cwd), cwd, options.extensionUi);
  return new SessionHost(options, extensions);
}

/** Owns a worker pool and the sessions on it. Create with {@link createSessionHost}. */
export class SessionHost {
  readonly #sessions = new Map<string, AgentSession>();
  /** Config, workers, session files, coordination, fleet, telemetry, assembly (host-parts.ts). */
  readonly #parts: HostParts;
  /** Listing, exporting and forking stored sessions (host-stored-sessions.ts). */
  readonly #stored: HostStoredSessions;
  #closed = false;

  /** @internal Use {@link createSessionHost}. */
  constructor(options: SessionHostOptions, extensions?: ExtensionRunner) {
    this.#parts = makeHostParts(options, extensions, {
      sessions: this.#sessions,
      isClosed: () => this.#closed,
      assertOpen: () => this.#assertOpen(),
    });
    this.#stored = new HostStoredSessions(this.#parts, (path) => this.resumeSession(path));
  }

  /** Open sessions. */
  get sessionCount(): number {
    return this.#sessions.size;
  }

  /** Live worker links (one per worker thread in use). */
  get workerCount(): number {
    return this.#parts.workers.workerCount;
  }

  /** Workers the watchdog has terminated as hung since the host was created (SPEC X8). */
  get watchdogTerminations(): number {
    return this.#parts.workers.watchdogTerminations;
  }

  /**
   * Opens a session in a worker.
   * @throws ERR_INVALID_OPTIONS, ERR_INVALID_SETTINGS, ERR_INVALID_MODELS (models.json),
   *   ERR_UNKNOWN_MODEL, ERR_MISSING_API_KEY, ERR_WORKER_MODULE, ERR_HOST_CLOSED, or
   *   ERR_WORKER_EXITED if the worker dies while opening.
   */
  async createSession(options: SessionOptions = {}): Promise<AgentSession> {
    this.#assertOpen();
    checkSessionOptions(options);
    // The caller's task ends here: settings, telemetry and a worker's start go on later turns (bench (s)).
    await nextTurn();
    return this.#parts.assembly.create(options);
  }

  /**
   * Opens a stored session again (B7) on a worker: its transcript and history as the file has
   * them, its id, and the model it last used unless `options.model` names one. `ref` is a file
   * path, or a session id or a unique prefix of one (this host's cwd first, then all). Damaged
   * lines are skipped with a process warning naming the file and line. Steering or follow-up
   * messages that were accepted but never delivered are appended to the transcript once.
   * Needs persistence on (`sessions` on the host or in `options`).
   * @throws ERR_INVALID_OPTIONS (persistence off, a bad or ambiguous ref), ERR_SESSION_NOT_FOUND,
   *   ERR_SESSION_LOCKED (open for writing elsewhere; in a fleet, `retryAfterMs` is its lease's time
   *   left), ERR_SESSION_FILE, ERR_FLEET_UNAVAILABLE (fleet mode), and what createSession throws.
   */
  async resumeSession(ref: string, options: ResumeOptions = {}): Promise<AgentSession> {
    this.#assertOpen();
    checkResumeOptions(ref, options);
    await nextTurn();
    return this.#parts.assembly.resume(ref, options);
  }

  /**
   * Stored sessions of `cwd` (default: the host's cwd), or of every directory with
   * `allDirectories: true` (each `SessionInfo` names its `cwd`), most recently modified first.
   * In fleet mode, the fleet's sessions (docs/fleet.md): a session served by a fleet records the
   * serving host's directory.
   * @throws ERR_INVALID_OPTIONS when persistence is off on the host, or for both options;
   *   ERR_SESSION_FILE; ERR_FLEET_UNAVAILABLE (fleet mode).
   */
  async listSessions(options: { cwd?: string; allDirectories?: boolean } = {}): Promise<SessionInfo[]> {
    return this.#stored.list(options);
  }

  /**
   * A stored session as a pi session file's text (version 3 JSONL: the header, then its entries),
   * read without opening it, so it may be open elsewhere. `ref` as for {@link resumeSession}; the
   * store is the one `listSessions()` reads (the fleet's Redis in fleet mode). `warnings` name
   * damaged lines left out.
   * @throws ERR_INVALID_OPTIONS (persistence off, a bad or ambiguous ref), ERR_SESSION_NOT_FOUND,
   *   ERR_SESSION_FILE, ERR_FLEET_UNAVAILABLE.
   */
  async exportSession(ref: string): Promise<{ text: string; warnings: string[] }> {
    this.#assertOpen();
    return this.#stored.export(ref);
  }

  /** Deletes a stored session open nowhere (`ref` and store as for exportSession); resolves with what it was. */
  async deleteSession(ref: string): Promise<SessionInfo> {
    this.#assertOpen();
    return this.#stored.delete(ref);
  }

  /** Deletes the stored sessions last written over `olderThanMs` ago, but not open ones (PruneOptions). */
  async pruneSessions(options: PruneOptions): Promise<PruneResult> {
    this.#assertOpen();
    return this.#stored.prune(options);
  }

  /**
   * pi's `/fork`: a new persisted session holding `session`'s path up to (`position: "before"`,
   * the default) the user message `entryId`, or up to and including the entry (`"at"`); its
   * header's `parentSession` names `session`'s file. Opened and returned with the user message's
   * text (for `"before"`). `session` stays open. Needs `session` persisted in this host's store.
   * @throws ERR_INVALID_OPTIONS (not persisted, an entry that is not one), and what
   *   `resumeSession` throws.
   */
  async forkSession(session: AgentSession, entryId: string, options: ForkOptions = {}): Promise<ForkResult> {
    this.#assertOpen();
    return this.#stored.fork(session, entryId, options);
  }

  /** pi's clone: {@link forkSession} at `session`'s last entry (a copy under a new id). */
  async cloneSession(session: AgentSession): Promise<AgentSession> {
    this.#assertOpen();
    return this.#stored.clone(session);
  }

  /** The user messages of persisted `session` a fork may start from: `{ entryId, text }`, in order. */
  async forkMessages(session: AgentSession): Promise<ForkMessage[]> {
    this.#assertOpen();
    return this.#stored.forkMessages(session);
  }

  /**
   * pi's `export_html`: writes `session`'s transcript (its whole history, failed attempts and
   * retries marked) as one self-contained HTML page with no script and nothing to load, to
   * `outputPath` (relative to the host's cwd), by default `lifeline-session-<file name or id>.html`
   * in the host's cwd. Resolves with the file's absolute path.
   * @throws ERR_INVALID_OPTIONS for an empty or non-string path; ERR_SESSION_FILE when it cannot be written.
   */
  async exportHtml(session: AgentSession, outputPath?: string): Promise<string> {
    this.#assertOpen();
    return this.#stored.exportHtml(session, outputPath);
  }

  /**
   * Models a session can use now: the worker's built-in demo models, every model in models.json,
   * and pi-ai's catalogue for providers that have a key (environment or models.json), with
   * models.json overrides applied. Starts a worker if none is running.
   * @throws ERR_INVALID_MODELS for a malformed models.json; ERR_HOST_CLOSED.
   */
  async availableModels(): Promise<Model<Api>[]> {
    this.#assertOpen();
    return availableModels(this.#parts.config, this.#parts.workers);
  }

  /** Settings as the next session would get them, before per-session overrides. */
  async settings(): Promise<Settings> {
    return this.#parts.config.sessionSettings(undefined);
  }

  /**
   * @internal Fleet mode: the host's one connection to its fleet's Redis (made on first use), which
   * `serveFleet` shares; undefined outside a fleet. `close()` closes it. @throws as `connectFleet`.
   */
  fleetConnection(): Promise<FleetConnection | undefined> {
    return this.#parts.fleet.connection();
  }

  /**
   * @internal B9, fleet mode: session `sessionId`'s next prompt continues the W3C trace `traceparent`
   * instead of its caller's context. Ignored without spans or for a malformed value.
   */
  continueTrace(sessionId: string, traceparent: string | undefined): void {
    this.#parts.telemetry.continueTrace(sessionId, traceparent);
  }

  /** Forgets the cached settings and models files; the next session reads them again. */
  reloadSettings(): void {
    this.#parts.config.reload();
  }

  /**
   * B5: persists settings to the user's `settings.json` (for example `{ retry: { enabled: false } }`).
   * Open sessions keep their own settings; new sessions read the file again.
   */
  async writeUserSettings(patch: SettingsInput): Promise<void> {
    await this.#parts.config.writeUserSettings(patch);
  }

  /**
   * Disposes every session, stops the workers and releases the pool. Afterwards no handle of the
   * host keeps the process alive. Idempotent. Bounded even when a worker is stuck in synchronous
   * code: it waits at most 2 s for the workers to answer and 2 s more for them to stop, then
   * terminates the threads.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await closeHostParts(this.#parts, this.#sessions.values());
  }

  #assertOpen(): void {
    if (this.#closed) throw new LifelineError("ERR_HOST_CLOSED", "This session host is closed; create a new host.");
  }

  /**
   * The storage serving keys and told about limits: the host's `authStorage`, else the
   * `auth.json` of the lifeline directory (none with `lifelineDir: false`).
   */
  get authStorage(): AuthStorage | undefined {
    return this.#parts.config.authStorage;
  }
}
