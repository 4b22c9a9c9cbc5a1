/**
 * The session host, where an embedding program starts: `createSessionHost` checks the options and
 * loads the host's extensions; `SessionHost` owns the host's parts (worker roster, session files,
 * configuration sources, B8 coordination; workers start only when first needed), opens and resumes
 * sessions through its {@link SessionAssembly}, keeps the open ones by id, and closes it all in
 * order. Placing sessions on workers, and a worker's death, are the roster's (workers/worker-roster.ts).
 */
import { basename, resolve } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Api, Model } from "@mariozechner/pi-ai";
import { DEMO_PROVIDER } from "../../shared/demo-models.js";
import { LifelineError } from "../../shared/errors.js";
import type { Settings, SettingsInput } from "../../shared/settings.js";
import type { AuthStorage } from "../auth/auth-storage.js";
import { catalogueQuery, listConfiguredModels } from "../config/models-config.js";
import { toModuleUrl } from "../config/module-url.js";
import { forkArgumentsSchema, htmlPathSchema, listSessionsOptionsSchema, validate } from "../config/option-schemas.js";
import { writeUserSettings } from "../config/settings-store.js";
import { HostCoordination } from "../coordination/host-coordination.js";
import { permitBridge } from "../coordination/permit-bridge.js";
import { ExtensionRunner } from "../extensions/extension-runner.js";
import { resolveExtensions } from "../extensions/resolve-extensions.js";
import type { FleetConnection } from "../redis/fleet-connection.js";
import { abortableSleep } from "../retry/sleep.js";
import type { AgentSession } from "../session/agent-session.js";
import { writeSessionHtml } from "../session/session-html.js";
import type { ForkMessage, ForkPosition } from "../session-files/session-fork.js";
import { assertValidSessionId } from "../session-files/session-format.js";
import { SessionPersistence } from "../session-files/session-persistence.js";
import type { SessionInfo } from "../session-files/session-store.js";
import { HostTelemetry } from "../telemetry/host-telemetry.js";
import { TurnPacer } from "../workers/turn-pacer.js";
import { WorkerRoster } from "../workers/worker-roster.js";
import { HostConfig } from "./host-config.js";
import { HostFleet } from "./host-fleet.js";
import { hostInternals } from "./host-internals.js";
import {
  CONTROL_TIMEOUT_MS,
  checkHostOptions,
  checkResumeOptions,
  checkSessionOptions,
  HOST_DEFAULTS,
  type ResumeOptions,
  type SessionHostOptions,
  type SessionOptions,
} from "./host-options.js";
import { SessionAssembly } from "./session-assembly.js";
import { type ForkHost, type ForkResult, forkSession, sessionForkMessages } from "./session-forks.js";

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
  /** The workers: pool, watchdog, where sessions go (workers/worker-roster.ts). */
  readonly #workers: WorkerRoster;
  /** Session files (B7): stores, recorders, and closing them before `close()` resolves. */
  readonly #files: SessionPersistence;
  /**
   * B8: retry budgets, provider gates and request permits shared by every session of this host.
   * Real time always: a gate's reopening is the server's clock, not a test's retry sleep.
   */
  readonly #coordination = new HostCoordination({ now: () => performance.now(), sleep: abortableSleep });
  /** Settings files, models.json, the auth storage, model resolution (host-config.ts). */
  readonly #config: HostConfig;
  /** Builds each new or resumed session from the parts above (session-assembly.ts). */
  readonly #assembly: SessionAssembly;
  /** Fleet mode: the connection to the fleet's Redis, made with the first session (host-fleet.ts). */
  readonly #fleet: HostFleet;
  #closed = false;
  /** B9: the host's metrics and spans (telemetry/host-telemetry.ts); records nothing without a provider. */
  readonly #telemetry: HostTelemetry;
  /** The host's extensions (the `extensions` option); undefined without any. */
  readonly #extensions: ExtensionRunner | undefined;

  /** @internal Use {@link createSessionHost}. */
  constructor(options: SessionHostOptions, extensions?: ExtensionRunner) {
    this.#config = new HostConfig(options);
    this.#extensions = extensions;
    this.#fleet = new HostFleet(
      () => this.#config.sessionSettings(undefined),
      async (connection) => {
        this.#files.joinFleet(connection);
        // B8 fleet-wide; a fallback to the host's own decisions and the rejoin are told to its sessions.
        await this.#coordination.joinFleet(connection, (event) => {
          for (const session of this.#sessions.values()) session.announceCoordination(event);
        });
      },
    );
    this.#files = new SessionPersistence({
      sessions: options.sessions,
      lifelineDir: () => this.#config.lifelineDir(),
      cwd: () => this.#config.cwd(),
    });
    this.#telemetry = new HostTelemetry(options.telemetry, {
      sessionCount: () => this.#sessions.size,
      coordination: () => this.#coordination.snapshot(),
      workerThreads: () => this.#workers.threads,
      watchWorkerLoops: () => this.#workers.watchEventLoops(),
    });
    const callTimeoutMs = options.callTimeoutMs ?? HOST_DEFAULTS.callTimeoutMs;
    // One pacer for the host's bursts: prompts admitted, retries woken, run ops' answers settled.
    const pacer = new TurnPacer();
    this.#workers = new WorkerRoster({
      threads: options.threads ?? HOST_DEFAULTS.threads(),
      callTimeoutMs,
      setupTimeoutMs: options.setupTimeoutMs ?? HOST_DEFAULTS.setupTimeoutMs,
      controlTimeoutMs: Math.min(callTimeoutMs, CONTROL_TIMEOUT_MS),
      hangTimeoutMs: options.hangTimeoutMs ?? HOST_DEFAULTS.hangTimeoutMs,
      workerEntry:
        options.workerEntry === undefined
          ? new URL("../../worker/entry.js", import.meta.url).href
          : toModuleUrl(options.workerEntry, options.cwd ?? process.cwd()),
      resourceLimits: options.resourceLimits,
      batchIntervalMs: options.batchIntervalMs,
      workerPriority: options.workerPriority,
      connect: hostInternals(options).connect,
      isClosed: () => this.#closed,
      permits: permitBridge(this.#coordination, (sessionId) => this.#sessions.get(sessionId)?.permitTarget),
      onWorkerExit: (cause) => this.#telemetry.workerExited(cause),
      onLoopDelay: (threadId, delay) => this.#telemetry.workerLoopDelay(threadId, delay),
      ui: options.extensionUi,
      pacer,
    });
    this.#assembly = new SessionAssembly({
      options,
      config: this.#config,
      workers: this.#workers,
      files: this.#files,
      coordination: this.#coordination,
      fleet: this.#fleet,
      extensions,
      telemetry: this.#telemetry,
      pacer,
      sessions: this.#sessions,
      assertOpen: () => this.#assertOpen(),
    });
  }

  /** Open sessions. */
  get sessionCount(): number {
    return this.#sessions.size;
  }

  /** Live worker links (one per worker thread in use). */
  get workerCount(): number {
    return this.#workers.workerCount;
  }

  /** Workers the watchdog has terminated as hung since the host was created (SPEC X8). */
  get watchdogTerminations(): number {
    return this.#workers.watchdogTerminations;
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
    // Fleet mode decides where sessions are kept (the fleet's Redis), so it comes first.
    await this.#fleet.connection();
    const store = this.#files.storeFor(options.sessions);
    if (store !== undefined && options.sessionId !== undefined) assertValidSessionId(options.sessionId);
    return this.#assembly.create(options, store);
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
    await this.#fleet.connection();
    const store = this.#files.requireStore(options.sessions, "resumeSession()");
    return this.#assembly.resume(store, ref, options);
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
    validate(listSessionsOptionsSchema, options, "listSessions options");
    await this.#fleet.connection();
    const cwd = options.allDirectories === true ? undefined : (options.cwd ?? this.#config.cwd());
    return this.#files.requireStore(undefined, "listSessions()").list(cwd);
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
    if (typeof ref !== "string" || ref === "") {
      throw new LifelineError("ERR_INVALID_OPTIONS", "exportSession() needs a session file path or id.");
    }
    await this.#fleet.connection();
    return this.#files.exportSession(ref, this.#config.cwd());
  }

  /**
   * pi's `/fork`: a new persisted session holding `session`'s path up to (`position: "before"`,
   * the default) the user message `entryId`, or up to and including the entry (`"at"`); its
   * header's `parentSession` names `session`'s file. Opened and returned with the user message's
   * text (for `"before"`). `session` stays open. Needs `session` persisted in this host's store.
   * @throws ERR_INVALID_OPTIONS (not persisted, an entry that is not one), and what
   *   `resumeSession` throws.
   */
  async forkSession(
    session: AgentSession,
    entryId: string,
    options: { position?: ForkPosition } = {},
  ): Promise<ForkResult> {
    this.#assertOpen();
    validate(forkArgumentsSchema, { entryId, ...options }, "forkSession() arguments");
    return forkSession(this.#forkHost(), session, entryId, options.position ?? "before");
  }

  /** pi's clone: {@link forkSession} at `session`'s last entry (a copy under a new id). */
  async cloneSession(session: AgentSession): Promise<AgentSession> {
    this.#assertOpen();
    return (await forkSession(this.#forkHost(), session, undefined, "at")).session;
  }

  /** The user messages of persisted `session` a fork may start from: `{ entryId, text }`, in order. */
  async forkMessages(session: AgentSession): Promise<ForkMessage[]> {
    this.#assertOpen();
    return sessionForkMessages(this.#forkHost(), session);
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
    validate(htmlPathSchema, outputPath, "exportHtml() outputPath", "outputPath");
    const file = session.sessionFile;
    const name = file === undefined ? session.id : basename(file, ".jsonl");
    const path = resolve(this.#config.cwd(), outputPath ?? `lifeline-session-${name}.html`);
    const { id, sessionName, model, history, stats } = session;
    await writeSessionHtml({ id, sessionFile: file, sessionName, model, history, stats }, path);
    return path;
  }

  #forkHost(): ForkHost {
    return {
      store: (what) => this.#files.requireStore(undefined, what),
      cwd: () => this.#config.cwd(),
      resume: (path) => this.resumeSession(path),
    };
  }

  /**
   * Models a session can use now: the worker's built-in demo models, every model in models.json,
   * and pi-ai's catalogue for providers that have a key (environment or models.json), with
   * models.json overrides applied. Starts a worker if none is running.
   * @throws ERR_INVALID_MODELS for a malformed models.json; ERR_HOST_CLOSED.
   */
  async availableModels(): Promise<Model<Api>[]> {
    this.#assertOpen();
    const config = await this.#config.models();
    const { link, release } = await this.#workers.pick();
    let builtIn: Model<Api>[];
    try {
      builtIn = await link.call("listBuiltInModels", catalogueQuery(config));
    } finally {
      release();
    }
    // The worker's own (demo) models first, then models.json's, then pi-ai's catalogue.
    const own = builtIn.filter((model) => model.provider === DEMO_PROVIDER);
    const catalogue = builtIn.filter((model) => model.provider !== DEMO_PROVIDER);
    return [...own, ...listConfiguredModels(config), ...catalogue];
  }

  /** Settings as the next session would get them, before per-session overrides. */
  async settings(): Promise<Settings> {
    return this.#config.sessionSettings(undefined);
  }

  /**
   * @internal Fleet mode: the host's one connection to its fleet's Redis (made on the first call,
   * as the first session makes it), which `serveFleet` shares instead of opening a second one;
   * undefined when the host is in no fleet. The host owns it: `close()` closes it.
   * @throws ERR_FLEET_UNAVAILABLE, ERR_INVALID_SETTINGS (see `connectFleet`).
   */
  fleetConnection(): Promise<FleetConnection | undefined> {
    return this.#fleet.connection();
  }

  /**
   * @internal B9, fleet mode: the next prompt of session `sessionId` continues the trace named by
   * `traceparent` (W3C), not the context its `prompt()` is called in. Ignored when the host records
   * no spans or the value is malformed.
   */
  continueTrace(sessionId: string, traceparent: string | undefined): void {
    this.#telemetry.continueTrace(sessionId, traceparent);
  }

  /** Forgets the cached settings and models files; the next session reads them again. */
  reloadSettings(): void {
    this.#config.reload();
  }

  /**
   * B5: persists settings to the user's `settings.json` (for example `{ retry: { enabled: false } }`).
   * Open sessions keep their own settings; new sessions read the file again.
   */
  async writeUserSettings(patch: SettingsInput): Promise<void> {
    const dir = this.#config.lifelineDir();
    if (dir === false) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        "This host was created with lifelineDir: false, so it has no settings file to write; pass a directory as lifelineDir, or pass settings to createSessionHost instead.",
      );
    }
    await writeUserSettings(patch, dir);
    this.reloadSettings();
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
    // Concurrently: each worker gets its sessions' closeSession calls before its shutdown (one
    // FIFO port), and a stuck worker costs one control bound, not one per step.
    await Promise.all([
      ...[...this.#sessions.values()].map((session) => session.dispose()),
      this.#workers.closeLinks(),
    ]);
    // Extensions' handlers see the sessions' last events and session_shutdown (bounded).
    await this.#extensions?.drain();
    // Every accepted entry is on disk (per the fsync policy) and every lock released.
    await this.#files.closeAll();
    await this.#workers.destroy();
    this.#coordination.leaveFleet();
    this.#telemetry.close();
    await this.#fleet.close();
  }

  #assertOpen(): void {
    if (this.#closed) throw new LifelineError("ERR_HOST_CLOSED", "This session host is closed; create a new host.");
  }

  /**
   * The storage serving keys and told about limits: the host's `authStorage`, else the
   * `auth.json` of the lifeline directory (none with `lifelineDir: false`).
   */
  get authStorage(): AuthStorage | undefined {
    return this.#config.authStorage;
  }
}
