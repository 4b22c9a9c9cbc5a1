/**
 * What `SessionHost` hands each `AgentSession` it creates, in two parts: where the session starts
 * ({@link SessionStart}: its id, worker, model, settings and transcript) and what the host lends it
 * for its whole life ({@link HostServices}: persistence, credentials, coordination, extensions and
 * the host's callbacks). Built by host/session-assembly.ts. Internal; not part of the public API.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import type { SessionEvent } from "../../shared/events.js";
import type { Settings } from "../../shared/settings/settings.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import type { ModelChange, ModelRef } from "../../shared/wire/protocol.js";
import type { AuthStorage } from "../auth/auth-storage.js";
import type { KeySource } from "../auth/session-credentials.js";
import type { ContextOverflowHook } from "../compaction/context-overflow-hook.js";
import type { HostCoordination } from "../coordination/host-coordination.js";
import type { SessionExtensions } from "../extensions/session-extensions.js";
import type { SessionRecorder } from "../session-files/session-recorder.js";
import type { PromptRecord } from "../session-files/session-transcript.js";
import type { TurnPacer } from "../workers/turn-pacer.js";
import type { WorkerLink } from "../workers/worker-link.js";

/** Everything a new `AgentSession` is built from. */
export interface SessionSetup {
  readonly start: SessionStart;
  readonly host: HostServices;
}

/** Where a session starts: read once, by the constructor of `AgentSession` and its parts. */
interface SessionStart {
  sessionId: string;
  /** The worker the session was opened on. */
  link: WorkerLink;
  /** The model the worker resolved, and the reference and key it was opened with. */
  model: Model<Api>;
  modelChange: ModelChange;
  /** The thinking level the worker applied (clamped to `model`). */
  thinkingLevel: ThinkingLevel;
  /** The session's effective settings; the session's toggles write into this object. */
  settings: Settings;
  /** The runtime transcript to start from. */
  messages: AgentMessage[];
  /** The history to start from when it differs from `messages` (a resumed session). */
  history?: AgentMessage[];
  /** The stored session's prompts given an id (a resumed session): see prompt-records.ts. */
  prompts?: ReadonlyMap<string, PromptRecord>;
  /** The id of the stored session's last prompt given an id (a resumed session). */
  lastPromptId?: string;
  /** The stored session's display name (its last `session_info` entry), when it has one. */
  name?: string;
}

/** What the host lends a session for its whole life. */
interface HostServices {
  /** Persistence (B7): stores every history message; undefined when the session is not persisted. */
  recorder: SessionRecorder | undefined;
  credentials: SessionCredentials;
  /** B8: the host's retry budgets, provider gates and request permits (each off unless its setting is on). */
  coordination: HostCoordination | undefined;
  /** The session's extension handlers (R14: they receive every event); undefined without extensions. */
  extensions: SessionExtensions | undefined;
  onContextOverflow: ContextOverflowHook | undefined;
  /** Where a listener's throw is reported; it never stops delivery. */
  onListenerError: (error: unknown, event: SessionEvent) => void;
  /**
   * The session is closed: the host forgets it. Resolves once its session file, if any, is closed
   * and unlocked, so a `resumeSession()` after `dispose()` finds the file free.
   */
  onDisposed: (sessionId: string) => Promise<void> | undefined;
  /**
   * SPEC X7: opens this session again on a fresh worker from `messages` (its own worker if
   * `isolate`), with the session's current model and thinking level; resolves with the new link.
   */
  reopen: (
    messages: AgentMessage[],
    model: ModelChange,
    thinkingLevel: ThinkingLevel,
    isolate: boolean,
  ) => Promise<WorkerLink>;
  /**
   * The host's pacer (workers/turn-pacer.ts): a prompt's first run, and a retry's after its sleep,
   * are posted on a turn of it, so a burst of them does not hold the main thread. Undefined: none
   * is paced.
   */
  pacer?: TurnPacer | undefined;
  /** Test seam for the retry controller's sleep; production uses real timers (paced, see `pacer`). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** B9: the session's telemetry, told where each prompt begins; undefined when the host records nothing. */
  telemetry?: PromptTracing | undefined;
}

/**
 * B9: what the prompt runner tells the session's telemetry (telemetry/session-telemetry.ts). The
 * rest of a prompt's telemetry comes from its events; these two calls exist because `prompt()` is
 * where the caller's trace context is (events arrive later, in the worker link's async context).
 */
export interface PromptTracing {
  /** Called synchronously in `prompt()`: the caller's trace context, opaque to the session. */
  capture(): unknown;
  /** The prompt whose `prompt()` returned `captured` begins (a queued one when its turn comes). */
  begin(captured: unknown): void;
}

/** Where a session's keys and models come from (R4: asked again before each attempt). */
interface SessionCredentials extends KeySource {
  authStorage: AuthStorage | undefined;
  /** Whether every stored key of `provider` is blocked (a fallback model skips it). */
  isProviderExhausted?: (provider: string) => boolean;
  /** Resolves a model reference and its key as the host does for new sessions (models.json). */
  resolveModel: (ref: ModelRef) => Promise<ModelChange>;
}
