/**
 * Turns one session's transcript into entries of its stored session: gives each history
 * message a stable entry id, links it to the previous entry (pi's `parentId` chain), and keeps
 * the write-ahead promise (SPEC B7): a prompt's user message is stored before its run is posted
 * to the worker, and its echo from the worker is not stored twice.
 *
 * Main thread only. Appends return at once (see PersistenceQueue); only the write-ahead awaits.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { PromptResult } from "../../shared/events.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import {
  type CompactionEntry,
  type MessageEntry,
  newEntryId,
  PROMPT_CUSTOM_TYPE,
  PROMPT_END_CUSTOM_TYPE,
  type PromptEndData,
  type PromptMarkData,
  QUEUE_CLEARED_CUSTOM_TYPE,
  QUEUED_CUSTOM_TYPE,
  type QueuedData,
  type SessionEntry,
} from "./session-format.js";
import type { SessionWriter } from "./session-store.js";
import { sameMessage } from "./session-transcript.js";

/** Where a recorder continues: the ids in the file and its leaf (empty for a new session). */
export interface RecorderStart {
  ids: Iterable<string>;
  leafId: string | null;
  /** Entry ids of the history messages already stored, in order. */
  historyIds: string[];
}

/** Records one session's entries through its writer. */
export class SessionRecorder {
  readonly #writer: SessionWriter;
  readonly #taken: Set<string>;
  #leafId: string | null;
  readonly #historyIds: string[];
  /** Prompts stored ahead of their run, until the worker's echo of them reaches the history. */
  readonly #writtenAhead: { message: AgentMessage; id: string }[] = [];
  readonly #onError: (error: Error) => void;
  #reported = false;
  #failure: Error | undefined;

  /** `onError` hears about a failed append nobody awaited (once per session). */
  constructor(writer: SessionWriter, start: RecorderStart, onError: (error: Error) => void) {
    this.#writer = writer;
    this.#taken = new Set(start.ids);
    this.#leafId = start.leafId;
    this.#historyIds = [...start.historyIds];
    this.#onError = onError;
  }

  /** The first failed append, if any: entries recorded since may be missing from the store. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Where the session is stored (the session file). */
  get path(): string {
    return this.#writer.path;
  }

  /** Entry id of each history message, in history order: stable for the session's life and across resumes. */
  get historyIds(): readonly string[] {
    return this.#historyIds;
  }

  /**
   * The write-ahead of a prompt: resolves once `message` is stored (and synced per the store's
   * policy); with `promptId`, a `lifeline.prompt` entry naming the message goes just before it, in
   * the same append. @throws (rejects) ERR_SESSION_FILE when it cannot be stored; the prompt must not run.
   */
  async prompt(message: AgentMessage, promptId?: string): Promise<void> {
    // The mark and the message go in one append: a store that writes an append whole never
    // holds one without the other (and a reader also checks the message is there).
    const mark = promptId === undefined ? undefined : this.#base();
    const entry = this.#messageEntry(message);
    const entries: SessionEntry[] = [entry];
    if (mark !== undefined && promptId !== undefined) {
      const data: PromptMarkData = { id: promptId, entryId: entry.id };
      entries.unshift({ ...mark, type: "custom", customType: PROMPT_CUSTOM_TYPE, data });
    }
    const ahead = { message, id: entry.id };
    this.#writtenAhead.push(ahead);
    try {
      await this.#writer.append(entries);
    } catch (error) {
      this.#writtenAhead.splice(this.#writtenAhead.indexOf(ahead), 1);
      this.#failure ??= error instanceof Error ? error : new Error(String(error));
      throw error;
    }
  }

  /**
   * A steering or follow-up message the main thread is about to send: stored as a
   * `lifeline.queued` custom entry (outside the model's context), so a restart that finds it
   * undelivered can deliver it once. Its delivery is stored later as a message, where it happened.
   */
  queued(kind: QueuedData["kind"], message: AgentMessage): Promise<void> {
    const data: QueuedData = { kind, message };
    return this.#writer.append([{ ...this.#base(), type: "custom", customType: QUEUED_CUSTOM_TYPE, data }]);
  }

  /** `abort()` dropped the queued messages not yet delivered: a restore must not deliver them. */
  queueCleared(): void {
    this.#background([{ ...this.#base(), type: "custom", customType: QUEUE_CLEARED_CUSTOM_TYPE }]);
  }

  /**
   * How the prompt `promptId` ended (a `lifeline.prompt_end` entry), stored in the background like
   * messages; `flush()` resolves once it is stored.
   */
  promptEnd(promptId: string, result: PromptResult): void {
    const data: PromptEndData = { id: promptId, result };
    this.#background([{ ...this.#base(), type: "custom", customType: PROMPT_END_CUSTOM_TYPE, data }]);
  }

  /** A message reached the history (failed attempts included, R4). Stored unless written ahead. */
  history(message: AgentMessage): void {
    const index = this.#writtenAhead.findIndex((ahead) => sameMessage(ahead.message, message));
    if (index >= 0) {
      const [ahead] = this.#writtenAhead.splice(index, 1);
      if (ahead !== undefined) this.#historyIds.push(ahead.id);
      return;
    }
    const entry = this.#messageEntry(message);
    this.#historyIds.push(entry.id);
    this.#background([entry]);
  }

  /** The session's model changed (also recorded when a session starts, as pi does). */
  modelChange(provider: string, modelId: string): void {
    this.#background([{ ...this.#base(), type: "model_change", provider, modelId }]);
  }

  /** The session's thinking level changed (also recorded when a session starts, as pi does). */
  thinkingLevelChange(thinkingLevel: ThinkingLevel): void {
    this.#background([{ ...this.#base(), type: "thinking_level_change", thinkingLevel }]);
  }

  /**
   * A compaction replaced the transcript's older part with a summary (pi's `compaction` entry).
   * Stored in the background like messages: a crash before it lands resumes the uncompacted
   * transcript, which is still correct, only longer.
   */
  compaction(record: Omit<CompactionEntry, "type" | "id" | "parentId" | "timestamp">): void {
    this.#background([{ ...this.#base(), type: "compaction", ...record }]);
  }

  /** The session's display name (pi's `session_info` entry; its last one counts). Stored in the background. */
  sessionInfo(name: string): void {
    this.#background([{ ...this.#base(), type: "session_info", name }]);
  }

  /** Resolves once everything recorded so far is stored or has failed. */
  flush(): Promise<void> {
    return this.#writer.flush();
  }

  /** Flushes and releases the stored session. Idempotent. */
  close(): Promise<void> {
    return this.#writer.close();
  }

  #messageEntry(message: AgentMessage): MessageEntry {
    return { ...this.#base(), type: "message", message };
  }

  /** A new entry's id, parent and time; it becomes the leaf. */
  #base(): { id: string; parentId: string | null; timestamp: string } {
    const id = newEntryId(this.#taken);
    this.#taken.add(id);
    const parentId = this.#leafId;
    this.#leafId = id;
    return { id, parentId, timestamp: new Date().toISOString() };
  }

  #background(entries: SessionEntry[]): void {
    this.#writer.append(entries, { lazy: true }).catch((error: Error) => {
      this.#failure ??= error;
      if (this.#reported) return;
      this.#reported = true;
      this.#onError(error);
    });
  }
}
