/**
 * What a listing shows of a session's entries (`SessionInfo`'s messageCount, firstMessage and
 * name), computed the same way by every store: the file store from a whole file, the Redis store
 * from each appended batch.
 */

import { messageText } from "../../shared/message-text.js";
import type { SessionEntry } from "./session-format.js";

/** A summary of some entries, in order. */
export interface EntriesSummary {
  /** `message` entries among them. */
  messageCount: number;
  /** Text of the first user message with any text; "" when there is none. */
  firstMessage: string;
  /** Set when a `session_info` entry is among them: the name the last one gives ("" for none). */
  name: string | undefined;
}

/** Summarises `entries` (pi's `session_info` names a session; its last one counts). */
export function summarizeEntries(entries: readonly SessionEntry[]): EntriesSummary {
  let messageCount = 0;
  let firstMessage = "";
  let name: string | undefined;
  for (const entry of entries) {
    if (entry.type === "session_info") {
      const named = (entry as { name?: unknown }).name;
      name = typeof named === "string" ? named : "";
    }
    if (entry.type !== "message") continue;
    messageCount++;
    const message = (entry as { message?: { role?: unknown; content?: unknown } }).message;
    if (firstMessage === "" && message?.role === "user") firstMessage = messageText(message.content);
  }
  return { messageCount, firstMessage, name };
}
