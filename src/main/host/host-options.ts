/**
 * The options of `createSessionHost`, `SessionHost.createSession` and `SessionHost.resumeSession`:
 * their types (each field's JSDoc with its `@default`), the defaults the host applies itself, and
 * the checks made at the call, so that a bad option is refused by the call that took it
 * (ERR_INVALID_OPTIONS naming the field) instead of failing later in a worker.
 */
import { availableParallelism } from "node:os";
import type { ResourceLimits } from "node:worker_threads";
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import * as z from "zod";
import { LifelineError } from "../../shared/errors.js";
import type { SessionEvent } from "../../shared/events.js";
import type { UiTransport } from "../../shared/extensions/extension-ui.js";
import { parseSettingsLayer, type SettingsInput } from "../../shared/settings/settings.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import type { ModelRef } from "../../shared/wire/protocol.js";
import type { AuthStorage } from "../auth/auth-storage.js";
import type { FileAuthStorage } from "../auth/file-auth-storage.js";
import type { ContextOverflowHook } from "../compaction/context-overflow-hook.js";
import { checkWorkerEntry } from "../config/module-url.js";
import {
  authStorageSchema,
  fn,
  messageSchema,
  modelRefSchema,
  resourceLimitsSchema,
  sessionsOptionsSchema,
  settingsObject,
  thinkingLevelSchema,
  timerMs,
  validate,
} from "../config/option-schemas.js";
import type { SessionsOptions } from "../session-files/session-persistence.js";
import type { TelemetryOptions } from "../telemetry/telemetry-options.js";

/** Options of {@link createSessionHost}. Every field is optional. */
export interface SessionHostOptions {
  /**
   * Worker threads in the pool. @default one less than the cores, at least 1 and at most 4
   * ({@link defaultThreads}: past 4 busy workers the main thread would be over half busy)
   */
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
   * to be stuck and is terminated), when the worker has sent nothing for `hangTimeoutMs`. A worker
   * still sending (events, heartbeats) is busy, not stuck: its call waits up to four times this.
   * `abort()`, `dispose()` and `close()` wait at most 2 s (or this, if smaller). @default 30000
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
  /**
   * The worker threads' nice value on Linux, 0 (as the main thread) to 19 (runs last): with every
   * core busy, the host's main thread gets a CPU before its workers, so its event loop stalls less
   * (bench (m), docs/performance.md). The workers lose nothing while a core is free. V8's helper
   * threads, which collect every thread's heap (the workers' too), keep the process's priority.
   * Elsewhere a nice value is per process, and this has no effect. Off by default: under a crowded
   * machine a lowered worker also yields to other processes, which a host that wants its agents'
   * throughput first would not want. @default 0
   */
  workerPriority?: number;
  /** V8 heap limits for each worker; a worker over them exits and its sessions get ERR_WORKER_EXITED. */
  resourceLimits?: ResourceLimits;
  /** Receives errors thrown by `subscribe()` listeners. @default prints to stderr */
  onListenerError?: (error: unknown, event: SessionEvent) => void;
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
  /**
   * B9, OpenTelemetry (docs/observability.md): the meter and tracer providers to record into, and
   * whether spans carry prompt and completion text. `false` records nothing, even into providers
   * the application registered globally. Needs `@opentelemetry/api` installed (an optional peer).
   * @default the globally registered providers, when there are any; else nothing is recorded
   */
  telemetry?: TelemetryOptions | false;
  /**
   * Where extensions' `ctx.ui` dialogs and notices go (`select`, `confirm`, `input`, `editor`,
   * `notify`, …): an app's own UI. RPC mode sets it to its `extension_ui_request` lines. Without it
   * `ctx.hasUI` is false and dialogs resolve with pi's defaults at once (docs/extensions.md).
   * @default none
   */
  extensionUi?: UiTransport;
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
  /**
   * The session's thinking level (pi's levels: `off` … `xhigh`), clamped to what the model
   * supports. For `resumeSession`, it replaces the level stored in the session.
   * @default a resumed session's stored level, else the `defaultThinkingLevel` setting ("medium")
   */
  thinkingLevel?: ThinkingLevel;
}

/** Options of {@link SessionHost.resumeSession}: a session's options, without its id and transcript. */
export type ResumeOptions = Omit<SessionOptions, "sessionId" | "messages">;

/**
 * Defaults of the host's timeouts, threads and listener-error report (see {@link SessionHostOptions}
 * for each). The others are applied where they are used: `cwd` (the process's) and `workerEntry`
 * (the built worker beside the host's code) by `SessionHost`, `lifelineDir` and `authStorage` by
 * `HostConfig`, `sessions` by `SessionPersistence`, `batchIntervalMs` by the worker.
 */
export const HOST_DEFAULTS = {
  callTimeoutMs: 30_000,
  hangTimeoutMs: 15_000,
  setupTimeoutMs: 60_000,
  /** {@link defaultThreads} of this machine's cores; read per host. */
  threads: (): number => defaultThreads(availableParallelism()),
  onListenerError: reportListenerError,
} as const;

/**
 * Share of one core the main thread spends per worker that is busy on a whole core, measured by
 * bench section (n) (docs/performance-history.md, "(n) worker threads"): main-thread CPU ÷ worker CPU for
 * the same prompts streamed over HTTP/SSE (a 503, then 200 tokens). Single runs at 1,000
 * sessions gave 0.106–0.126, the median of the worse thread count 0.121; 200 sessions gave 0.13.
 * It is what each busy worker's output (events to deliver, retries, settling) costs the one
 * thread every worker reports to.
 */
const MAIN_SHARE_PER_BUSY_WORKER = 0.12;

/**
 * The most of the main thread that busy workers may take: half. Past it a batch waits for the
 * batches before it (at a utilisation ρ a message waits about ρ / (2(1 − ρ)) messages' work on
 * average: half a message's at 0.5, one at 0.67, four and a half at 0.9), and the application embedding the host
 * shares the same thread for its own server or UI.
 */
const MAIN_BUDGET = 0.5;

/** The most workers the main thread serves within {@link MAIN_BUDGET}: ⌊0.5 ÷ 0.12⌋ = 4. */
const THREADS_CAP = Math.floor(MAIN_BUDGET / MAIN_SHARE_PER_BUSY_WORKER);

/**
 * The default `threads` for a machine of `cores` (os.availableParallelism()): one core is left
 * to the main thread (a worker on the main thread's core made its loop stall: section (n) on 2
 * cores), and no more workers than the main thread can serve within half its time
 * ({@link THREADS_CAP}). 1 core → 1, 2 → 1, 4 → 3, 16 → 4, 64 → 4.
 */
export function defaultThreads(cores: number): number {
  return Math.max(1, Math.min(THREADS_CAP, Math.floor(cores) - 1));
}

/**
 * The bound on `abort()`, `dispose()` and each step of `close()` when a worker does not answer
 * (`callTimeoutMs` if that is smaller): not an option.
 */
export const CONTROL_TIMEOUT_MS = 2000;

/** Defaults of a session's options (see {@link SessionOptions} for each). */
export const SESSION_DEFAULTS = {
  /** The built-in demo model; a resumed session's file model comes before it. */
  model: "demo/demo-1",
  systemPrompt: "",
} as const;

// Unknown keys are refused: a misspelt option would otherwise be ignored silently. The schemas are
// built on first use, not at import (see config/option-schemas.ts).
const hostOptionsSchema = z.lazy(() =>
  z.strictObject({
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
    workerPriority: z.number().int().min(0).max(19).optional(),
    resourceLimits: resourceLimitsSchema.optional(),
    onListenerError: fn.optional(),
    sessions: sessionsOptionsSchema.optional(),
    extensions: z.array(z.string().min(1)).optional(),
    telemetry: z
      .union([
        z.literal(false),
        z.strictObject({
          meterProvider: providerOf("getMeter").optional(),
          tracerProvider: providerOf("getTracer").optional(),
          recordContent: z.boolean().optional(),
        }),
      ])
      .optional(),
    extensionUi: z
      .looseObject({ dialog: fn, notify: fn }, { error: "must be an object with dialog() and notify() methods" })
      .optional(),
  }),
);

/** An OpenTelemetry provider: an object with the `method` that hands out meters or tracers. */
function providerOf(method: "getMeter" | "getTracer") {
  return z.custom<object>(
    (value) =>
      value !== null && typeof value === "object" && typeof (value as Record<string, unknown>)[method] === "function",
    { message: `must be an OpenTelemetry provider (an object with ${method}())` },
  );
}

let sessionOptions: ReturnType<typeof buildSessionOptions> | undefined;

function sessionOptionsObject(): ReturnType<typeof buildSessionOptions> {
  sessionOptions ??= buildSessionOptions();
  return sessionOptions;
}

function buildSessionOptions() {
  return z.strictObject({
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
    thinkingLevel: thinkingLevelSchema.optional(),
  });
}

const sessionOptionsSchema = z.lazy(() => sessionOptionsObject());

const resumeOptionsSchema = z.lazy(() => sessionOptionsObject().omit({ sessionId: true, messages: true }));

/**
 * Checks `createSessionHost`'s options: their shapes, the `settings` override's content (which
 * may not name `extensions`), and that a given `workerEntry` exists (a missing one would only show
 * when the first worker starts).
 * @throws ERR_INVALID_OPTIONS for a malformed option, `settings.extensions` or a missing worker
 *   entry; ERR_INVALID_SETTINGS for invalid `settings`.
 */
export function checkHostOptions(options: SessionHostOptions): void {
  validate(hostOptionsSchema, options, "createSessionHost options");
  if (options.settings !== undefined) parseSettingsLayer(options.settings, "createSessionHost({ settings })");
  refuseSettingsExtensions(options.settings, "createSessionHost");
  if (options.workerEntry !== undefined) checkWorkerEntry(options.workerEntry, options.cwd ?? process.cwd());
}

/**
 * Checks `createSession`'s options: their shapes, and that `settings` does not name `extensions`;
 * the rest of `settings` is checked when the session's settings are merged.
 * @throws ERR_INVALID_OPTIONS for a malformed option or `settings.extensions`.
 */
export function checkSessionOptions(options: SessionOptions): void {
  validate(sessionOptionsSchema, options, "createSession options");
  refuseSettingsExtensions(options.settings, "createSession");
}

/**
 * Checks `resumeSession`'s arguments: `ref` is a non-empty string, and the options' shapes only
 * (unlike {@link checkSessionOptions}, `settings.extensions` is not looked at).
 * @throws ERR_INVALID_OPTIONS for an empty or non-string `ref` or a malformed option.
 */
export function checkResumeOptions(ref: unknown, options: ResumeOptions): void {
  if (typeof ref !== "string" || ref === "") {
    throw new LifelineError("ERR_INVALID_OPTIONS", "resumeSession() needs a session file path or id.");
  }
  validate(resumeOptionsSchema, options, "resumeSession options");
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

/** The default `onListenerError`: one line on stderr. */
function reportListenerError(error: unknown, event: SessionEvent): void {
  process.stderr.write(`lifeline: a session listener threw on ${event.type}: ${String(error)}\n`);
}
