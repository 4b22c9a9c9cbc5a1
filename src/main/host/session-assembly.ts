/**
 * How `SessionHost` builds a session, new (`createSession`) or read back from its file
 * (`resumeSession`): the transcript restored from the file, the merged settings, the model and its
 * key, the init the worker opens the session from, the main thread's copy of the extensions, the
 * session opened on a worker, its recorder (B7), and the {@link SessionSetup} handed to the new
 * `AgentSession`, which then joins the host's open sessions. A failure while opening on the worker
 * or creating the recorder closes what was opened before it (the extensions, the worker's session);
 * any failure of a resume closes its file again.
 */
import { randomUUID } from "node:crypto";
import { LifelineError } from "../../shared/errors.js";
import { toModelRef } from "../config/model-ref.js";
import type { HostCoordination } from "../coordination/host-coordination.js";
import type { ExtensionRunner } from "../extensions/extension-runner.js";
import type { SessionExtensions } from "../extensions/session-extensions.js";
import { AgentSession } from "../session/agent-session.js";
import type { SessionSetup } from "../session/session-setup.js";
import { sharedModel } from "../session/state/session-model.js";
import { assertValidSessionId } from "../session-files/session-format.js";
import type { SessionPersistence } from "../session-files/session-persistence.js";
import type { SessionRecorder } from "../session-files/session-recorder.js";
import type { OpenedSession, SessionStore } from "../session-files/session-store.js";
import { summarizeEntries } from "../session-files/session-summary.js";
import { restoreTranscript } from "../session-files/session-transcript.js";
import type { HostTelemetry } from "../telemetry/host-telemetry.js";
import type { TurnPacer } from "../workers/turn-pacer.js";
import type { WorkerRoster } from "../workers/worker-roster.js";
import type { HostConfig } from "./host-config.js";
import type { HostFleet } from "./host-fleet.js";
import { hostInternals } from "./host-internals.js";
import {
  HOST_DEFAULTS,
  type ResumeOptions,
  SESSION_DEFAULTS,
  type SessionHostOptions,
  type SessionOptions,
} from "./host-options.js";
import { sessionInit, withModel } from "./session-init.js";

/** The host's parts a session is assembled from; each is the host's and outlives its sessions. */
export interface SessionAssemblyParts {
  /** The host's options, read at each open (`setupTimeoutMs`, `onListenerError`, a test's `sleep`). */
  options: SessionHostOptions;
  config: HostConfig;
  workers: WorkerRoster;
  files: SessionPersistence;
  coordination: HostCoordination;
  /** Fleet mode: connected before a session opens, so an unreachable Redis fails the open. */
  fleet: HostFleet;
  /** The host's extensions (the `extensions` option); undefined without any. */
  extensions: ExtensionRunner | undefined;
  /** B9: gives each session its telemetry, when the host records. */
  telemetry: HostTelemetry;
  /** Paces the posting of bursts of runs (a thousand prompts started in one loop) over macrotasks. */
  pacer: TurnPacer;
  /**
   * The host's open sessions by id: a new session is added in the same turn it is created (so that
   * `close()` and the permit bridge see it at once), and removed by its `onDisposed`.
   */
  sessions: Map<string, AgentSession>;
  /** @throws ERR_HOST_CLOSED once the host is closed; asked again after every wait. */
  assertOpen: () => void;
}

/** One host's way of opening sessions; see the file comment. Main thread only. */
export class SessionAssembly {
  readonly #parts: SessionAssemblyParts;

  constructor(parts: SessionAssemblyParts) {
    this.#parts = parts;
  }

  /**
   * Opens a new session: `options.sessionId` or a random UUID, recorded from its first entry by the
   * store `options.sessions` names when persistence is on. The caller has checked `options`.
   * @throws what the steps throw: ERR_FLEET_UNAVAILABLE (fleet mode), ERR_INVALID_SETTINGS, ERR_INVALID_MODELS, ERR_UNKNOWN_MODEL,
   *   ERR_MISSING_API_KEY, ERR_EXTENSION_LOAD, ERR_WORKER_START, ERR_WORKER_MODULE, ERR_WORKER_EXITED,
   *   ERR_SESSION_FILE; ERR_HOST_CLOSED when the host closed meanwhile; ERR_INVALID_OPTIONS when a
   *   session of that id is already open.
   */
  async create(options: SessionOptions): Promise<AgentSession> {
    // Fleet mode decides where sessions are kept (the fleet's Redis), so it comes first.
    await this.#parts.fleet.connection();
    const store = this.#parts.files.storeFor(options.sessions);
    if (store !== undefined && options.sessionId !== undefined) assertValidSessionId(options.sessionId);
    return this.#open(options, store, undefined);
  }

  /**
   * Opens the stored session `ref` (a file path, or an id or unique prefix of one) of the store
   * `options.sessions` names again (ERR_INVALID_OPTIONS with persistence off):
   * its file's warnings (damaged lines skipped) become process warnings, and its id must not be
   * open in this host already. On any failure the file is closed (and unlocked) again.
   * @throws what `store.open` throws (ERR_INVALID_OPTIONS, ERR_SESSION_NOT_FOUND, ERR_SESSION_LOCKED,
   *   ERR_SESSION_FILE), ERR_SESSION_LOCKED when it is open in this host, and what {@link create} throws.
   */
  async resume(ref: string, options: ResumeOptions): Promise<AgentSession> {
    await this.#parts.fleet.connection();
    const store = this.#parts.files.requireStore(options.sessions, "resumeSession()");
    const opened = await store.open(ref, this.#parts.config.cwd());
    try {
      for (const warning of opened.warnings) process.emitWarning(warning, { code: "LIFELINE_SESSION_FILE" });
      if (this.#parts.sessions.has(opened.header.id)) {
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

  /** Both: `resumed` is the stored session being opened again, undefined for a new one. */
  async #open(
    options: SessionOptions,
    store: SessionStore | undefined,
    resumed: OpenedSession | undefined,
  ): Promise<AgentSession> {
    const { config, workers, files, sessions } = this.#parts;
    const fleet = await this.#parts.fleet.connection();
    const restored = resumed === undefined ? undefined : restoreTranscript(resumed.entries);
    const fileModel = restored?.model === undefined ? undefined : `${restored.model.provider}/${restored.model.id}`;
    const settings = await config.sessionSettings(options.settings);
    const sessionId = options.sessionId ?? randomUUID();
    const resolved = await config.resolveModel(
      toModelRef(options.model ?? fileModel ?? SESSION_DEFAULTS.model),
      options.apiKey,
      sessionId,
    );
    this.#parts.assertOpen();
    if (sessions.has(sessionId)) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `A session with id ${sessionId} is already open; pick another id.`,
      );
    }
    const telemetry = await this.#parts.telemetry.openSession(sessionId);
    telemetry?.keyServed(resolved.model.provider, resolved.apiKey);
    const messages =
      restored === undefined ? (options.messages ?? []) : [...restored.messages, ...restored.undelivered];
    const init = sessionInit(sessionId, resolved, settings, messages, options, config.cwd(), restored?.thinkingLevel);
    // Fleet mode: another host may continue this session, so a tool runs only once its call is stored.
    if (fleet !== undefined && store !== undefined) init.storeToolCalls = true;
    // The main thread's copy of the extensions first: a factory that fails costs no worker call.
    const runner = this.#parts.extensions;
    let extensions: SessionExtensions | undefined;
    if (runner !== undefined) {
      extensions = await runner.open({
        reason: resumed === undefined ? "startup" : "resume",
        timeoutMs: () => settings.extensionHandlerTimeoutMs,
        setupTimeoutMs: this.#parts.options.setupTimeoutMs ?? HOST_DEFAULTS.setupTimeoutMs,
      });
      init.extensions = runner.forWorker;
      if (runner.hasUI) init.hasUI = true;
    }
    let opening: Awaited<ReturnType<WorkerRoster["open"]>>;
    try {
      this.#parts.assertOpen();
      opening = await workers.open(init);
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
          : await files.record(
              store,
              sessionId,
              opened,
              resumed === undefined || restored === undefined ? { messages: init.messages } : { resumed, restored },
            );
    } catch (error) {
      void link.control("closeSession", sessionId).catch(() => {});
      if (extensions !== undefined) runner?.close(extensions);
      throw error;
    }
    const { sleep } = hostInternals(this.#parts.options);
    const setup: SessionSetup = {
      start: {
        sessionId,
        link,
        model: sharedModel(opened.model),
        modelChange: resolved,
        thinkingLevel: opened.thinkingLevel,
        settings,
        messages: init.messages,
        ...(restored === undefined
          ? {}
          : {
              history: [...restored.history, ...restored.undelivered],
              prompts: restored.prompts,
              ...(restored.lastPromptId === undefined ? {} : { lastPromptId: restored.lastPromptId }),
              ...storedName(resumed),
            }),
      },
      host: {
        recorder,
        credentials: {
          authStorage: config.authStorage,
          keyFor: (provider) => {
            const key = config.storedKey(provider, sessionId);
            telemetry?.keyServed(provider, key);
            return key;
          },
          ...(options.apiKey === undefined ? {} : { pinnedProvider: resolved.model.provider }),
          isProviderExhausted: (provider) => safely(() => config.authStorage?.isExhausted?.(provider)) === true,
          resolveModel: (ref) => config.resolveModel(ref, undefined, sessionId),
        },
        coordination: this.#parts.coordination,
        extensions,
        onContextOverflow: options.onContextOverflow,
        onListenerError: this.#parts.options.onListenerError ?? HOST_DEFAULTS.onListenerError,
        onDisposed: (id) => {
          telemetry?.close();
          if (extensions !== undefined) runner?.close(extensions);
          sessions.delete(id);
          safely(() => config.authStorage?.releaseSession?.(id));
          workers.releaseIsolated();
          return recorder === undefined ? undefined : files.close(recorder);
        },
        // SPEC X7: opened again on a fresh worker from the main-side transcript; a suspect on its own.
        reopen: async (messages, model, thinkingLevel, isolate) =>
          (await workers.open(withModel(init, model, messages, thinkingLevel), isolate)).link,
        ...(sleep === undefined ? {} : { sleep }),
        pacer: this.#parts.pacer,
        telemetry,
      },
    };
    const session = new AgentSession(setup);
    // An ordinary listener, first after the extensions' (B9): it records, and never throws.
    if (telemetry !== undefined) session.subscribe((event) => telemetry.handle(event));
    sessions.set(sessionId, session);
    return session;
  }
}

/** pi's session name of a stored session: its last `session_info` entry's, blank meaning none. */
function storedName(stored: OpenedSession | undefined): { name?: string } {
  const name = stored === undefined ? undefined : summarizeEntries(stored.entries).name?.trim();
  return name === undefined || name === "" ? {} : { name };
}

/** Runs a storage hook; a throw is ignored (a storage never breaks a session). */
function safely<T>(hook: () => T): T | undefined {
  try {
    return hook();
  } catch {
    return undefined;
  }
}
