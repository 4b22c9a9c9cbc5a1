/**
 * The RPC protocol of `lifeline --mode rpc`, written once (STYLE 2): pi's commands, responses and
 * state (docs/rpc.md describes them), for the commands lifeline supports, plus the retry fields
 * pi's state lacks (SPEC B4).
 *
 * Framing is strict JSONL (jsonl.ts): one JSON object per line on stdin (commands) and stdout
 * (responses and session events); LF is the only separator.
 *
 * The command schemas validate what arrives on stdin; the types derived from them are what
 * `RpcClient` sends. A response echoes the command's `id` whenever one could be read. As pi does,
 * a field a command does not have is ignored (dropped by the parse), so a client written for a
 * later pi still works; unlike pi, a missing or wrongly typed field is refused, naming the field.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, Model } from "@mariozechner/pi-ai";
import * as z from "zod";
import type { BashResult } from "../../shared/bash/bash-message.js";
import type { CompactionResult, SessionEvent } from "../../shared/events.js";
import type { UiRequest } from "../../shared/extensions/extension-ui.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import type { AuthEntry } from "../auth/file-auth-storage.js";
import { thinkingLevelSchema } from "../config/option-schemas.js";
import type { CoordinationState } from "../coordination/session-coordination.js";
import type { SessionStats } from "../session/state/session-stats.js";

const id = z.string().max(1000).optional();
const text = z.string().min(1, "must be a non-empty string");
// pi clients may send `images: []`; images themselves are not supported yet.
const images = z.array(z.unknown()).max(0, "images are not supported by lifeline yet; send text only").optional();

const queueMode = z.enum(["all", "one-at-a-time"]);

/** Every command lifeline's RPC mode accepts, keyed by `type`. */
export const rpcCommandSchemas = {
  prompt: z.object({
    id,
    type: z.literal("prompt"),
    message: text,
    images,
    /** While a prompt is live: "steer" delivers it before the next model call, "followUp" after the run. */
    streamingBehavior: z.enum(["steer", "followUp"]).optional(),
  }),
  steer: z.object({ id, type: z.literal("steer"), message: text, images }),
  follow_up: z.object({ id, type: z.literal("follow_up"), message: text, images }),
  abort: z.object({ id, type: z.literal("abort") }),
  get_state: z.object({ id, type: z.literal("get_state") }),
  get_messages: z.object({ id, type: z.literal("get_messages") }),
  set_model: z.object({ id, type: z.literal("set_model"), provider: text, modelId: text }),
  get_available_models: z.object({ id, type: z.literal("get_available_models") }),
  set_auto_retry: z.object({ id, type: z.literal("set_auto_retry"), enabled: z.boolean() }),
  abort_retry: z.object({ id, type: z.literal("abort_retry") }),
  /** Summarizes the older part of the transcript now; answered when the compaction ends. */
  compact: z.object({ id, type: z.literal("compact"), customInstructions: z.string().optional() }),
  set_auto_compaction: z.object({ id, type: z.literal("set_auto_compaction"), enabled: z.boolean() }),
  new_session: z.object({ id, type: z.literal("new_session"), parentSession: z.string().optional() }),
  /** B7: closes the session and resumes a stored one (a file path, or an id or prefix of one). */
  switch_session: z.object({ id, type: z.literal("switch_session"), sessionPath: text }),
  get_last_assistant_text: z.object({ id, type: z.literal("get_last_assistant_text") }),
  /** pi's: sets the session's thinking level, clamped to the model. */
  set_thinking_level: z.object({ id, type: z.literal("set_thinking_level"), level: thinkingLevelSchema }),
  /** pi's: the next level the model supports; `data` null for a model without reasoning. */
  cycle_thinking_level: z.object({ id, type: z.literal("cycle_thinking_level") }),
  /** Runs a shell command in the session's worker; answered with pi's BashResult when it ends. */
  bash: z.object({ id, type: z.literal("bash"), command: text }),
  /** Kills the running bash command's process tree. */
  abort_bash: z.object({ id, type: z.literal("abort_bash") }),
  /** lifeline extension: the keys of auth.json, masked. */
  auth_list: z.object({ id, type: z.literal("auth_list") }),
  /** lifeline extension: adds a key to auth.json; the response never repeats it. */
  auth_add: z.object({ id, type: z.literal("auth_add"), provider: text, key: text }),
  /** lifeline extension: removes a provider's key at `index`, or all its keys. */
  auth_remove: z.object({
    id,
    type: z.literal("auth_remove"),
    provider: text,
    index: z.number().int().min(0).optional(),
  }),
  /** pi's SessionStats; tokens and cost include failed attempts. */
  get_session_stats: z.object({ id, type: z.literal("get_session_stats") }),
  /** Switches to the next model `get_available_models` lists (lifeline has no scoped models). */
  cycle_model: z.object({ id, type: z.literal("cycle_model") }),
  set_steering_mode: z.object({ id, type: z.literal("set_steering_mode"), mode: queueMode }),
  set_follow_up_mode: z.object({ id, type: z.literal("set_follow_up_mode"), mode: queueMode }),
  /** Any string: a blank one is refused with pi's error text. */
  set_session_name: z.object({ id, type: z.literal("set_session_name"), name: z.string() }),
  get_commands: z.object({ id, type: z.literal("get_commands") }),
  /** A new session file with the path before the user message `entryId`, in place of this one. */
  fork: z.object({ id, type: z.literal("fork"), entryId: text }),
  /** A new session file with this one's whole path, in place of this one. */
  clone: z.object({ id, type: z.literal("clone") }),
  get_fork_messages: z.object({ id, type: z.literal("get_fork_messages") }),
  /** The transcript as a self-contained HTML page, at `outputPath` or a default name in the cwd. */
  export_html: z.object({ id, type: z.literal("export_html"), outputPath: text.optional() }),
} as const;

/** The `type` of a supported command. */
export type RpcCommandType = keyof typeof rpcCommandSchemas;

/** A command as sent on stdin. */
export type RpcCommand = { [K in RpcCommandType]: z.input<(typeof rpcCommandSchemas)[K]> }[RpcCommandType];

/** The command of `type` K. */
export type RpcCommandOf<K extends RpcCommandType> = Extract<RpcCommand, { type: K }>;

/**
 * Whether `type` names a supported command. Own keys only: a name every object inherits
 * (`toString`, `constructor`, `__proto__`) is an unknown command, not a schema lookup that throws.
 */
export function isRpcCommandType(type: string): type is RpcCommandType {
  return Object.hasOwn(rpcCommandSchemas, type);
}

/**
 * The schemas again, each typed by the command it validates, so a parse keeps the command's type
 * from its `type` to the handler that runs it. The declaration also checks that no schema
 * transforms a command into another type (a default that only fills an optional field passes it).
 */
const commandParsers: { [K in RpcCommandType]: z.ZodType<RpcCommandOf<K>> } = rpcCommandSchemas;

/** Validates `value` as the command of `type`. */
export function parseRpcCommand<K extends RpcCommandType>(
  type: K,
  value: unknown,
): z.ZodSafeParseResult<RpcCommandOf<K>> {
  return commandParsers[type].safeParse(value);
}

/** pi's `RpcSessionState` plus lifeline's retry fields (B4). */
export interface RpcSessionState {
  model?: Model<Api>;
  /** The level of the session's next request, clamped to the model (pi's). */
  thinkingLevel: ThinkingLevel;
  /** A run is in flight in the worker. */
  isStreaming: boolean;
  isCompacting: boolean;
  steeringMode: "all" | "one-at-a-time";
  followUpMode: "all" | "one-at-a-time";
  sessionId: string;
  /** B7: the session file, when the session is persisted (pi reports it too). */
  sessionFile?: string;
  /** pi's session name (`set_session_name`), when the session has one. */
  sessionName?: string;
  autoCompactionEnabled: boolean;
  messageCount: number;
  /** Steering and follow-up messages not yet delivered to the model. */
  pendingMessageCount: number;
  /** B4: this session's auto-retry toggle. */
  autoRetryEnabled: boolean;
  /** B4: a retry chain is live (sleeping or a retried attempt in flight). */
  isRetrying: boolean;
  /** B4: the live chain's attempt, 0 when idle. */
  retryAttempt: number;
  /** False from an accepted prompt until its `agent_settled`: a session waiting out a backoff is not idle. */
  isIdle: boolean;
  /** B8: the host's retry budget of the session's provider, when `retry.budget` is set. */
  retryBudget?: CoordinationState["retryBudget"];
  /** B8: the provider gate of the session's endpoint and key, when `retry.coordinate` is on. */
  providerGate?: CoordinationState["providerGate"];
  /** B8: the provider's request permits, when `retry.maxConcurrentRequests` is set. */
  requestPermits?: CoordinationState["requestPermits"];
}

/** What each command's successful response carries in `data`. */
export interface RpcResponseData {
  prompt: undefined;
  steer: undefined;
  follow_up: undefined;
  abort: undefined;
  get_state: RpcSessionState;
  get_messages: { messages: AgentMessage[] };
  set_model: Model<Api>;
  get_available_models: { models: Model<Api>[] };
  set_auto_retry: undefined;
  abort_retry: undefined;
  compact: CompactionResult;
  set_auto_compaction: undefined;
  new_session: { cancelled: boolean };
  switch_session: { cancelled: boolean };
  /** pi's: `text` absent (`{}` on the wire) when the last reply has no text, or there is none. */
  get_last_assistant_text: { text?: string };
  set_thinking_level: undefined;
  cycle_thinking_level: { level: ThinkingLevel } | null;
  bash: BashResult;
  abort_bash: undefined;
  auth_list: { credentials: AuthEntry[]; path: string };
  auth_add: { provider: string; index: number };
  auth_remove: { provider: string; removed: number };
  get_session_stats: SessionStats;
  cycle_model: { model: Model<Api>; thinkingLevel: string; isScoped: boolean } | null;
  set_steering_mode: undefined;
  set_follow_up_mode: undefined;
  set_session_name: undefined;
  get_commands: { commands: RpcSlashCommand[] };
  fork: { text: string; cancelled: boolean };
  clone: { cancelled: boolean };
  get_fork_messages: { messages: { entryId: string; text: string }[] };
  /** pi's: `path` as the command gave it (relative to the process's cwd), or the default name. */
  export_html: { path: string };
}

/**
 * pi's `RpcSlashCommand`: a command a prompt can invoke (`/name`). lifeline has none of pi's three
 * kinds: its extension API does not provide `registerCommand`, and it loads no prompt templates
 * or skills; so `get_commands` answers an empty list.
 */
export interface RpcSlashCommand {
  name: string;
  description?: string;
  source: "extension" | "prompt" | "skill";
  sourceInfo: unknown;
}

/** A response line. `command` is the command's type, or "parse" when the line was not a command. */
export type RpcResponse =
  | { id?: string; type: "response"; command: string; success: true; data?: unknown }
  | { id?: string; type: "response"; command: string; success: false; error: string };

/** An event line: a session event as `subscribe()` listeners see it. Events never carry `id`. */
export type RpcEvent = SessionEvent;

/**
 * pi's extension UI sub-protocol: an extension's `ctx.ui` call as written to stdout. Dialogs
 * (`select`, `confirm`, `input`, `editor`) wait for an {@link RpcExtensionUiResponse} with the same
 * `id`; the other methods are notices that need none.
 */
export type RpcExtensionUiRequest = { type: "extension_ui_request"; id: string } & UiRequest;

/** The client's answer to a dialog, on stdin. It gets no response line. */
export type RpcExtensionUiResponse = { type: "extension_ui_response"; id: string } & (
  | { value: string }
  | { confirmed: boolean }
  | { cancelled: true }
);

/** Anything RPC mode writes to stdout. */
export type RpcOutput = RpcResponse | RpcEvent | RpcExtensionUiRequest;
