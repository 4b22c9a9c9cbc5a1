/**
 * pi's fork and clone on stored sessions, as data: which entries a new session file made from a
 * point of another gets (the path from the root to that point, as pi's `createBranchedSession`
 * writes it), its header naming the file it came from (`parentSession`), and the user messages a
 * fork may start from (pi's `getUserMessagesForForking`). Pure; the host does the I/O.
 */
import { randomUUID } from "node:crypto";
import { LifelineError } from "../../shared/errors.js";
import { messageText } from "../../shared/message-text.js";
import { SESSION_VERSION, type SessionEntry, type SessionHeader } from "./session-format.js";

/** A user message a fork may start from: its entry and its text. */
export interface ForkMessage {
  entryId: string;
  text: string;
}

/**
 * Where a fork starts: `"before"` a user message (pi's `fork`: the new session holds what came
 * before it, and the message's text is handed back to be edited and sent again), or `"at"` any
 * entry (pi's `clone` at the leaf: the new session holds the entry and everything before it).
 */
export type ForkPosition = "before" | "at";

/** The user messages of `entries` with any text, in file order, as pi lists them for `/fork`. */
export function forkMessages(entries: readonly SessionEntry[]): ForkMessage[] {
  const messages: ForkMessage[] = [];
  for (const entry of entries) {
    if (entry.type !== "message") continue;
    const message = (entry as { message?: { role?: unknown; content?: unknown } }).message;
    if (message?.role !== "user") continue;
    const text = messageText(message.content);
    if (text !== "") messages.push({ entryId: entry.id, text });
  }
  return messages;
}

/**
 * The new session's header and entries for a fork of the stored session (`header`, `entries`,
 * kept at `file`) at `entryId`; `text` is the user message's text for `"before"`.
 * @throws LifelineError ERR_INVALID_OPTIONS when `entryId` names no entry, or (for `"before"`) no
 *   user message.
 */
export function forkedSession(
  stored: { header: SessionHeader; entries: readonly SessionEntry[]; file: string },
  entryId: string,
  position: ForkPosition,
): { header: SessionHeader; entries: SessionEntry[]; text: string | undefined } {
  const byId = new Map(stored.entries.map((entry) => [entry.id, entry]));
  const selected = byId.get(entryId);
  const isUserMessage =
    selected?.type === "message" && (selected as { message?: { role?: unknown } }).message?.role === "user";
  if (selected === undefined || (position === "before" && !isUserMessage)) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `Invalid entry ID for forking: ${JSON.stringify(entryId)} names no ${position === "before" ? "user message" : "entry"} of the session; get_fork_messages lists the ones a fork can start from.`,
    );
  }
  const leafId = position === "at" ? selected.id : selected.parentId;
  const path: SessionEntry[] = [];
  const seen = new Set<string>();
  for (let id = leafId; id !== null; ) {
    const entry = byId.get(id);
    // A dangling parent or a cycle (a damaged file) ends the path where it breaks.
    if (entry === undefined || seen.has(id)) break;
    seen.add(id);
    path.push(entry);
    id = entry.parentId;
  }
  path.reverse();
  const header: SessionHeader = {
    type: "session",
    version: SESSION_VERSION,
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    cwd: stored.header.cwd,
    parentSession: stored.file,
  };
  const text =
    position === "before" ? messageText((selected as { message?: { content?: unknown } }).message?.content) : undefined;
  // pi rebuilds labels from its own index; lifeline writes none, and a label of another branch
  // would point outside the path.
  return { header, entries: path.filter((entry) => entry.type !== "label"), text };
}
