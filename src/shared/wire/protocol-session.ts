/**
 * The part of the wire protocol (protocol.ts, STYLE 2) that describes a session to its worker:
 * what opens one ({@link SessionInit}, with its model, provider settings, extensions and network),
 * what the worker reports back ({@link SessionOpened}), a model switch and a catalogue listing.
 * Plain data only. protocol.ts re-exports every type, so importers name protocol.ts alone.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import type { ThinkingLevel } from "../thinking.js";

/**
 * A model named by provider and id (resolved in the worker from pi-ai's catalogue, with the
 * user's `models.json` overrides of that provider applied), or a full pi-ai model object.
 */
export type ModelRef = { provider: string; id: string; overrides?: ProviderOverrides } | Model<Api>;

/** What `models.json` may change about a built-in provider's models (pi's format). */
export interface ProviderOverrides {
  baseUrl?: string;
  headers?: Record<string, string>;
  compat?: Record<string, unknown>;
}

/** Settings the worker needs for its provider calls (SPEC B1). */
export interface ProviderSettings {
  maxRetries: number;
  timeoutMs?: number | undefined;
  maxRetryDelayMs?: number | undefined;
  /** A stream silent this long is aborted and failed as transient; 0 or absent: no limit. */
  idleTimeoutMs?: number | undefined;
}

/** Everything the worker needs to open a session. Plain data only. */
export interface SessionInit {
  sessionId: string;
  model: ModelRef;
  systemPrompt: string;
  /** Transcript to start from (a session restored elsewhere). */
  messages: AgentMessage[];
  provider: ProviderSettings;
  /** Sent only to the worker that serves this session; never echoed in events or errors. */
  apiKey?: string;
  /** Send the key as `Authorization: Bearer <key>` as well (`authHeader` in models.json). */
  authHeader?: boolean;
  /** File URL of a module loaded in the worker; its `setup` export can return tools. */
  workerModule?: string;
  /** Plain data handed to the worker module's `setup`. */
  workerModuleOptions?: unknown;
  /** B8: ask main for a permit before each model request (`retry.maxConcurrentRequests` is set). */
  requestPermits?: boolean;
  /**
   * Fleet mode (X7 across hosts): before a reply's tool calls run, wait until main has stored the
   * reply (`tool_calls_ready`, answered with `grantPermit`), so a host that dies never leaves a
   * tool call that ran but is missing from the session's store, to be run again by the next host.
   */
  storeToolCalls?: boolean;
  /** Extensions whose tools this session gets (the worker's copy; handlers run on main). */
  extensions?: SessionExtensions;
  /**
   * The thinking level main asks for (a restore: the session's current one); the worker clamps it
   * to the model it resolves (pi-ai's `clampThinkingLevel`) and reports what it applied. @default "off"
   */
  thinkingLevel?: ThinkingLevel;
  /** The host's working directory: where the session's `bash` commands run. @default the worker's `process.cwd()` */
  cwd?: string;
  /** The host has a UI for extensions (`extensionUi`): tools' `ctx.ui` requests go to main as `ui_request`. */
  hasUI?: boolean;
  /**
   * The host's `proxy`, `noProxy` and `caFile` settings, when any is set (docs/network.md). Every
   * session of a host carries the same; the worker applies them to its whole thread.
   */
  network?: WorkerNetwork;
}

/** A host's network settings as its workers get them; `caFile` is absolute. */
export interface WorkerNetwork {
  proxy?: string;
  noProxy?: string;
  caFile?: string;
}

/** A session's extensions as the worker needs them: resolved files, in load order. */
export interface SessionExtensions {
  /** `file`: the absolute file jiti imports; `path`: the path as the user gave it, for messages. */
  files: { file: string; path: string }[];
  /** The host's cwd, which tools see as `ctx.cwd`. */
  cwd: string;
}

/** How a steering or follow-up queue delivers: every queued message at once, or one per turn. */
export type QueueMode = "all" | "one-at-a-time";

/** What the worker reports about an opened session, or about its model after a switch. */
export interface SessionOpened {
  model: Model<Api>;
  /** The thinking level the agent's requests now carry, clamped to `model`. */
  thinkingLevel: ThinkingLevel;
}

/**
 * Which catalogue models a listing shows (main's models-config.ts fills it from models.json and
 * the environment): providers with a key; providers models.json redefines, left out; `baseUrl`
 * overrides to apply. The worker adds providers whose credentials only pi-ai recognises.
 */
export interface CatalogueQuery {
  keyed: string[];
  skip: string[];
  baseUrls: Record<string, string>;
}

/** A model switch: the reference and its key, resolved on the main thread like a session's. */
export interface ModelChange {
  model: ModelRef;
  apiKey?: string;
  authHeader?: boolean;
}
