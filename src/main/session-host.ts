/**
 * The session host: owns the worker pool and the links to its workers, and creates sessions.
 *
 * Each worker runs one long-lived piscina task that serves many sessions over one port (see
 * protocol.ts). Sessions go to the link with the fewest sessions; links are started lazily, up to
 * `threads`. A link whose worker dies is dropped; the next session starts a fresh one.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { isAbsolute, resolve as resolvePath } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { MessageChannel, type MessagePort, type ResourceLimits } from "node:worker_threads";
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import { Piscina } from "piscina";
import { z } from "zod";
import { LifelineError } from "../shared/errors.js";
import type { SessionEvent } from "../shared/events.js";
import type { ModelChange, ModelRef, SessionInit, SessionOpened } from "../shared/protocol.js";
import { mergeSettings, parseSettings, type Settings, type SettingsInput } from "../shared/settings.js";
import { AgentSession, type ContextOverflowHook, parseModelName } from "./agent-session.js";
import type { AuthStorage } from "./auth-storage.js";
import {
  listConfiguredModels,
  loadModelsConfig,
  type ModelsConfig,
  modelsPath,
  resolveModelRef,
} from "./models-config.js";
import { trackPoolThreads } from "./pool-threads.js";
import { loadSettingsFiles, resolveLifelineDir, writeUserSettings } from "./settings-store.js";
import { type LinkEndpoint, WorkerLink } from "./worker-link.js";

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
  /** Told about usage-limit errors (SPEC R4). @default none */
  authStorage?: AuthStorage;
  /** Longest wait for any single worker call before it rejects with ERR_CALL_TIMEOUT. @default 30000 */
  callTimeoutMs?: number;
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
  /** Called on a context overflow (never retried). @default report and stop */
  onContextOverflow?: ContextOverflowHook;
}

const hostOptionsSchema = z.object({
  threads: z.number().int().min(1).max(64).optional(),
  cwd: z.string().min(1).optional(),
  lifelineDir: z.union([z.string().min(1), z.literal(false)]).optional(),
  workerEntry: z.union([z.string().min(1), z.instanceof(URL)]).optional(),
  callTimeoutMs: z.number().int().min(1).optional(),
  batchIntervalMs: z.number().min(0).max(1000).optional(),
});

const sessionOptionsSchema = z.object({
  model: z
    .union([
      z.string().regex(/^[^/\s]+\/\S+$/, 'use "provider/id", for example "demo/demo-1"'),
      z.looseObject({ provider: z.string().min(1), id: z.string().min(1) }),
    ])
    .optional(),
  systemPrompt: z.string().optional(),
  apiKey: z.string().min(1).optional(),
  sessionId: z.string().min(1).max(200).optional(),
  messages: z.array(z.looseObject({ role: z.string() })).optional(),
});

/** Creates a host. Cheap: the pool and its workers start with the first session. */
/**
 * @throws ERR_INVALID_OPTIONS for a malformed option, ERR_INVALID_SETTINGS for invalid `settings`.
 */
export function createSessionHost(options: SessionHostOptions = {}): SessionHost {
  validate(hostOptionsSchema, options, "createSessionHost options");
  if (options.settings !== undefined) parseSettings(options.settings, "createSessionHost({ settings })");
  if (options.workerEntry !== undefined) checkWorkerEntry(options.workerEntry, options.cwd ?? process.cwd());
  return new SessionHost(options);
}

/** Owns a worker pool and the sessions on it. Create with {@link createSessionHost}. */
export class SessionHost {
  readonly #options: SessionHostOptions;
  readonly #threads: number;
  readonly #links: WorkerLink[] = [];
  readonly #sessions = new Map<string, AgentSession>();
  #pool: Piscina | undefined;
  /** Refs or unrefs piscina's own handle of a link's worker (keep-alive.ts). */
  #poolThreads: ((port: MessagePort, referenced: boolean) => void) | undefined;
  #fileSettings: Promise<SettingsInput> | undefined;
  #modelsConfig: Promise<ModelsConfig> | undefined;
  #closed = false;

  /** @internal Use {@link createSessionHost}. */
  constructor(options: SessionHostOptions) {
    this.#options = options;
    this.#threads = options.threads ?? Math.max(1, Math.min(4, availableParallelism() - 1));
  }

  /** Open sessions. */
  get sessionCount(): number {
    return this.#sessions.size;
  }

  /** Live worker links (one per worker thread in use). */
  get workerCount(): number {
    return this.#links.filter((link) => !link.isDead).length;
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
    const settings = await this.#sessionSettings(options.settings);
    const resolved = await this.#resolveModel(toModelRef(options.model ?? "demo/demo-1"), options.apiKey);
    this.#assertOpen();
    const sessionId = options.sessionId ?? randomUUID();
    if (this.#sessions.has(sessionId)) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `A session with id ${sessionId} is already open; pick another id.`,
      );
    }
    const init: SessionInit = {
      sessionId,
      model: resolved.model,
      systemPrompt: options.systemPrompt ?? "",
      messages: options.messages ?? [],
      provider: { ...settings.retry.provider },
    };
    if (resolved.apiKey !== undefined) init.apiKey = resolved.apiKey;
    if (resolved.authHeader === true) init.authHeader = true;
    if (options.workerModule !== undefined) init.workerModule = toModuleUrl(options.workerModule, this.#cwd());
    if (options.workerModuleOptions !== undefined) init.workerModuleOptions = options.workerModuleOptions;
    const { link, release } = await this.#pickLink();
    let opened: SessionOpened;
    try {
      this.#assertOpen();
      opened = await link.call("openSession", init);
    } finally {
      release();
    }
    link.threadId ??= opened.threadId;
    if (this.#closed) {
      void link.call("closeSession", sessionId).catch(() => {});
      this.#assertOpen();
    }
    const session = new AgentSession({
      sessionId,
      link,
      model: opened.model,
      settings,
      messages: init.messages,
      authStorage: this.#options.authStorage,
      onContextOverflow: options.onContextOverflow,
      onListenerError: this.#options.onListenerError ?? reportListenerError,
      onDisposed: (id) => this.#sessions.delete(id),
      resolveModel: (ref) => this.#resolveModel(ref, undefined),
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
    const config = await this.#models();
    const { link, release } = await this.#pickLink();
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
    return this.#sessionSettings(undefined);
  }

  /** Forgets the cached settings and models files; the next session reads them again. */
  reloadSettings(): void {
    this.#fileSettings = undefined;
    this.#modelsConfig = undefined;
  }

  /**
   * B5: persists settings to the user's `settings.json` (for example `{ retry: { enabled: false } }`).
   * Open sessions keep their own settings; new sessions read the file again.
   */
  async writeUserSettings(patch: SettingsInput): Promise<void> {
    const dir = this.#lifelineDir();
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
   * host keeps the process alive. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#sessions.values()].map((session) => session.dispose()));
    await Promise.all(this.#links.map((link) => link.close(2000)));
    this.#links.length = 0;
    await this.#pool?.destroy();
    this.#pool = undefined;
  }

  #assertOpen(): void {
    if (this.#closed) throw new LifelineError("ERR_HOST_CLOSED", "This session host is closed; create a new host.");
  }

  /** The user directory, or false when the host reads no user files. */
  #lifelineDir(): string | false {
    return this.#options.lifelineDir ?? resolveLifelineDir();
  }

  /** The one base for relative paths given to the host. */
  #cwd(): string {
    return this.#options.cwd ?? process.cwd();
  }

  async #resolveModel(ref: ModelRef, apiKey: string | undefined): Promise<ModelChange> {
    return resolveModelRef(ref, await this.#models(), apiKey);
  }

  /** The user's models.json, read once and kept until {@link reloadSettings}; a failed read is retried. */
  async #models(): Promise<ModelsConfig> {
    const dir = this.#lifelineDir();
    this.#modelsConfig ??= dir === false ? Promise.resolve(NO_MODELS_FILE) : loadModelsConfig(modelsPath(dir));
    try {
      return await this.#modelsConfig;
    } catch (error) {
      this.#modelsConfig = undefined;
      throw error;
    }
  }

  async #sessionSettings(overrides: SettingsInput | undefined): Promise<Settings> {
    const dir = this.#lifelineDir();
    this.#fileSettings ??= dir === false ? Promise.resolve({}) : loadSettingsFiles(dir, this.#cwd());
    let files: SettingsInput;
    try {
      files = await this.#fileSettings;
    } catch (error) {
      this.#fileSettings = undefined;
      throw error;
    }
    if (overrides !== undefined) parseSettings(overrides, "createSession({ settings })");
    return parseSettings(mergeSettings(files, this.#options.settings, overrides), "the merged settings");
  }

  /** Chooses the least-loaded link (starting one if under `threads`) and reserves a place on it. */
  async #pickLink(): Promise<{ link: WorkerLink; release: () => void }> {
    const dead = this.#links.filter((link) => link.isDead);
    if (dead.length > 0) {
      // See WorkerLink.released: let the pool drop dead workers before asking it for a new one.
      await Promise.race([Promise.all(dead.map((link) => link.released)), unrefDelay(5000)]);
      for (const link of dead) {
        // A concurrent createSession may have pruned it already.
        const index = this.#links.indexOf(link);
        if (index >= 0) this.#links.splice(index, 1);
      }
    }
    let best: WorkerLink | undefined;
    for (const link of this.#links) {
      if (link.isDead) continue;
      if (best === undefined || link.clientCount < best.clientCount) best = link;
    }
    if (best !== undefined && (best.clientCount === 0 || this.#links.length >= this.#threads)) {
      return { link: best, release: best.reserve() };
    }
    const link = new WorkerLink(this.#connect(), {
      callTimeoutMs: this.#options.callTimeoutMs ?? 30_000,
      onProtocolError: (reason) => process.emitWarning(`lifeline: ignored an invalid worker message (${reason})`),
      onUnresponsive: (hung) => this.#terminate(hung),
    });
    this.#links.push(link);
    return { link, release: link.reserve() };
  }

  /**
   * X5 for a worker stuck in synchronous code: calls to it time out but it never exits, so its
   * sessions would wait forever. Terminating the thread makes piscina settle the link's task, and
   * the usual exit path rejects everything the worker held.
   */
  #terminate(link: WorkerLink): void {
    const worker = this.#pool?.threads.find((thread) => thread.threadId === link.threadId);
    if (worker === undefined) {
      link.abandon("it stopped answering");
      return;
    }
    void worker.terminate();
  }

  /** The worker script as the file URL piscina loads. */
  #workerEntry(): string {
    const entry = this.#options.workerEntry;
    return entry === undefined ? new URL("../worker/entry.js", import.meta.url).href : toModuleUrl(entry, this.#cwd());
  }

  #connect(): LinkEndpoint {
    if (this.#options.connect !== undefined) return this.#options.connect();
    this.#pool ??= new Piscina({
      filename: this.#workerEntry(),
      minThreads: 0,
      maxThreads: this.#threads,
      // One link task per worker: each long-lived task gets a thread of its own.
      concurrentTasksPerWorker: 1,
      idleTimeout: 1000,
      // Sessions keep timers and port listeners alive between calls; the worker must never park.
      atomics: "disabled",
      ...(this.#options.resourceLimits === undefined ? {} : { resourceLimits: this.#options.resourceLimits }),
    });
    this.#poolThreads ??= trackPoolThreads(this.#pool);
    const { port1, port2 } = new MessageChannel();
    const task: { port: typeof port2; batchIntervalMs?: number } = { port: port2 };
    if (this.#options.batchIntervalMs !== undefined) task.batchIntervalMs = this.#options.batchIntervalMs;
    const done = this.#pool.run(task, { transferList: [port2] });
    const poolThreads = this.#poolThreads;
    return { port: port1, done, setReferenced: (referenced) => poolThreads(port2, referenced) };
  }
}

/** What a host with `lifelineDir: false` uses instead of models.json: no custom models. */
const NO_MODELS_FILE: ModelsConfig = { path: "models.json (not read: the host has lifelineDir: false)", providers: {} };

function unrefDelay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function toModelRef(model: string | ModelRef): ModelRef {
  return typeof model === "string" ? parseModelName(model) : model;
}

/**
 * A module location as the file URL a worker can import: a `URL` or `file:` string as given, a path
 * resolved against `base` (the host's `cwd`). Paths go through pathToFileURL, so `#`, `?`, spaces
 * and Windows drive letters (`C:\\x`, which `new URL` would read as a `c:` scheme) stay part of the path.
 */
export function toModuleUrl(module: string | URL, base: string): string {
  if (module instanceof URL) return module.href;
  if (/^file:/i.test(module)) return new URL(module).href;
  return pathToFileURL(isAbsolute(module) ? module : resolvePath(base, module)).href;
}

/**
 * A missing worker script would only show when the first worker starts, as an error from inside
 * the pool; say it at once, with the path it was looked for at.
 */
function checkWorkerEntry(entry: string | URL, cwd: string): void {
  const url = toModuleUrl(entry, cwd);
  if (!url.startsWith("file:")) return;
  const path = fileURLToPath(url);
  if (existsSync(path)) return;
  throw new LifelineError(
    "ERR_INVALID_OPTIONS",
    `Invalid createSessionHost options: workerEntry ${path} does not exist. Copy the package's worker bundle (lifeline/worker, dist/lifeline-worker.mjs) there, or fix the path (a relative one is taken from the host's cwd, ${cwd}).`,
  );
}

function validate(schema: z.ZodType, value: unknown, what: string): void {
  const result = schema.safeParse(value);
  if (result.success) return;
  const problems = result.error.issues.map(
    (issue) => `${issue.path.map(String).join(".") || "(root)"}: ${issue.message}`,
  );
  throw new LifelineError("ERR_INVALID_OPTIONS", `Invalid ${what}: ${problems.join("; ")}.`);
}

function reportListenerError(error: unknown, event: SessionEvent): void {
  process.stderr.write(`lifeline: a session listener threw on ${event.type}: ${String(error)}\n`);
}
