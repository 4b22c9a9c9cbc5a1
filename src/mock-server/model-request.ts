/**
 * Reading a model request body: the checks both wire formats share, the conversation key, and
 * the word tokens an answer is streamed in.
 */
import type { IncomingHttpHeaders } from "node:http";
import { errorText } from "../shared/failures/error-text.js";

/** The header that names a request's conversation, overriding the first user message. */
export const CONVERSATION_HEADER = "x-mock-conversation";

const KEY_LENGTH = 200;

/** What the server needs from a well-formed model request. */
export interface ModelRequest {
  model: string;
  stream: boolean;
  /** OpenAI `stream_options.include_usage`: whether a usage chunk precedes `[DONE]`. */
  includeUsage: boolean;
  conversation: string;
  /** A rough count (4 characters a token), so usage fields are plausible. */
  promptTokens: number;
  /**
   * Assistant turns since the last user prompt: the assistant messages after the last `user`
   * message that is not only tool results (OpenAI sends those as `tool` messages, Anthropic as
   * `user` messages of `tool_result` blocks). 0 for a fresh prompt; 1 after one round of tools.
   */
  toolTurns: number;
  /** The body's reasoning parameters as sent ({@link REASONING_FIELDS}); absent when it has none. */
  reasoning?: Record<string, unknown>;
}

/**
 * Top-level body fields that carry a request's reasoning: OpenAI's `reasoning_effort` (and the
 * `reasoning` object of OpenRouter-style endpoints), Anthropic's `thinking` and `output_config`
 * (adaptive thinking's `effort`).
 */
const REASONING_FIELDS = ["reasoning_effort", "reasoning", "thinking", "output_config"] as const;

/** Why a body is not a model request, worded for the client; `param` is the field at fault. */
export interface RequestProblem {
  problem: string;
  param: string | null;
}

/** Parses and checks a body. Never throws: anything malformed becomes a {@link RequestProblem}. */
export function parseModelRequest(body: string, headers: IncomingHttpHeaders): ModelRequest | RequestProblem {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    const reason = errorText(error);
    return { problem: `The request body is not valid JSON (${reason}). Send a JSON object.`, param: null };
  }
  if (!isRecord(value)) return { problem: "The request body must be a JSON object.", param: null };
  const { model, messages, stream } = value;
  if (typeof model !== "string" || model === "") {
    return { problem: "Missing required parameter: 'model' (a non-empty string).", param: "model" };
  }
  if (!Array.isArray(messages) || messages.length === 0) {
    return { problem: "Missing required parameter: 'messages' (a non-empty array of messages).", param: "messages" };
  }
  const badIndex = messages.findIndex((m) => !isRecord(m) || typeof m.role !== "string");
  if (badIndex !== -1) {
    return { problem: `messages[${badIndex}] must be an object with a string 'role'.`, param: `messages[${badIndex}]` };
  }
  if (stream !== undefined && stream !== null && typeof stream !== "boolean") {
    return { problem: "'stream' must be a boolean.", param: "stream" };
  }
  const header = headers[CONVERSATION_HEADER];
  const named = typeof header === "string" ? header : undefined;
  const reasoning = Object.fromEntries(REASONING_FIELDS.filter((key) => key in value).map((key) => [key, value[key]]));
  return {
    ...(Object.keys(reasoning).length === 0 ? {} : { reasoning }),
    model,
    stream: stream === true,
    includeUsage: isRecord(value.stream_options) && value.stream_options.include_usage === true,
    conversation: (named ?? firstUserText(messages as Record<string, unknown>[])).trim().slice(0, KEY_LENGTH),
    promptTokens: Math.max(1, Math.ceil(JSON.stringify(messages).length / 4)),
    toolTurns: toolTurns(messages as Record<string, unknown>[]),
  };
}

/** True when `value` is a {@link RequestProblem}. */
export function isProblem(value: ModelRequest | RequestProblem): value is RequestProblem {
  return "problem" in value;
}

function toolTurns(messages: readonly Record<string, unknown>[]): number {
  let turns = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as Record<string, unknown>;
    if (message.role === "assistant") turns++;
    else if (message.role === "user" && !onlyToolResults(message.content)) break;
  }
  return turns;
}

/** An Anthropic `user` message that carries tool results only: part of a tool turn, not a prompt. */
function onlyToolResults(content: unknown): boolean {
  return (
    Array.isArray(content) &&
    content.length > 0 &&
    content.every((part: unknown) => isRecord(part) && part.type === "tool_result")
  );
}

function firstUserText(messages: readonly Record<string, unknown>[]): string {
  const content = messages.find((m) => m.role === "user")?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part: unknown) => (isRecord(part) && typeof part.text === "string" ? part.text : "")).join("");
}

/**
 * Splits `text` into word tokens, each keeping its leading whitespace so that they join back
 * into the text. With `count`, the words are repeated or trimmed to exactly that many.
 */
export function wordTokens(text: string, count?: number): string[] {
  const words = text.match(/\s*\S+/g) ?? [];
  if (count === undefined || words.length === 0) return words;
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    const word = words[i % words.length] ?? "";
    // A repeated first word has no leading space of its own.
    tokens.push(i >= words.length && !/^\s/.test(word) ? ` ${word}` : word);
  }
  return tokens;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
