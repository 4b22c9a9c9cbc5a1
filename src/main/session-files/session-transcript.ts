/**
 * From a session file's entries to what a session restarts with: the path from the last entry
 * (pi's leaf) to the root, its messages as `history`, the runtime transcript the model sees
 * (`messages`), and the model last chosen. Pure: no I/O.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { summaryMessage } from "../../shared/compaction/summary-message.js";
import type { PromptResult } from "../../shared/events.js";
import { isRemovableFailure } from "../../shared/failures/classify.js";
import { isThinkingLevel, type ThinkingLevel } from "../../shared/thinking.js";
import {
  type CompactionEntry,
  type CustomEntry,
  type MessageEntry,
  PROMPT_CUSTOM_TYPE,
  PROMPT_END_CUSTOM_TYPE,
  type PromptEndData,
  type PromptMarkData,
  QUEUE_CLEARED_CUSTOM_TYPE,
  QUEUED_CUSTOM_TYPE,
  type QueuedData,
  type SessionEntry,
} from "./session-format.js";

/** What a resumed session starts from. */
export interface RestoredTranscript {
  /** Every message on the leaf's path, failed attempts included (R4's persisted history). */
  history: AgentMessage[];
  /** Entry id of each `history` message, same order. */
  historyIds: string[];
  /**
   * The runtime transcript: `history` without the failed attempts that a retry replaced (an
   * assistant error directly followed by another assistant message) and without the roles the
   * worker does not send to models (pi's custom, branchSummary, ...). After a `compaction` entry
   * on the path (the last one counts, as in pi), it starts with that entry's summary and goes on
   * from its first kept message.
   */
  messages: AgentMessage[];
  /**
   * Steering and follow-up messages lifeline accepted (a `lifeline.queued` entry) that never
   * reached the transcript before the file ended. The resumed session appends them to its
   * transcript once, so they are neither lost nor sent twice.
   */
  undelivered: AgentMessage[];
  /** The last `model_change` on the path, else the last assistant message's model. */
  model: { provider: string; id: string } | undefined;
  /** The last `thinking_level_change` on the path (as pi reads it); undefined when there is none. */
  thinkingLevel: ThinkingLevel | undefined;
  /** The leaf: the last entry of the file (pi appends to it). */
  leafId: string | null;
  /**
   * Prompts given an id (`prompt(text, { id })`) on the leaf's path: stored (their user message
   * is there) and, once settled, what they settled with.
   */
  prompts: Map<string, PromptRecord>;
  /** The id of the last prompt stored with an id (file order), if any: the run a cut-off transcript ends in belongs to it. */
  lastPromptId: string | undefined;
}

/** What became of a prompt given an id: stored, and `result` once it settled. */
export interface PromptRecord {
  /** How it settled; undefined when its run never finished (its host stopped first). */
  result?: PromptResult;
}

/** The roles the worker shows the model (a `bashExecution` as a user turn); pi's others (custom, ...) stay in `history`. */
const MODEL_ROLES = new Set(["user", "assistant", "toolResult", "bashExecution"]);

/** Builds the transcript of the path that ends at the file's last entry. */
export function restoreTranscript(entries: readonly SessionEntry[]): RestoredTranscript {
  const byId = new Map<string, SessionEntry>();
  for (const entry of entries) byId.set(entry.id, entry);
  const leaf = entries[entries.length - 1];
  const path: SessionEntry[] = [];
  const seen = new Set<string>();
  for (let entry = leaf; entry !== undefined && !seen.has(entry.id); ) {
    seen.add(entry.id);
    path.push(entry);
    entry = entry.parentId === null ? undefined : byId.get(entry.parentId);
  }
  path.reverse();

  const history: AgentMessage[] = [];
  const historyIds: string[] = [];
  let model: RestoredTranscript["model"];
  let thinkingLevel: ThinkingLevel | undefined;
  const queued: AgentMessage[] = [];
  const marks = new Map<string, string>();
  const prompts = new Map<string, PromptRecord>();
  let compaction: { entry: CompactionEntry; historyLength: number } | undefined;
  for (const entry of path) {
    if (entry.type === "compaction" && typeof (entry as Partial<CompactionEntry>).summary === "string") {
      compaction = { entry: entry as CompactionEntry, historyLength: history.length };
    } else if (entry.type === "message") {
      const message = (entry as MessageEntry).message;
      history.push(message);
      historyIds.push(entry.id);
      const delivered = queued.findIndex((candidate) => sameMessage(candidate, message));
      if (delivered >= 0) queued.splice(delivered, 1);
      if (message.role === "assistant") model = { provider: message.provider, id: message.model };
    } else if (entry.type === "model_change") {
      const change = entry as { provider?: unknown; modelId?: unknown };
      if (typeof change.provider === "string" && typeof change.modelId === "string") {
        model = { provider: change.provider, id: change.modelId };
      }
    } else if (entry.type === "thinking_level_change") {
      const level = (entry as { thinkingLevel?: unknown }).thinkingLevel;
      if (isThinkingLevel(level)) thinkingLevel = level;
    } else if (entry.type === "custom" && (entry as { customType?: unknown }).customType === QUEUED_CUSTOM_TYPE) {
      const data = (entry as { data?: Partial<QueuedData> }).data;
      if (data?.message !== undefined) queued.push(data.message);
    } else if (
      entry.type === "custom" &&
      (entry as { customType?: unknown }).customType === QUEUE_CLEARED_CUSTOM_TYPE
    ) {
      queued.length = 0;
    } else if (entry.type === "custom") {
      notePrompt(entry as CustomEntry, marks, prompts);
    }
  }
  // A mark counts only with its message: an append torn between them stored no prompt.
  const stored = new Set(historyIds);
  let lastPromptId: string | undefined;
  for (const [id, entryId] of marks) {
    if (!stored.has(entryId)) continue;
    lastPromptId = id;
    if (!prompts.has(id)) prompts.set(id, {});
  }
  const runtime = (message: AgentMessage, index: number) =>
    MODEL_ROLES.has(message.role) && !(isRemovableFailure(message) && history[index + 1]?.role === "assistant");
  let messages: AgentMessage[];
  if (compaction === undefined) {
    messages = history.filter(runtime);
  } else {
    const { entry, historyLength } = compaction;
    const kept = historyIds.indexOf(entry.firstKeptEntryId);
    // No kept message found (none was kept): the transcript goes on after the entry.
    const from = kept >= 0 && kept <= historyLength ? kept : historyLength;
    const summary = summaryMessage(entry.summary, entry.tokensBefore, Date.parse(entry.timestamp) || 0);
    messages = [summary, ...history.map((m, i) => (i >= from && runtime(m, i) ? m : undefined)).filter(isMessage)];
  }
  return {
    history,
    historyIds,
    messages,
    undelivered: queued,
    model,
    thinkingLevel,
    leafId: leaf?.id ?? null,
    prompts,
    lastPromptId,
  };
}

/** Reads a prompt's mark (its id → its message's entry id) or its end (its result) into the maps. */
function notePrompt(entry: CustomEntry, marks: Map<string, string>, prompts: Map<string, PromptRecord>): void {
  const data = entry.data as Partial<PromptMarkData & PromptEndData> | undefined;
  if (typeof data?.id !== "string") return;
  if (entry.customType === PROMPT_CUSTOM_TYPE && typeof data.entryId === "string") marks.set(data.id, data.entryId);
  if (entry.customType === PROMPT_END_CUSTOM_TYPE && data.result !== undefined) {
    prompts.set(data.id, { result: data.result });
  }
}

function isMessage(message: AgentMessage | undefined): message is AgentMessage {
  return message !== undefined;
}

/** The same message as it crossed a thread: same role, timestamp and content. */
export function sameMessage(a: AgentMessage, b: AgentMessage): boolean {
  return (
    a.role === b.role &&
    (a as { timestamp?: unknown }).timestamp === (b as { timestamp?: unknown }).timestamp &&
    "content" in a &&
    "content" in b &&
    JSON.stringify(a.content) === JSON.stringify(b.content)
  );
}
