/**
 * What the model sees of a runtime transcript.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Message } from "@mariozechner/pi-ai";
import { bashAsUser } from "../shared/bash/bash-message.js";
import { summaryAsUser } from "../shared/compaction/summary-message.js";
import { isFailedStop } from "../shared/failures/classify.js";

/**
 * Keeps user, assistant and tool-result messages, turns a compaction summary and a command the
 * client ran (`bashExecution`, unless `excludeFromContext`) into user messages, and drops failed
 * (error or aborted) assistant messages, as pi-ai drops them from every request (a cancelled or
 * exhausted retry chain leaves one in the transcript: SPEC B3 keeps the record).
 *
 * Each message stays a message of its own, as pi 0.73.1 sends them: two commands and a prompt are
 * three user messages, not one. An API that refuses adjacent user turns gets them merged in its
 * request payload only (session/alternating-turns.ts).
 */
export function convertToLlm(messages: AgentMessage[]): Message[] {
  const out: Message[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "assistant":
        if (!isFailedStop(message.stopReason)) out.push(message);
        break;
      case "user":
      case "toolResult":
        out.push(message);
        break;
      case "compactionSummary":
        out.push(summaryAsUser(message));
        break;
      case "bashExecution":
        if (message.excludeFromContext !== true) out.push(bashAsUser(message));
        break;
      default:
        break;
    }
  }
  return out;
}
