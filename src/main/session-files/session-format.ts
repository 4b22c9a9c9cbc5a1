/**
 * pi's session file format, version 3, as lifeline reads and writes it: one JSON object per line,
 * a `session` header first, then entries that form a tree through `id`/`parentId` (the last entry
 * is the current leaf). Written from pi's documentation of the format (its session-format.md), not
 * its code.
 */
import { randomUUID } from "node:crypto";
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { LifelineError } from "../../shared/errors.js";
import type { PromptResult } from "../../shared/events.js";
import type { ThinkingLevel } from "../../shared/thinking.js";

/** The version lifeline writes. Files of versions 1 and 2 are migrated when opened (as pi does). */
export const SESSION_VERSION = 3;

/** The first line of a session file. Not part of the entry tree. */
export interface SessionHeader {
  type: "session";
  version: number;
  id: string;
  /** ISO time the session was created. */
  timestamp: string;
  /** The working directory the session belongs to. */
  cwd: string;
  /** The file this session was forked from, if any (pi's `/fork`). */
  parentSession?: string;
}

/** Fields every entry has. `id` is 8 hex digits, unique in its file; `parentId` null for the root. */
export interface EntryBase {
  id: string;
  parentId: string | null;
  /** ISO time the entry was written. */
  timestamp: string;
}

/** A transcript message (user, assistant, tool result, or one of pi's own roles). */
export interface MessageEntry extends EntryBase {
  type: "message";
  message: AgentMessage;
}

/** The model changed (also written when a session starts, as pi does). */
export interface ModelChangeEntry extends EntryBase {
  type: "model_change";
  provider: string;
  modelId: string;
}

/** pi's record of the session's thinking level: written when a session starts and when it changes. */
export interface ThinkingLevelChangeEntry extends EntryBase {
  type: "thinking_level_change";
  thinkingLevel: ThinkingLevel;
}

/**
 * Extension data, outside the model's context. lifeline writes one with customType
 * {@link QUEUED_CUSTOM_TYPE} when it sends a steering or follow-up message to the worker, so
 * that a message accepted but not yet delivered survives a restart (see session-transcript.ts).
 */
export interface CustomEntry extends EntryBase {
  type: "custom";
  customType: string;
  data?: unknown;
}

/**
 * pi's record of a compaction: `summary` stands for every message on the path before
 * `firstKeptEntryId`; the model sees the summary, then the messages from that entry on. lifeline
 * adds `tokensAfter` (pi ignores it). `fromHook`: written from a host hook's transcript.
 */
export interface CompactionEntry extends EntryBase {
  type: "compaction";
  summary: string;
  firstKeptEntryId: string;
  tokensBefore: number;
  tokensAfter?: number;
  details?: unknown;
  fromHook?: boolean;
}

/** Any other pi entry (label, session_info, ...): kept in the tree, not interpreted. */
export interface OtherEntry extends EntryBase {
  type: string;
  [key: string]: unknown;
}

/** One line after the header. */
export type SessionEntry =
  | MessageEntry
  | ModelChangeEntry
  | ThinkingLevelChangeEntry
  | CustomEntry
  | CompactionEntry
  | OtherEntry;

/** `customType` of lifeline's record of a queued (steering or follow-up) message. */
export const QUEUED_CUSTOM_TYPE = "lifeline.queued";

/**
 * `customType` of lifeline's record that `abort()` dropped every steering and follow-up message
 * not yet delivered: a restore must not deliver them.
 */
export const QUEUE_CLEARED_CUSTOM_TYPE = "lifeline.queue_cleared";

/** What a {@link QUEUED_CUSTOM_TYPE} entry carries. */
export interface QueuedData {
  kind: "steer" | "followUp";
  message: AgentMessage;
}

/**
 * `customType` of lifeline's record that a prompt given an id (`prompt(text, { id })`, such as a
 * fleet job's id) was stored: written in the same append as the prompt's user message, just
 * before it, and naming that message's entry (`data: {@link PromptMarkData}`), so a host that
 * opens the session later can tell whether the prompt was accepted.
 */
export const PROMPT_CUSTOM_TYPE = "lifeline.prompt";

/** `customType` of lifeline's record of how a prompt given an id ended (`data: {@link PromptEndData}`). */
export const PROMPT_END_CUSTOM_TYPE = "lifeline.prompt_end";

/** What a {@link PROMPT_CUSTOM_TYPE} entry carries. */
export interface PromptMarkData {
  /** The prompt's id, as the caller gave it. */
  id: string;
  /** Entry id of the prompt's user message (the entry after this one). */
  entryId: string;
}

/** What a {@link PROMPT_END_CUSTOM_TYPE} entry carries. */
export interface PromptEndData {
  id: string;
  /** What the prompt settled with, as `prompt()` resolved. */
  result: PromptResult;
}

/**
 * A new entry id: 8 hex digits not in `taken` (pi's shape), a full UUID if 100 draws collide.
 * The caller adds the result to `taken`.
 */
export function newEntryId(taken: ReadonlySet<string>): string {
  for (let i = 0; i < 100; i++) {
    const id = randomUUID().replaceAll("-", "").slice(0, 8);
    if (!taken.has(id)) return id;
  }
  return randomUUID();
}

/**
 * The directory name of a cwd under `<dir>/sessions/`, as pi names it: the leading separator
 * dropped, every `/`, `\` and `:` turned into `-`, and `--` on both ends.
 */
export function encodeCwd(cwd: string): string {
  let path = cwd;
  if (path.startsWith("/") || path.startsWith("\\")) path = path.slice(1);
  return `--${path.replace(/[/\\:]/g, "-")}--`;
}

/** `<ISO time with : and . as ->_<id>.jsonl`, pi's file name. `id` must be valid (see below). */
export function sessionFileName(createdAt: string, id: string): string {
  return `${createdAt.replace(/[:.]/g, "-")}_${id}.jsonl`;
}

/**
 * Refuses a session id that cannot safely become part of a file name: empty, over 200
 * characters, containing `/`, `\`, `..` or a control character.
 * @throws LifelineError ERR_INVALID_OPTIONS naming the problem.
 */
export function assertValidSessionId(id: string): void {
  const problem =
    id.length === 0
      ? "is empty"
      : id.length > 200
        ? "is longer than 200 characters"
        : /[/\\]/.test(id)
          ? "contains a path separator"
          : id.includes("..")
            ? 'contains ".."'
            : // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
              /[\u0000-\u001f\u007f]/.test(id)
              ? "contains a control character"
              : undefined;
  if (problem !== undefined) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `Session id ${JSON.stringify(id)} ${problem}; a persisted session's id becomes part of its file name. Use letters, digits, "-" and "_".`,
    );
  }
}

/** One line of the file, newline included. */
export function serializeLine(record: SessionHeader | SessionEntry): string {
  return `${JSON.stringify(record)}\n`;
}
