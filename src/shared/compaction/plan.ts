/**
 * Where a compaction cuts a transcript: the newest messages worth about `keepRecentTokens` stay
 * as they are, everything older is summarized. Pure.
 *
 * A cut falls only before a user or assistant message, never before a tool result, which must
 * follow the assistant message that called the tool. A previous summary at the front is not
 * summarized again as a message: its text goes to the summary request as the summary to update.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { isSummaryMessage } from "./summary-message.js";
import { estimateTokens } from "./tokens.js";

/** The two parts of a transcript a compaction makes. */
export interface CompactionPlan {
  /** Messages to summarize (a previous summary excluded), oldest first. Empty only in {@link planKeepingAll}'s. */
  summarize: AgentMessage[];
  /** The summary this one replaces, if the transcript starts with one. */
  previousSummary: string | undefined;
  /** Messages kept as they are, newest last. Empty only in {@link planKeepingAll}'s, for an empty transcript. */
  kept: AgentMessage[];
}

/**
 * Cuts `messages` keeping roughly `keepRecentTokens` of the newest. Returns undefined when
 * nothing older than the kept part is left to summarize.
 */
export function planCompaction(
  messages: readonly AgentMessage[],
  keepRecentTokens: number,
): CompactionPlan | undefined {
  const start = isSummaryMessage(messages[0]) ? 1 : 0;
  let cut = start;
  let kept = 0;
  for (let i = messages.length - 1; i >= start; i--) {
    kept += estimateTokens(messages[i] as AgentMessage);
    if (kept >= keepRecentTokens) {
      cut = firstCutAtOrAfter(messages, i);
      break;
    }
  }
  if (cut <= start || cut >= messages.length) return undefined;
  const first = messages[0];
  return {
    summarize: messages.slice(start, cut),
    previousSummary: isSummaryMessage(first) ? first.summary : undefined,
    kept: messages.slice(cut),
  };
}

function firstCutAtOrAfter(messages: readonly AgentMessage[], index: number): number {
  for (let i = index; i < messages.length; i++) {
    const role = messages[i]?.role;
    if (role === "user" || role === "assistant") return i;
  }
  return messages.length;
}

/**
 * pi's explicit compaction of a transcript with nothing older than its newest `keepRecentTokens`
 * (pi cuts before the first message then): nothing is summarized but a previous summary, which
 * is updated, and every message is kept.
 */
export function planKeepingAll(messages: readonly AgentMessage[]): CompactionPlan {
  const first = messages[0];
  const previous = isSummaryMessage(first);
  return {
    summarize: [],
    previousSummary: previous ? first.summary : undefined,
    kept: messages.slice(previous ? 1 : 0),
  };
}
