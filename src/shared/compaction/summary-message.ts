/**
 * The message that stands for a compacted part of a transcript: pi's `compactionSummary` role, so
 * that a transcript holding one means the same to lifeline and to pi. It lives in the runtime
 * transcript only; the session file stores it as a `compaction` entry, not as a message.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { UserMessage } from "@mariozechner/pi-ai";

/** A summary of the messages a compaction replaced (pi's `compactionSummary` message). */
export interface CompactionSummaryMessage {
  role: "compactionSummary";
  summary: string;
  /** Estimated context tokens before the compaction that wrote it. */
  tokensBefore: number;
  timestamp: number;
}

declare module "@mariozechner/pi-agent-core" {
  interface CustomAgentMessages {
    compactionSummary: CompactionSummaryMessage;
  }
}

export function summaryMessage(summary: string, tokensBefore: number, timestamp: number): CompactionSummaryMessage {
  return { role: "compactionSummary", summary, tokensBefore, timestamp };
}

export function isSummaryMessage(message: AgentMessage | undefined): message is CompactionSummaryMessage {
  return message?.role === "compactionSummary";
}

/**
 * What the model sees of a summary: a user turn that says it replaces earlier conversation. The
 * model must not take it for the user's latest request, hence the framing.
 */
export function summaryAsUser(message: CompactionSummaryMessage): UserMessage {
  const text = `Earlier turns of this conversation were condensed to save context. What they contained:\n\n<conversation-summary>\n${message.summary}\n</conversation-summary>`;
  return { role: "user", content: [{ type: "text", text }], timestamp: message.timestamp };
}
