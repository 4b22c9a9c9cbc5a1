/**
 * Token arithmetic for compaction. Counts are estimates (4 characters a token, images a fixed
 * 1200) except where a model reported real usage: the context size is the last successful
 * reply's usage plus an estimate of what came after it, as pi computes it.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { AssistantMessage, Usage } from "@mariozechner/pi-ai";

const CHARS_PER_TOKEN = 4;
const IMAGE_TOKENS = 1200;

/** A rough size of one message as the model would see it. Conservative (rather too high). */
export function estimateTokens(message: AgentMessage): number {
  let chars = 0;
  let images = 0;
  const blocks = (content: unknown): void => {
    if (typeof content === "string") {
      chars += content.length;
      return;
    }
    if (!Array.isArray(content)) return;
    for (const block of content as {
      type?: string;
      text?: string;
      thinking?: string;
      name?: string;
      arguments?: unknown;
    }[]) {
      if (block.type === "text") chars += block.text?.length ?? 0;
      else if (block.type === "thinking") chars += block.thinking?.length ?? 0;
      else if (block.type === "toolCall")
        chars += (block.name?.length ?? 0) + JSON.stringify(block.arguments ?? {}).length;
      else if (block.type === "image") images++;
    }
  };
  if (message.role === "compactionSummary") chars += message.summary.length;
  else if (message.role === "bashExecution") chars += message.command.length + message.output.length;
  else if ("content" in message) blocks(message.content);
  return Math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS;
}

/** Tokens of a model's usage report: its total, else the sum of its parts. */
function usageTokens(usage: Usage): number {
  return usage.totalTokens || usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
}

/**
 * The context a transcript fills: the last successful reply's reported usage (which covers every
 * message up to it) plus estimates of the messages after it; all estimates when no reply
 * reported usage.
 */
export function contextTokens(messages: readonly AgentMessage[]): number {
  let tokens = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as AgentMessage;
    const usage = reportedUsage(message);
    if (usage !== undefined) return tokens + usage;
    tokens += estimateTokens(message);
  }
  return tokens;
}

/** Sum of the estimates of `messages` (a transcript no model has answered yet). */
export function estimateAll(messages: readonly AgentMessage[]): number {
  let tokens = 0;
  for (const message of messages) tokens += estimateTokens(message);
  return tokens;
}

/** pi's threshold: compaction is due once the context leaves less than `reserveTokens` free. */
export function overThreshold(tokens: number, contextWindow: number, reserveTokens: number): boolean {
  return contextWindow > 0 && tokens > contextWindow - reserveTokens;
}

function reportedUsage(message: AgentMessage): number | undefined {
  if (message.role !== "assistant") return undefined;
  const reply = message as AssistantMessage;
  if (reply.stopReason === "error" || reply.stopReason === "aborted" || reply.usage === undefined) return undefined;
  const tokens = usageTokens(reply.usage);
  return tokens > 0 ? tokens : undefined;
}
