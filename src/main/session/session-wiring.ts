/**
 * What `SessionHost` hands each `AgentSession` it creates: the session's worker, model, settings
 * and transcript, and the host's callbacks and shared parts. Internal; not part of the public API.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import type { SessionEvent } from "../../shared/events.js";
import type { ModelChange, ModelRef } from "../../shared/protocol.js";
import type { Settings } from "../../shared/settings.js";
import type { AuthStorage } from "../auth/auth-storage.js";
import type { ContextOverflowHook } from "../compaction/context-overflow-hook.js";
import type { HostCoordination } from "../coordination/host-coordination.js";
import type { SessionExtensions } from "../extensions/session-extensions.js";
import type { SessionRecorder } from "../session-files/session-recorder.js";
import type { WorkerLink } from "../workers/worker-link.js";

/** Internal wiring from the host; not part of the public API. */
export interface SessionWiring {
  sessionId: string;
  link: WorkerLink;
  model: Model<Api>;
  settings: Settings;
  messages: AgentMessage[];
  /** The history to start from when it differs from `messages` (a resumed session). */
  history?: AgentMessage[];
  /** Persistence (B7): stores every history message; undefined when the session is not persisted. */
  recorder?: SessionRecorder | undefined;
  authStorage: AuthStorage | undefined;
  /** The auth storage's key for this session and `provider` now (R4: asked before each attempt). */
  keyFor?: (provider: string) => string | undefined;
  /** The provider whose key the session was given explicitly (`apiKey`): never asked of the storage. */
  pinnedProvider?: string;
  /** Whether every stored key of `provider` is blocked (a fallback model skips it). */
  isProviderExhausted?: (provider: string) => boolean;
  onContextOverflow: ContextOverflowHook | undefined;
  /** The session's extension handlers (R14: they receive every event); undefined without extensions. */
  extensions?: SessionExtensions | undefined;
  onListenerError: (error: unknown, event: SessionEvent) => void;
  /**
   * The session is closed: the host forgets it. Resolves once its session file, if any, is closed
   * and unlocked, so a `resumeSession()` after `dispose()` finds the file free.
   */
  onDisposed: (sessionId: string) => Promise<void> | undefined;
  /** Test seam for the controller's clock; production uses real timers. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Resolves a model reference and its key as the host does for new sessions (models.json). */
  resolveModel: (ref: ModelRef) => Promise<ModelChange>;
  /** The model and key the session was opened with. */
  modelChange: ModelChange;
  /**
   * SPEC X7: opens this session again on a fresh worker from `messages` (its own worker if
   * `isolate`), with the session's current model; resolves with the new link.
   */
  reopen: (messages: AgentMessage[], model: ModelChange, isolate: boolean) => Promise<WorkerLink>;
  /** B8: the host's retry budgets, provider gates and request permits. */
  coordination?: HostCoordination;
}
