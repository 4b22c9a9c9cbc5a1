/**
 * A session's statistics in pi's `SessionStats` shape (pi's `get_session_stats`): message counts,
 * tool calls, tokens, cost and how full the model's context window is.
 *
 * Where lifeline differs from pi, on purpose: pi adds up its runtime transcript, from which a
 * retried failure has been removed, so a failed attempt's tokens vanish from its totals even when
 * the provider billed them (an Anthropic stream that fails after `message_start` reported its
 * input). lifeline adds up the history (R4's persisted history), failed and aborted attempts
 * included, so the tokens and the cost are what the session's requests reported, and the counts
 * count every attempt. Messages a compaction summarized still count; a compaction's own summary
 * request is not a message of the history and does not.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Api, AssistantMessage, Model } from "@mariozechner/pi-ai";
import { contextTokens } from "../../../shared/compaction/tokens.js";

/** How full the model's context window is, as pi reports it. */
export interface ContextUsage {
  /** Estimated context tokens; null when unknown (after a compaction, before the next reply). */
  tokens: number | null;
  contextWindow: number;
  /** `tokens` as a percentage of `contextWindow`; null when `tokens` is. */
  percent: number | null;
}

/** pi's `SessionStats`, field for field (docs/rpc.md, `get_session_stats`). */
export interface SessionStats {
  /** The session file; undefined when the session is not persisted (absent from RPC's JSON then). */
  sessionFile: string | undefined;
  sessionId: string;
  userMessages: number;
  /** Every reply, failed and aborted attempts included. */
  assistantMessages: number;
  /** Tool calls the replies made. */
  toolCalls: number;
  toolResults: number;
  /** Every message of the history. */
  totalMessages: number;
  /** Summed over every reply's reported usage; `total` is the sum of the four parts, as in pi. */
  tokens: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
  /** Summed over every reply's reported cost (the model's prices per million tokens). */
  cost: number;
  /** Absent when the model states no context window. */
  contextUsage?: ContextUsage;
}

/** What the statistics are computed from: the session's public state. */
export interface StatsSource {
  readonly id: string;
  readonly sessionFile: string | undefined;
  readonly model: Model<Api>;
  /** Every message the session produced (the sums). */
  readonly history: readonly AgentMessage[];
  /** The runtime transcript (the context usage). */
  readonly messages: readonly AgentMessage[];
}

/** The statistics of `session` now. Pure; never throws. */
export function sessionStats(session: StatsSource): SessionStats {
  const tokens = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
  let userMessages = 0;
  let assistantMessages = 0;
  let toolCalls = 0;
  let toolResults = 0;
  let cost = 0;
  for (const message of session.history) {
    if (message.role === "user") userMessages++;
    else if (message.role === "toolResult") toolResults++;
    else if (message.role === "assistant") {
      assistantMessages++;
      const reply = message as AssistantMessage;
      toolCalls += reply.content.filter((block) => block.type === "toolCall").length;
      // A reply built by lifeline for a dead run carries an empty usage; a foreign file may lack one.
      const usage = reply.usage;
      if (usage === undefined) continue;
      tokens.input += usage.input;
      tokens.output += usage.output;
      tokens.cacheRead += usage.cacheRead;
      tokens.cacheWrite += usage.cacheWrite;
      cost += usage.cost?.total ?? 0;
    }
  }
  tokens.total = tokens.input + tokens.output + tokens.cacheRead + tokens.cacheWrite;
  const contextUsage = contextUsageOf(session.messages, session.model);
  return {
    sessionFile: session.sessionFile,
    sessionId: session.id,
    userMessages,
    assistantMessages,
    toolCalls,
    toolResults,
    totalMessages: session.history.length,
    tokens,
    cost,
    ...(contextUsage === undefined ? {} : { contextUsage }),
  };
}

/**
 * pi's context usage: the last successful reply's reported usage plus estimates of what came
 * after it. After a compaction the summarized replies' usage describes the old context, so until
 * a reply after the summary reports usage the size is unknown (null), as in pi.
 */
function contextUsageOf(messages: readonly AgentMessage[], model: Model<Api>): ContextUsage | undefined {
  const contextWindow = model.contextWindow ?? 0;
  if (contextWindow <= 0) return undefined;
  if (compactedWithoutUsage(messages)) return { tokens: null, contextWindow, percent: null };
  const tokens = contextTokens(messages);
  return { tokens, contextWindow, percent: (tokens / contextWindow) * 100 };
}

/** The transcript starts with a compaction's summary and no successful reply since reported usage. */
function compactedWithoutUsage(messages: readonly AgentMessage[]): boolean {
  let summary = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === "compactionSummary") {
      summary = i;
      break;
    }
  }
  if (summary < 0) return false;
  for (let i = messages.length - 1; i > summary; i--) {
    const message = messages[i];
    if (message?.role !== "assistant") continue;
    const reply = message as AssistantMessage;
    if (reply.stopReason === "error" || reply.stopReason === "aborted") continue;
    const usage = reply.usage;
    return usage === undefined || usage.input + usage.output + usage.cacheRead + usage.cacheWrite <= 0;
  }
  return true;
}
