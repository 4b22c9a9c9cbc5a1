/**
 * `--prompts-file`: a JSONL file of prompts, each line either one prompt, `{"prompt": "…"}`, or a
 * whole conversation, `{"turns": ["…", "…"]}`. Blank lines are skipped; any other line is refused
 * with its line number.
 *
 * A file of prompts only is used as before: its texts round-robin across the run. A file with a
 * conversation line gives each session a conversation (session i the line i modulo their number;
 * a prompt line there is a conversation of one turn), which the session sends in order.
 */
import { readFile } from "node:fs/promises";
import { LifelineError } from "../../../shared/errors.js";

/** What a prompts file holds: texts used round-robin, or one conversation per session. */
export type PromptsFile = { promptTexts: string[] } | { conversations: string[][] };

const SHAPES = 'each line must be {"prompt": "…"} or {"turns": ["…", …]} with non-empty strings';

/**
 * Reads and parses `path`.
 * @throws ERR_INVALID_OPTIONS naming the file and the line of a bad entry, or an unreadable or
 *   empty file.
 */
export async function readPromptsFile(path: string): Promise<PromptsFile> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    return usage(`--prompts-file ${path} cannot be read: ${(error as Error).message}.`);
  }
  return parsePromptsFile(text, path);
}

/**
 * {@link readPromptsFile} on text; `source` names the file in errors.
 * @throws ERR_INVALID_OPTIONS `--prompts-file <source>:<line>: …` for a bad line.
 */
export function parsePromptsFile(text: string, source: string): PromptsFile {
  const lines: string[][] = [];
  let conversation = false;
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "") continue;
    const where = `--prompts-file ${source}:${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      usage(`${where}: not JSON (${(error as Error).message}); ${SHAPES}.`);
    }
    const turns = turnsOf(value);
    if (turns === undefined) usage(`${where}: ${SHAPES}.`);
    if (turns.kind === "turns") conversation = true;
    lines.push(turns.texts);
  }
  if (lines.length === 0) usage(`--prompts-file ${source} holds no prompt; write one {"prompt": "…"} per line.`);
  return conversation ? { conversations: lines } : { promptTexts: lines.map((texts) => texts[0] as string) };
}

/**
 * The text of prompt number `prompt` (0-based) of session `session` when the sessions have
 * conversations: session i plays `conversations[i % length]`, turn by turn, from its first turn
 * again when it sends more prompts than the conversation has.
 */
export function conversationTurn(
  conversations: readonly (readonly string[])[],
  session: number,
  prompt: number,
): string {
  const conversation = conversations[session % conversations.length] ?? [];
  return conversation[prompt % conversation.length] ?? "";
}

/** The texts of one line's value, or undefined when it is neither shape. */
function turnsOf(value: unknown): { kind: "prompt" | "turns"; texts: string[] } | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const { prompt, turns } = value as { prompt?: unknown; turns?: unknown };
  if (prompt !== undefined && turns !== undefined) return undefined;
  if (prompt !== undefined) return nonEmpty(prompt) ? { kind: "prompt", texts: [prompt] } : undefined;
  if (!Array.isArray(turns) || turns.length === 0 || !turns.every(nonEmpty)) return undefined;
  return { kind: "turns", texts: turns };
}

function nonEmpty(value: unknown): value is string {
  return typeof value === "string" && value.trim() !== "";
}

function usage(message: string): never {
  throw new LifelineError("ERR_INVALID_OPTIONS", message);
}
