/**
 * What the model sees of a runtime transcript.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Message, UserMessage } from "@mariozechner/pi-ai";
import { bashAsUser } from "../shared/bash/bash-message.js";
import { isFailedStop } from "../shared/classify.js";
import { summaryAsUser } from "../shared/compaction/summary-message.js";

/**
 * Keeps user, assistant and tool-result messages, turns a compaction summary and a command the
 * client ran (`bashExecution`, unless `excludeFromContext`) into user turns, drops failed (error or
 * aborted) assistant messages, and merges user messages that end up adjacent into one.
 *
 * Why: a cancelled or exhausted retry chain leaves `user, assistant(error)` in the transcript
 * (SPEC B3 keeps the record). pi-ai drops the failed assistant message when it builds the request,
 * which would send two user turns in a row, and strict providers reject that.
 */
export function convertToLlm(messages: AgentMessage[]): Message[] {
  const out: Message[] = [];
  for (const message of messages) {
    if (message.role === "assistant") {
      if (isFailedStop(message.stopReason)) continue;
      out.push(message);
      continue;
    }
    if (message.role === "toolResult") {
      out.push(message);
      continue;
    }
    let user: UserMessage;
    if (message.role === "user") user = message;
    else if (message.role === "compactionSummary") user = summaryAsUser(message);
    else if (message.role === "bashExecution" && message.excludeFromContext !== true) user = bashAsUser(message);
    else continue;
    const previous = out[out.length - 1];
    if (previous?.role === "user") {
      out[out.length - 1] = mergeUsers(previous, user);
    } else {
      out.push(user);
    }
  }
  return out;
}

function mergeUsers(first: UserMessage, second: UserMessage): UserMessage {
  return {
    role: "user",
    content: [...asBlocks(first.content), { type: "text", text: "\n\n" }, ...asBlocks(second.content)],
    timestamp: second.timestamp,
  };
}

function asBlocks(content: UserMessage["content"]): Exclude<UserMessage["content"], string> {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}
