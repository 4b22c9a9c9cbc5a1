/**
 * The scrolling part of the terminal UI: the user's prompts, the assistant's answers as they
 * stream, tool activity, and the error and notice lines. A pi-tui `Container`, so every entry
 * re-wraps to the terminal's width on each render (a resize redraws cleanly).
 */

import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { Container, Markdown, Spacer, Text } from "@mariozechner/pi-tui";
import type { SessionEvent } from "../../shared/events.js";
import { messageText } from "../../shared/message-text.js";
import type { UiNotice } from "./session-ui-controller.js";
import { markdownTheme, style } from "./theme.js";

/** Longest rendering of a tool's arguments or error, in characters; tool output can be huge. */
const MAX_DETAIL = 120;

/**
 * A message's text as the transcript draws it: each text block on a line of its own (pi draws each
 * as a paragraph); thinking and tool calls are not part of the answer text.
 */
function answerText(content: unknown): string {
  return messageText(content, { separator: "\n" });
}

/** A one-line summary of unknown data (tool arguments or results), cut to {@link MAX_DETAIL}. */
export function summarize(value: unknown): string {
  let text: string;
  if (typeof value === "string") text = value;
  else if (isToolResult(value)) text = answerText(value.content);
  else {
    try {
      text = JSON.stringify(value) ?? "";
    } catch {
      text = String(value);
    }
  }
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > MAX_DETAIL ? `${line.slice(0, MAX_DETAIL - 1)}…` : line;
}

function isToolResult(value: unknown): value is { content: { type: string; text?: string }[] } {
  return typeof value === "object" && value !== null && Array.isArray((value as { content?: unknown }).content);
}

/**
 * The transcript. Call {@link addUser} when a prompt is sent, {@link handle} with every session
 * event, {@link addNotice} for the controller's lines; then request a render. Never throws.
 */
export class TranscriptView extends Container {
  /** The assistant message being streamed, until its `message_end`. */
  #assistant: Markdown | undefined;
  readonly #tools = new Map<string, Text>();

  /** Adds the user's prompt as sent. */
  addUser(text: string): void {
    this.addChild(new Spacer(1));
    this.addChild(new Text(style.bold(style.cyan(`› ${text}`)), 1, 0));
  }

  /**
   * Draws a resumed session's transcript (B7: `-c`, `--session`): each user message as sent and
   * each assistant message's text. Failed attempts, which have no text, draw nothing.
   */
  showHistory(messages: readonly AgentMessage[]): void {
    for (const message of messages) {
      if (message.role === "user") {
        const content = message.content;
        this.addUser(messageText(content));
      } else if (message.role === "assistant") {
        const text = answerText(message.content);
        if (text.trim() !== "") this.addChild(new Markdown(text, 1, 0, markdownTheme));
      }
    }
  }

  /** Adds an error or information line. */
  addNotice(notice: UiNotice): void {
    this.addChild(new Text(notice.level === "error" ? style.red(notice.text) : style.gray(notice.text), 1, 0));
  }

  /** Applies one session event: streamed answer text and tool activity; other events are ignored. */
  handle(event: SessionEvent): void {
    switch (event.type) {
      case "message_start":
      case "message_update":
      case "message_end": {
        const message = event.message;
        if (message.role !== "assistant") return;
        // The session rebuilds the whole message for every delta, so the text is taken from it
        // rather than appended: merged or dropped deltas cannot make the screen disagree with it.
        const text = answerText(message.content);
        if (this.#assistant === undefined) {
          this.#assistant = new Markdown(text, 1, 0, markdownTheme);
          this.addChild(this.#assistant);
        } else {
          this.#assistant.setText(text);
        }
        if (event.type === "message_end") {
          // A failed attempt has no text; its error line comes from the controller.
          if (text.trim() === "") this.removeChild(this.#assistant);
          this.#assistant = undefined;
        }
        return;
      }
      case "tool_execution_start": {
        const line = new Text(style.yellow(`⚙ ${event.toolName} ${summarize(event.args)}`), 1, 0);
        this.#tools.set(event.toolCallId, line);
        this.addChild(line);
        return;
      }
      case "tool_execution_end": {
        const text = event.isError
          ? style.red(`✗ ${event.toolName}: ${summarize(event.result)}`)
          : style.green(`✓ ${event.toolName}`) + style.gray(` ${summarize(event.result)}`);
        const line = this.#tools.get(event.toolCallId);
        this.#tools.delete(event.toolCallId);
        if (line === undefined) this.addChild(new Text(text, 1, 0));
        else line.setText(text);
        return;
      }
      default:
        return;
    }
  }
}
