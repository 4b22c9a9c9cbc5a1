/**
 * The summary request lifeline sends to the session's own model: the older part of the
 * conversation as plain text, and instructions for a summary another model can continue from.
 * lifeline's own wording; what the summary must keep (goal, decisions, state, next steps) follows
 * what a continuation needs.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { AssistantMessage, ToolResultMessage, UserMessage } from "@mariozechner/pi-ai";
import { isFailedStop } from "../failures/classify.js";
import { messageText } from "../message-text.js";

/** What the worker needs to ask for a summary. Plain data: crosses to the worker. */
export interface SummaryRequest {
  messages: AgentMessage[];
  previousSummary?: string;
  customInstructions?: string;
  /** Cap on the summary's length, in tokens (from `compaction.reserveTokens`). */
  maxTokens?: number;
}

export const SUMMARY_SYSTEM_PROMPT =
  "You condense conversations between a user and an AI assistant into working notes. " +
  "Another assistant will continue the conversation from your notes alone, without seeing the original. " +
  "Write only the notes: no greeting, no reply to the conversation itself.";

/** A tool result longer than this is shortened in the transcript sent for summary. */
const TOOL_RESULT_CHARS = 2000;

/** Images appear in the transcript as a marker, so the summary can say one was there. */
const IMAGE = { image: "[image]" } as const;

/** The user turn of the summary request. */
export function summaryPrompt(request: SummaryRequest): string {
  const parts = [`<transcript>\n${transcriptText(request.messages)}\n</transcript>`];
  if (request.previousSummary !== undefined) {
    parts.unshift(`<earlier-notes>\n${request.previousSummary}\n</earlier-notes>`);
    parts.push(
      "The earlier notes cover the conversation before this transcript. Merge both into one set of notes: keep what still holds, update what changed, drop what is no longer relevant.",
    );
  } else {
    parts.push("Write notes on this transcript.");
  }
  parts.push(
    [
      "Use these headings, each with short bullet points:",
      "## Objective: what the user wants, with the constraints and preferences they stated.",
      "## Done so far: what was tried, decided and completed; name files, commands, identifiers and values exactly.",
      "## Open: unfinished work, problems not yet solved, questions awaiting an answer.",
      "## Next: the immediate next step.",
      "Quote verbatim anything that must be exact (paths, errors, numbers).",
    ].join("\n"),
  );
  if (request.customInstructions !== undefined && request.customInstructions.trim() !== "") {
    parts.push(`Also: ${request.customInstructions.trim()}`);
  }
  return parts.join("\n\n");
}

/** The messages as labelled plain text, so the model reads them instead of answering them. */
export function transcriptText(messages: readonly AgentMessage[]): string {
  const lines: string[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "user":
        lines.push(`USER: ${messageText((message as UserMessage).content, IMAGE)}`);
        break;
      case "assistant": {
        const reply = message as AssistantMessage;
        if (isFailedStop(reply.stopReason)) break;
        for (const block of reply.content) {
          if (block.type === "text") lines.push(`ASSISTANT: ${block.text}`);
          else if (block.type === "toolCall")
            lines.push(`ASSISTANT CALLS ${block.name} ${JSON.stringify(block.arguments)}`);
        }
        break;
      }
      case "toolResult": {
        const result = message as ToolResultMessage;
        const text = messageText(result.content, IMAGE);
        const shown = text.length > TOOL_RESULT_CHARS ? `${text.slice(0, TOOL_RESULT_CHARS)} […]` : text;
        lines.push(`TOOL ${result.toolName}${result.isError ? " FAILED" : ""}: ${shown}`);
        break;
      }
      case "compactionSummary":
        lines.push(`EARLIER NOTES: ${message.summary}`);
        break;
      case "bashExecution": {
        if (message.excludeFromContext === true) break;
        const out =
          message.output.length > TOOL_RESULT_CHARS
            ? `[…] ${message.output.slice(-TOOL_RESULT_CHARS)}`
            : message.output;
        lines.push(`USER RAN \`${message.command}\`${message.cancelled ? " (cancelled)" : ""}: ${out}`);
        break;
      }
      default:
        break;
    }
  }
  return lines.join("\n\n");
}
