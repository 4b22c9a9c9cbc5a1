/**
 * What each RPC command does (docs/rpc.md, "Commands and responses"), as one table keyed by the
 * command's `type`. A command missing from the table, or a handler whose answer is not its
 * command's {@link RpcResponseData}, is a type error.
 *
 * A handler throws to fail its command; RPC mode answers with the error's text. Handlers run one
 * at a time, in input order, except the {@link DETACHED_COMMANDS}.
 */
import { basename } from "node:path";
import { LifelineError } from "../../shared/errors.js";
import { messageText } from "../../shared/message-text.js";
import { FileAuthStorage } from "../auth/file-auth-storage.js";
import type { SessionHost } from "../host/session-host.js";
import type { AgentSession } from "../session/agent-session.js";
import type { RpcCommandOf, RpcCommandType, RpcResponseData, RpcSessionState } from "./rpc-protocol.js";
import type { RpcSessionSlot } from "./rpc-session-slot.js";
import { nextModel } from "./session-commands.js";

/** What a command handler may use. */
export interface RpcCommandContext {
  readonly host: SessionHost;
  readonly session: RpcSessionSlot;
  /**
   * Reports an accepted prompt that ended without settling. It can get no response (its own went
   * out on acceptance), so RPC mode says it on stderr, unless it is shutting down.
   */
  promptEndedUnsettled(error: unknown): void;
}

/** Runs one command of type K; resolves with its response's `data`. */
type RpcCommandHandler<K extends RpcCommandType> = (
  command: RpcCommandOf<K>,
  ctx: RpcCommandContext,
) => Promise<RpcResponseData[K]>;

/** One handler per command type. */
export type RpcCommandTable = { [K in RpcCommandType]: RpcCommandHandler<K> };

/**
 * Commands that are started in input order but answered when they end, without holding up the
 * commands after them: an `abort` sent during a compaction, or an `abort_bash` during a `bash`,
 * must reach the session to cancel it.
 * Their handlers throw synchronously for a command that cannot start.
 */
export const DETACHED_COMMANDS: ReadonlySet<RpcCommandType> = new Set<RpcCommandType>(["compact", "bash"]);

/**
 * Every command RPC mode runs. Reading commands, `get_available_models`, `new_session` and
 * `switch_session` work on an ended session; the `auth_*` commands need none; the others need a
 * live one.
 */
export const rpcCommands: RpcCommandTable = {
  prompt: async (command, ctx) => {
    const session = ctx.session.live();
    const { message, streamingBehavior } = command;
    if (!session.isBusy) return startPrompt(session, message, ctx);
    if (streamingBehavior === undefined) {
      const state = session.isRetrying
        ? `waiting in a retry chain (attempt ${session.retryAttempt})`
        : session.isCompacting
          ? "compacting"
          : "streaming";
      throw new LifelineError(
        "ERR_SESSION_BUSY",
        `The session is ${state}. Send the prompt with "streamingBehavior": "steer" or "followUp", wait for agent_settled, or abort.`,
      );
    }
    await session.queueMessage(streamingBehavior, message);
    return undefined;
  },
  steer: (command, ctx) => queueOrStart("steer", command.message, ctx),
  follow_up: (command, ctx) => queueOrStart("followUp", command.message, ctx),
  abort: async (_command, ctx) => {
    await ctx.session.live().abort();
    return undefined;
  },
  get_state: async (_command, ctx) => stateOf(ctx.session.current()),
  get_messages: async (_command, ctx) => ({ messages: [...ctx.session.current().messages] }),
  set_model: async ({ provider, modelId }, ctx) => ctx.session.live().setModel({ provider, id: modelId }),
  get_available_models: async (_command, ctx) => {
    ctx.session.current();
    return { models: await ctx.host.availableModels() };
  },
  set_auto_retry: async (command, ctx) => {
    // B5: this session only; nothing is written to the settings file.
    ctx.session.live().setAutoRetryEnabled(command.enabled);
    return undefined;
  },
  abort_retry: async (_command, ctx) => {
    ctx.session.live().abortRetry();
    return undefined;
  },
  set_auto_compaction: async (command, ctx) => {
    // B5, unlike pi: this session only; nothing is written to the settings file.
    ctx.session.live().setAutoCompactionEnabled(command.enabled);
    return undefined;
  },
  // Detached (see DETACHED_COMMANDS): answered with pi's CompactionResult when the compaction ends.
  compact: (command, ctx) => ctx.session.live().compact(command.customInstructions),
  new_session: async (_command, ctx) => {
    await ctx.session.renew();
    return { cancelled: false };
  },
  switch_session: async (command, ctx) => {
    await ctx.session.switchTo(command.sessionPath);
    return { cancelled: false };
  },
  get_last_assistant_text: async (_command, ctx) => {
    const text = lastAssistantText(ctx.session.current());
    return text === undefined ? {} : { text };
  },
  set_thinking_level: async (command, ctx) => {
    // B5, unlike pi: the session's defaultThinkingLevel changes, the settings file does not.
    await ctx.session.live().setThinkingLevel(command.level);
    return undefined;
  },
  cycle_thinking_level: async (_command, ctx) => {
    const level = await ctx.session.live().cycleThinkingLevel();
    return level === undefined ? null : { level };
  },
  // Detached (see DETACHED_COMMANDS): answered with pi's BashResult when the command ends.
  bash: (command, ctx) => ctx.session.live().executeBash(command.command),
  abort_bash: async (_command, ctx) => {
    await ctx.session.live().abortBash();
    return undefined;
  },
  auth_list: async (_command, ctx) => {
    const storage = authFile(ctx.host);
    return { credentials: storage.list(), path: storage.path };
  },
  auth_add: async (command, ctx) => {
    const storage = authFile(ctx.host);
    return { provider: command.provider, index: await storage.add(command.provider, command.key) };
  },
  auth_remove: async (command, ctx) => {
    const storage = authFile(ctx.host);
    return { provider: command.provider, removed: await storage.remove(command.provider, command.index) };
  },
  get_session_stats: async (_command, ctx) => ctx.session.current().stats,
  cycle_model: async (_command, ctx) => {
    const session = ctx.session.live();
    const model = await nextModel(ctx.host, session);
    // pi reports the thinking level the session has after the switch; get_state reads it the same way.
    return model === undefined ? null : { model, thinkingLevel: stateOf(session).thinkingLevel, isScoped: false };
  },
  set_steering_mode: async (command, ctx) => {
    // This session only, unlike pi (no settings file is written), as set_auto_retry (B5).
    await ctx.session.live().setQueueMode("steer", command.mode);
    return undefined;
  },
  set_follow_up_mode: async (command, ctx) => {
    await ctx.session.live().setQueueMode("followUp", command.mode);
    return undefined;
  },
  set_session_name: async (command, ctx) => {
    ctx.session.live().setSessionName(command.name);
    return undefined;
  },
  // See RpcSlashCommand: lifeline has no extension commands, prompt templates or skills.
  get_commands: async (_command, ctx) => {
    ctx.session.current();
    return { commands: [] };
  },
  fork: async (command, ctx) => ({ text: (await ctx.session.fork(command.entryId)) ?? "", cancelled: false }),
  clone: async (_command, ctx) => {
    await ctx.session.fork(undefined);
    return { cancelled: false };
  },
  get_fork_messages: async (_command, ctx) => ({ messages: await ctx.host.forkMessages(ctx.session.current()) }),
  export_html: async (command, ctx) => {
    const written = await ctx.host.exportHtml(ctx.session.current(), command.outputPath);
    // pi answers the path as given; the default name is in the cwd, so its base name is that.
    return { path: command.outputPath ?? basename(written) };
  },
};

/** `steer` and `follow_up`: queued while a prompt is live, a prompt of their own otherwise. */
async function queueOrStart(kind: "steer" | "followUp", message: string, ctx: RpcCommandContext): Promise<undefined> {
  const session = ctx.session.live();
  if (!session.isBusy) return startPrompt(session, message, ctx);
  await session.queueMessage(kind, message);
  return undefined;
}

/**
 * Accepts a prompt; its failures arrive as events, never as a second response. The response
 * goes out once the user message is stored (B7: accepted means durable).
 */
async function startPrompt(session: AgentSession, message: string, ctx: RpcCommandContext): Promise<undefined> {
  session.prompt(message).catch((error: unknown) => ctx.promptEndedUnsettled(error));
  await session.flushSession();
  return undefined;
}

/**
 * lifeline's auth commands work on the host's auth.json.
 * @throws LifelineError ERR_INVALID_OPTIONS when the host keeps its keys elsewhere.
 */
function authFile(host: SessionHost): FileAuthStorage {
  const storage = host.authStorage;
  if (!(storage instanceof FileAuthStorage)) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      "This host's auth storage is not an auth.json file (the host has lifelineDir: false or its own authStorage).",
    );
  }
  return storage;
}

/** `get_state`: pi's state fields, lifeline's retry fields (B4) and the host-wide controls (B8). */
function stateOf(session: AgentSession): RpcSessionState {
  return {
    model: session.model,
    thinkingLevel: session.thinkingLevel,
    isStreaming: session.isStreaming,
    isCompacting: session.isCompacting,
    steeringMode: session.queueModes.steer,
    followUpMode: session.queueModes.followUp,
    sessionId: session.id,
    ...(session.sessionFile === undefined ? {} : { sessionFile: session.sessionFile }),
    ...(session.sessionName === undefined ? {} : { sessionName: session.sessionName }),
    autoCompactionEnabled: session.autoCompactionEnabled,
    messageCount: session.messages.length,
    pendingMessageCount: session.pendingMessageCount,
    autoRetryEnabled: session.autoRetryEnabled,
    isRetrying: session.isRetrying,
    retryAttempt: session.retryAttempt,
    isIdle: !session.isBusy,
    ...session.coordinationState,
  };
}

/**
 * pi's rule: the text of the last assistant message (one aborted before any content is skipped),
 * trimmed; undefined when that message has no text (a tool call, a failed attempt) or there is none.
 */
function lastAssistantText(session: AgentSession): string | undefined {
  for (let i = session.messages.length - 1; i >= 0; i--) {
    const message = session.messages[i];
    if (message?.role !== "assistant") continue;
    if (message.stopReason === "aborted" && message.content.length === 0) continue;
    const text = messageText(message.content).trim();
    return text === "" ? undefined : text;
  }
  return undefined;
}
