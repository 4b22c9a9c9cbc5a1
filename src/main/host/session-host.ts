/**
 * The session host: owns the worker pool and the links to its workers, and creates sessions.
 *
 * Each worker runs one long-lived piscina task that serves many sessions over one port (see
 * protocol.ts). Sessions go to the link with the fewest sessions; links are started lazily, up to
 * `threads`. A link whose worker dies is dropped; the next session starts a fresh one.
 */
import { randomUUID } from "node:crypto";
import { availableParallelism } from "node:os";
import type { ResourceLimits } from "node:worker_threads";
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import { z } from "zod";
import { LifelineError } from "../../shared/errors.js";
import type { SessionEvent } from "../../shared/events.js";
import type { ModelRef } from "../../shared/protocol.js";
import { parseSettings, type Settings, type SettingsInput } from "../../shared/settings.js";
import type { AuthStorage } from "../auth/auth-storage.js";
import { FileAuthStorage } from "../auth/file-auth-storage.js";
import { toModelRef } from "../config/model-ref.js";
import { listConfiguredModels } from "../config/models-config.js";
import { checkWorkerEntry, toModuleUrl } from "../config/module-url.js";
import {
  authStorageSchema,
  fn,
  listSessionsOptionsSchema,
  messageSchema,
  modelRefSchema,
  resourceLimitsSchema,
  sessionsOptionsSchema,
  settingsObject,
  timerMs,
  validate,
} from "../config/option-schemas.js";
import { writeUserSettings } from "../config/settings-store.js";
import { HostCoordination } from "../coordination/host-coordination.js";
import { permitBridge } from "../coordination/permit-bridge.js";
import { ExtensionRunner } from "../extensions/extension-runner.js";
import { resolveExtensions } from "../extensions/resolve-extensions.js";
import type { SessionExtensions } from "../extensions/session-extensions.js";
import { abortableSleep } from "../retry/sleep.js";
import { AgentSession, type ContextOverflowHook } from "../session/agent-session.js";
import { assertValidSessionId } from "../session-files/session-format.js";
import { SessionPersistence, type SessionsOptions } from "../session-files/session-persistence.js";
import type { SessionRecorder } from "../session-files/session-recorder.js";
import type { OpenedSession, SessionInfo, SessionStore } from "../session-files/session-store.js";
import { restoreTranscript } from "../session-files/session-transcript.js";
import type { LinkEndpoint } from "../workers/worker-link.js";
import { WorkerRoster } from "../workers/worker-roster.js";
import { HostConfig } from "./host-config.js";
import { sessionInit, withModel } from "./session-init.js";

export { toModuleUrl } from "../config/module-url.js";
export type { SessionsOptions } from "../session-files/session-persistence.js";

/** Options of {@link createSessionHost}. Every field is optional. */
export interface SessionHostOptions {
  /** Worker threads in the pool. @default one less than the cores, at least 1 and at most 4 */
  threads?: number;
  /**
   * Directory of the project settings file `.lifeline/settings.json`, and the one base for relative
   * paths given to the host (`workerEntry`, a session's `workerModule`). @default process.cwd()
   */
  cwd?: string;
  /**
   * User directory holding `settings.json` and `models.json` (whose keys may be `"!command"`s that
   * lifeline runs). `false` reads no user file at all: neither settings file nor models.json; keys
   * then come from `apiKey` or the provider's environment variable. @default $LIFELINE_DIR, else ~/.lifeline
   */
  lifelineDir?: string | false;
  /**
   * The worker script the pool runs: an absolute path, a path relative to `cwd`, a `file:` URL
   * string or a `URL`. Point it at the self-contained bundle (`lifeline/worker`, the file
   * `dist/lifeline-worker.mjs`) copied where worker threads can load it, such as an Electron app's
   * `app.asar.unpacked`. The CLI takes it from `--worker-entry` or `$LIFELINE_WORKER_ENTRY`.
   * @default the package's own `dist/worker/entry.js`
   */
  workerEntry?: string | URL;
  /** Settings applied over both files for every session of this host. */
  settings?: SettingsInput;
  /**
   * Serves sessions their provider keys and is told about usage and rate limits (SPEC R4).
   * @default a {@link FileAuthStorage} of `lifelineDir`'s `auth.json` (none with `lifelineDir: false`)
   */
  authStorage?: AuthStorage;
  /**
   * Longest wait for a worker call before it rejects with ERR_CALL_TIMEOUT (the worker is then taken
   * to be stuck and is terminated). `abort()`, `dispose()` and `close()` wait at most 2 s (or this,
   * if smaller). @default 30000
   */
  callTimeoutMs?: number;
  /**
   * SPEC X8, the watchdog: a worker that sends nothing for this long (it heartbeats every second)
   * has an event loop stuck in synchronous code; it is terminated and its sessions get
   * ERR_WORKER_EXITED with `cause: "hung"`. A worker still starting after this long fails with
   * ERR_WORKER_START. @default 15000
   */
  hangTimeoutMs?: number;
  /**
   * Longest wait for a worker module's `setup()` (and the rest of opening a session) once the
   * worker has started. Past it `createSession` rejects with ERR_WORKER_MODULE; the worker is not
   * killed, and the watchdog allows it this long while a `setup()` runs. @default 60000
   */
  setupTimeoutMs?: number;
  /** Minimum spacing of event batches from a busy worker, in ms. @default 8 */
  batchIntervalMs?: number;
  /** V8 heap limits for each worker; a worker over them exits and its sessions get ERR_WORKER_EXITED. */
  resourceLimits?: ResourceLimits;
  /** Receives errors thrown by `subscribe()` listeners. @default prints to stderr */
  onListenerError?: (error: unknown, event: SessionEvent) => void;
  /**
   * Replaces the piscina pool as the source of worker endpoints. For tests that serve the worker
   * API in-process over a MessageChannel; production code leaves it unset.
   */
  connect?: () => LinkEndpoint;
  /** Replaces the retry sleep (tests with an injected clock). @default a main-thread timer */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /**
   * Persist every session of this host (B7); a session's own `sessions` option overrides it.
   * @default off (an embedded host chooses where its files go)
   */
  sessions?: SessionsOptions | false;
  /**
   * Extensions for every session of this host, in load order: paths of `.ts`/`.js` modules or of
   * directories (as pi resolves them; relative to `cwd`), loaded through jiti. Each session's
   * events reach their `on()` handlers on the main thread; their `registerTool()` tools run in
   * the session's worker (see docs/extensions.md). The only way the library loads extensions:
   * the `extensions` key of settings files is read by the CLI alone.
   * @default none
   */
  extensions?: string[];
}

/** Options of {@link SessionHost.createSession}. */
export interface SessionOptions {
  /**
   * The model: `"provider/id"`, `{ provider, id }`, or a pi-ai `Model` object.
   * @default "demo/demo-1" (the built-in demo model: no key, no network)
   */
  model?: string | ModelRef;
  /** @default "" */
  systemPrompt?: string;
  /** Per-session settings, over the files and the host's settings. */
  settings?: SettingsInput;
  /**
   * API key for the model's provider; sent only to the worker serving this session.
   * @default the provider's `apiKey` in models.json, else its environment variable
   */
  apiKey?: string;
  /**
   * A module loaded in the worker whose `setup` returns tools: an absolute path, a path relative to
   * the host's `cwd`, a `file:` URL string or a `URL`.
   */
  workerModule?: string | URL;
  /** Plain data passed to the worker module's `setup`. */
  workerModuleOptions?: unknown;
  /** @default a random UUID */
  sessionId?: string;
  /** Transcript to start from. @default [] */
  messages?: AgentMessage[];
  /**
   * Replaces lifeline's own compaction on a context overflow (never retried); may return
   * `{ messages }` to install a compacted transcript, and the prompt then goes on once.
   * @default summarize with the session's model (see `compaction` settings)
   */
  onContextOverflow?: ContextOverflowHook;
  /** Persist this session (B7), over the host's `sessions`; `false` turns it off. @default the host's */
  sessions?: SessionsOptions | false;
}

/** Options of {@link SessionHost.resumeSession}: a session's options, without its id and transcript. */
export type ResumeOptions = Omit<SessionOptions, "sessionId" | "messages">;

/** Defaults of the host's timing options (see {@link SessionHostOptions}). */
const DEFAULT_TIMEOUTS = { callTimeoutMs: 30_000, hangTimeoutMs: 15_000, setupTimeoutMs: 60_000 };
/** The bound on `abort()`, `dispose()` and each step of `close()` when a worker does not answer. */
const CONTROL_TIMEOUT_MS = 2000;

// Unknown keys are refused: a misspelt option would otherwise be ignored silently.
const hostOptionsSchema = z.strictObject({
  threads: z.number().int().min(1).max(64).optional(),
  cwd: z.string().min(1).optional(),
  lifelineDir: z.union([z.string().min(1), z.literal(false)]).optional(),
  workerEntry: z.union([z.string().min(1), z.instanceof(URL)]).optional(),
  settings: settingsObject.optional(),
  authStorage: authStorageSchema.optional(),
  callTimeoutMs: timerMs(1).optional(),
  hangTimeoutMs: timerMs(10).optional(),
  setupTimeoutMs: timerMs(1).optional(),
  batchIntervalMs: z.number().min(0).max(1000).optional(),
  resourceLimits: resourceLimitsSchema.optional(),
  onListenerError: fn.optional(),
  connect: fn.optional(),
  sleep: fn.optional(),
  sessions: sessionsOptionsSchema.optional(),
  extensions: z.array(z.string().min(1)).optional(),
});

const sessionOptionsSchema = z.strictObject({
  model: modelRefSchema.optional(),
  systemPrompt: z.string().optional(),
  settings: settingsObject.optional(),
  apiKey: z.string().min(1).optional(),
  workerModule: z
    .union([z.string().min(1), z.instanceof(URL)], { error: "must be a path or a file URL (string or URL)" })
    .optional(),
  workerModuleOptions: z.unknown().optional(),
  sessionId: z.string().min(1).max(200).optional(),
  messages: z.array(messageSchema).optional(),
  onContextOverflow: fn.optional(),
  sessions: sessionsOptionsSchema.optional(),
});

const resumeOptionsSchema = sessionOptionsSchema.omit({ sessionId: true, messages: true });

/** Creates a host. Cheap: the pool and its workers start with the first session. */
/**
 * @throws ERR_INVALID_OPTIONS for a malformed option, ERR_INVALID_SETTINGS for invalid `settings`,
 *   ERR_EXTENSION_LOAD for an extension path that does not exist or holds no extension.
 */
export function createSessionHost(options: SessionHostOptions = {}): SessionHost {
  validate(hostOptionsSchema, options, "createSessionHost options");
  if (options.settings !== undefined) parseSettings(options.settings, "createSessionHost({ settings })");
  refuseSettingsExtensions(options.settings, "createSessionHost");
  if (options.workerEntry !== undefined) checkWorkerEntry(options.workerEntry, options.cwd ?? process.cwd());
  const cwd = options.cwd ?? process.cwd();
  const extensions =
    options.extensions === undefined || options.extensions.length === 0
      ? undefined
      : new ExtensionRunner(resolveExtensions(options.extensions, cwd), cwd);
  return new SessionHost(options, extensions);
}

/** Owns a worker pool and the sessions on it. Create with {@link createSessionHost}. */
export class SessionHost {
  readonly #options: SessionHostOptions;
  readonly #sessions = new Map<string, AgentSession>();
  /** The workers: pool, watchdog, where sessions go (supervision/worker-links.ts). */
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
  #closed = false;
  /** The host's extensions (the `extensions` option); undefined without any. */
  readonly #extensions: ExtensionRunner | undefined;

  /** @internal Use {@link createSessionHost}. */
  constructor(options: SessionHostOptions, extensions?: ExtensionRunner) {
    this.#options = options;
    this.#config = new HostConfig(options);
    this.#extensions = extensions;
    this.#files = new SessionPersistence({
      sessions: options.sessions,
      lifelineDir: () => this.#config.lifelineDir(),
      cwd: () => this.#config.cwd(),
    });
    const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_TIMEOUTS.callTimeoutMs;
    this.#workers = new WorkerRoster({
      threads: options.threads ?? Math.max(1, Math.min(4, availableParallelism() - 1)),
      callTimeoutMs,
      setupTimeoutMs: options.setupTimeoutMs ?? DEFAULT_TIMEOUTS.setupTimeoutMs,
      controlTimeoutMs: Math.min(callTimeoutMs, CONTROL_TIMEOUT_MS),
      hangTimeoutMs: options.hangTimeoutMs ?? DEFAULT_TIMEOUTS.hangTimeoutMs,
      workerEntry:
        options.workerEntry === undefined
          ? new URL("../../worker/entry.js", import.meta.url).href
          : toModuleUrl(options.workerEntry, options.cwd ?? process.cwd()),
      resourceLimits: options.resourceLimits,
      batchIntervalMs: options.batchIntervalMs,
      connect: options.connect,
      isClosed: () => this.#closed,
      permits: permitBridge(this.#coordination, (sessionId) => this.#sessions.get(sessionId)?.permitTarget),
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
    validate(sessionOptionsSchema, options, "createSession options");
    refuseSettingsExtensions(options.settings, "createSession");
    const store = this.#files.storeFor(options.sessions);
    if (store !== undefined && options.sessionId !== undefined) assertValidSessionId(options.sessionId);
    return this.#open(options, store, undefined);
  }

  /**
   * Opens a stored session again (B7) on a worker: its transcript and history as the file has
   * them, its id, and the model it last used unless `options.model` names one. `ref` is a file
   * path, or a session id or a unique prefix of one (this host's cwd first, then all). Damaged
   * lines are skipped with a process warning naming the file and line. Steering or follow-up
   * messages that were accepted but never delivered are appended to the transcript once.
   * Needs persistence on (`sessions` on the host or in `options`).
   * @throws ERR_INVALID_OPTIONS (persistence off, a bad or ambiguous ref), ERR_SESSION_NOT_FOUND,
   *   ERR_SESSION_LOCKED (open for writing elsewhere), ERR_SESSION_FILE, and what createSession throws.
   */
  async resumeSession(ref: string, options: ResumeOptions = {}): Promise<AgentSession> {
    this.#assertOpen();
    if (typeof ref !== "string" || ref === "") {
      throw new LifelineError("ERR_INVALID_OPTIONS", "resumeSession() needs a session file path or id.");
    }
    validate(resumeOptionsSchema, options, "resumeSession options");
    const store = this.#files.requireStore(options.sessions, "resumeSession()");
    const opened = await store.open(ref, this.#config.cwd());
    try {
      for (const warning of opened.warnings) process.emitWarning(warning, { code: "LIFELINE_SESSION_FILE" });
      if (this.#sessions.has(opened.header.id)) {
        throw new LifelineError(
          "ERR_SESSION_LOCKED",
          `Session ${opened.header.id} is already open in this host; use that session object.`,
        );
      }
      return await this.#open({ ...options, sessionId: opened.header.id }, store, opened);
    } catch (error) {
      await opened.writer.close();
      throw error;
    }
  }

  /**
   * Stored sessions of `cwd` (default: the host's cwd), most recently modified first.
   * @throws ERR_INVALID_OPTIONS when persistence is off on the host; ERR_SESSION_FILE.
   */
  async listSessions(options: { cwd?: string } = {}): Promise<SessionInfo[]> {
    validate(listSessionsOptionsSchema, options, "listSessions options");
    return this.#files.requireStore(undefined, "listSessions()").list(options.cwd ?? this.#config.cwd());
  }

  async #open(
    options: SessionOptions,
    store: SessionStore | undefined,
    resumed: OpenedSession | undefined,
  ): Promise<AgentSession> {
    const restored = resumed === undefined ? undefined : restoreTranscript(resumed.entries);
    const fileModel = restored?.model === undefined ? undefined : `${restored.model.provider}/${restored.model.id}`;
    const settings = await this.#config.sessionSettings(options.settings);
    const sessionId = options.sessionId ?? randomUUID();
    const resolved = await this.#config.resolveModel(
      toModelRef(options.model ?? fileModel ?? "demo/demo-1"),
      options.apiKey,
      sessionId,
    );
    this.#assertOpen();
    if (this.#sessions.has(sessionId)) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `A session with id ${sessionId} is already open; pick another id.`,
      );
    }
    const messages =
      restored === undefined ? (options.messages ?? []) : [...restored.messages, ...restored.undelivered];
    const init = sessionInit(sessionId, resolved, settings, messages, options, this.#config.cwd());
    // The main thread's copy of the extensions first: a factory that fails costs no worker call.
    const runner = this.#extensions;
    let extensions: SessionExtensions | undefined;
    if (runner !== undefined) {
      extensions = await runner.open({
        reason: resumed === undefined ? "startup" : "resume",
        timeoutMs: () => settings.extensionHandlerTimeoutMs,
        setupTimeoutMs: this.#options.setupTimeoutMs ?? DEFAULT_TIMEOUTS.setupTimeoutMs,
      });
      init.extensions = runner.forWorker;
    }
    let opening: Awaited<ReturnType<WorkerRoster["open"]>>;
    try {
      this.#assertOpen();
      opening = await this.#workers.open(init);
    } catch (error) {
      if (extensions !== undefined) runner?.close(extensions);
      throw error;
    }
    const { link, opened } = opening;
    let recorder: SessionRecorder | undefined;
    try {
      recorder =
        store === undefined
          ? undefined
          : await this.#files.record(
              store,
              sessionId,
              opened.model,
              resumed === undefined || restored === undefined ? { messages: init.messages } : { resumed, restored },
            );
    } catch (error) {
      void link.control("closeSession", sessionId).catch(() => {});
      if (extensions !== undefined) runner?.close(extensions);
      throw error;
    }
    const session = new AgentSession({
      sessionId,
      link,
      model: opened.model,
      settings,
      messages: init.messages,
      ...(restored === undefined ? {} : { history: [...restored.history, ...restored.undelivered] }),
      recorder,
      authStorage: this.authStorage,
      keyFor: (provider) => this.#config.storedKey(provider, sessionId),
      ...(options.apiKey === undefined ? {} : { pinnedProvider: providerOf(resolved.model) }),
      isProviderExhausted: (provider) => safely(() => this.authStorage?.isExhausted?.(provider)) === true,
      onContextOverflow: options.onContextOverflow,
      onListenerError: this.#options.onListenerError ?? reportListenerError,
      extensions,
      onDisposed: (id) => {
        if (extensions !== undefined) runner?.close(extensions);
        this.#sessions.delete(id);
        safely(() => this.authStorage?.releaseSession?.(id));
        this.#workers.releaseIsolated();
        return recorder === undefined ? undefined : this.#files.close(recorder);
      },
      resolveModel: (ref) => this.#config.resolveModel(ref, undefined, sessionId),
      modelChange: resolved,
      // SPEC X7: opened again on a fresh worker from the main-side transcript; a suspect on its own.
      reopen: async (messages, model, isolate) =>
        (await this.#workers.open(withModel(init, model, messages), isolate)).link,
      coordination: this.#coordination,
      ...(this.#options.sleep === undefined ? {} : { sleep: this.#options.sleep }),
    });
    this.#sessions.set(sessionId, session);
    return session;
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
      builtIn = await link.call("listBuiltInModels");
    } finally {
      release();
    }
    return [...builtIn, ...listConfiguredModels(config)];
  }

  /** Settings as the next session would get them, before per-session overrides. */
  async settings(): Promise<Settings> {
    return this.#config.sessionSettings(undefined);
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

/**
 * The `extensions` key of a settings object is pi's, and the CLI's: the library loads extensions
 * only from the host's `extensions` option, so a settings override that names some would be
 * ignored; say so instead.
 */
function refuseSettingsExtensions(settings: SettingsInput | undefined, call: string): void {
  if (settings?.extensions === undefined) return;
  throw new LifelineError(
    "ERR_INVALID_OPTIONS",
    `Invalid ${call} options: settings.extensions is read by the CLI only; pass the paths as the host option extensions (createSessionHost({ extensions: [...] })).`,
  );
}

function providerOf(model: ModelRef): string {
  return model.provider;
}

/** Runs a storage hook; a throw is ignored (a storage never breaks a session). */
function safely<T>(hook: () => T): T | undefined {
  try {
    return hook();
  } catch {
    return undefined;
  }
}

function reportListenerError(error: unknown, event: SessionEvent): void {
  process.stderr.write(`lifeline: a session listener threw on ${event.type}: ${String(error)}\n`);
}
