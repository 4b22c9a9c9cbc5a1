/**
 * The session host's persistence (B7), kept out of `SessionHost`: which store a session uses, the
 * recorder of each persisted session, and closing their files so that `host.close()` resolves
 * only when every accepted entry is stored and every lock released.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { LifelineError } from "../../shared/errors.js";
import type { SessionOpened } from "../../shared/wire/protocol.js";
import type { FleetConnection } from "../redis/fleet-connection.js";
import { FileSessionStore } from "./file-session-store.js";
import type { FsyncPolicy } from "./persistence-queue.js";
import { RedisSessionStore } from "./redis-session-store.js";
import { SESSION_VERSION, serializeLine } from "./session-format.js";
import { SessionRecorder } from "./session-recorder.js";
import type { OpenedSession, SessionStore } from "./session-store.js";
import type { RestoredTranscript } from "./session-transcript.js";

/**
 * Persistence of sessions (SPEC B7): pi's session files, written ahead, off the host's event loop.
 * Off unless given on the host or the session.
 */
export interface SessionsOptions {
  /**
   * Put session files directly in this directory (pi's `--session-dir`).
   * @default `<lifelineDir>/sessions/<encoded cwd>/`
   */
  dir?: string;
  /**
   * When appends reach the disk: `"never"` (the OS decides; survives a killed host, not a power
   * loss), `"batch"` (one fdatasync per batched write; a prompt runs only after its sync) or
   * `"always"` (each entry synced alone). @default "batch"
   */
  fsync?: FsyncPolicy;
  /**
   * Keep sessions elsewhere: replaces the file store (`dir` and `fsync` are then the store's
   * business). In fleet mode, sessions without `dir` or `store` are kept in the fleet's Redis
   * (`RedisSessionStore`; docs/fleet.md), where every host of the fleet can continue them.
   */
  store?: SessionStore;
}

/** What {@link SessionPersistence} needs from its host. */
export interface SessionPersistenceOptions {
  /** The host's `sessions` option. */
  sessions: SessionsOptions | false | undefined;
  /** The user directory, or false when the host reads and writes nothing there. */
  lifelineDir: () => string | false;
  cwd: () => string;
}

/** One host's persisted sessions. Main thread only. */
export class SessionPersistence {
  readonly #options: SessionPersistenceOptions;
  #hostStore: SessionStore | undefined;
  /** Fleet mode: where sessions without `dir` or `store` go, once the host joined its fleet. */
  #fleetStore: RedisSessionStore | undefined;
  readonly #open = new Set<SessionRecorder>();
  readonly #closing = new Set<Promise<void>>();

  constructor(options: SessionPersistenceOptions) {
    this.#options = options;
  }

  /**
   * The host joined its fleet: from now on, sessions whose `sessions` option names neither `dir`
   * nor `store` are kept in the fleet's Redis. Called once, before the host's first session opens.
   */
  joinFleet(connection: FleetConnection): void {
    this.#fleetStore = new RedisSessionStore(connection);
  }

  /**
   * The store a session uses: its own `sessions` option over the host's; undefined when off. In
   * fleet mode (after {@link joinFleet}) the fleet's Redis unless `dir` or `store` is given.
   */
  storeFor(sessions: SessionsOptions | false | undefined): SessionStore | undefined {
    const hostSessions = this.#options.sessions;
    const chosen = sessions ?? hostSessions;
    if (chosen === undefined || chosen === false) return undefined;
    if (chosen.store !== undefined) return chosen.store;
    if (chosen.dir === undefined && this.#fleetStore !== undefined) return this.#fleetStore;
    if (chosen === hostSessions) {
      this.#hostStore ??= this.#fileStore(chosen);
      return this.#hostStore;
    }
    return this.#fileStore(chosen);
  }

  /**
   * The store for resuming or listing, which ask for persistence: the file store at its default
   * place unless the call or the host turned persistence off.
   * @throws ERR_INVALID_OPTIONS when it was turned off; `what` names the call.
   */
  requireStore(sessions: SessionsOptions | false | undefined, what: string): SessionStore {
    const turnedOff = sessions === false || (sessions === undefined && this.#options.sessions === false);
    const store = turnedOff ? undefined : (this.storeFor(sessions) ?? this.storeFor({}));
    if (store === undefined) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `${what} needs persistence; it was turned off with sessions: false.`,
      );
    }
    return store;
  }

  /**
   * Starts recording a session: a new stored session (header, model, thinking level, initial
   * messages, as pi starts one), or the resumed one continued from its leaf (its undelivered
   * queued messages stored as delivered now; the model and thinking level recorded when they are
   * not the file's).
   * @throws what the store's `create` throws (ERR_SESSION_LOCKED, ERR_SESSION_FILE).
   */
  async record(
    store: SessionStore,
    sessionId: string,
    opened: SessionOpened,
    start: { messages: readonly AgentMessage[] } | { resumed: OpenedSession; restored: RestoredTranscript },
  ): Promise<SessionRecorder> {
    const { model, thinkingLevel } = opened;
    const onError = (error: Error) =>
      process.emitWarning(`lifeline: session ${sessionId}: ${error.message}`, { code: "LIFELINE_SESSION_FILE" });
    let recorder: SessionRecorder;
    if ("messages" in start) {
      const writer = await store.create({
        type: "session",
        version: SESSION_VERSION,
        id: sessionId,
        timestamp: new Date().toISOString(),
        cwd: this.#options.cwd(),
      });
      recorder = new SessionRecorder(writer, { ids: [], leafId: null, historyIds: [] }, onError);
      recorder.modelChange(model.provider, model.id);
      recorder.thinkingLevelChange(thinkingLevel);
      for (const message of start.messages) recorder.history(message);
    } else {
      const { resumed, restored } = start;
      recorder = new SessionRecorder(
        resumed.writer,
        { ids: resumed.entries.map((entry) => entry.id), leafId: restored.leafId, historyIds: restored.historyIds },
        onError,
      );
      if (restored.model?.provider !== model.provider || restored.model?.id !== model.id) {
        recorder.modelChange(model.provider, model.id);
      }
      if (restored.thinkingLevel !== thinkingLevel) recorder.thinkingLevelChange(thinkingLevel);
      for (const message of restored.undelivered) recorder.history(message);
    }
    this.#open.add(recorder);
    return recorder;
  }

  /**
   * A stored session as pi's v3 JSONL text (header, then entries, one per line), read without
   * opening it for writing, from the store {@link requireStore} picks; `warnings` name the damaged
   * lines left out.
   * @throws ERR_INVALID_OPTIONS (persistence off, a store without `read`, a bad or ambiguous ref),
   *   ERR_SESSION_NOT_FOUND, ERR_SESSION_FILE, ERR_FLEET_UNAVAILABLE.
   */
  async exportSession(ref: string, cwd: string): Promise<{ text: string; warnings: string[] }> {
    const store = this.requireStore(undefined, "exportSession()");
    if (store.read === undefined) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        "exportSession() needs a session store with read(); this host's store has none.",
      );
    }
    const { header, entries, warnings } = await store.read(ref, cwd);
    return { text: [header, ...entries].map(serializeLine).join(""), warnings };
  }

  /** Flushes and releases a session's file; {@link closeAll} waits for it too. */
  close(recorder: SessionRecorder): Promise<void> {
    this.#open.delete(recorder);
    const closing = recorder.close().finally(() => this.#closing.delete(closing));
    this.#closing.add(closing);
    return closing;
  }

  /** Closes every file still open and waits for those closing. */
  async closeAll(): Promise<void> {
    await Promise.all([...[...this.#open].map((recorder) => this.close(recorder)), ...this.#closing]);
  }

  /** @throws ERR_INVALID_OPTIONS when the host has `lifelineDir: false` and `dir` is not given. */
  #fileStore(options: SessionsOptions): FileSessionStore {
    const root = this.#options.lifelineDir();
    if (root === false && options.dir === undefined) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        "sessions: this host has lifelineDir: false, so session files need a place of their own; pass sessions: { dir } (or a store).",
      );
    }
    return new FileSessionStore({ root: root === false ? "." : root, dir: options.dir, fsync: options.fsync });
  }
}
