/**
 * The entry id a compaction names its first kept message by (`firstKeptEntryId`).
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { newEntryId } from "../session-files/session-format.js";
import type { SessionRecorder } from "../session-files/session-recorder.js";

/**
 * A message's id in the session file when the session is persisted, else one given here, stable
 * for the message's life, so `firstKeptEntryId` always names something. One per session.
 */
export class EntryIds {
  readonly #recorder: SessionRecorder | undefined;
  /** The session's history, the live array (the recorder's ids are parallel to it). */
  readonly #history: readonly AgentMessage[];
  /** Ids of messages a session file does not name (an unpersisted session, a message not stored). */
  readonly #local = new WeakMap<AgentMessage, string>();
  readonly #taken = new Set<string>();

  constructor(recorder: SessionRecorder | undefined, history: readonly AgentMessage[]) {
    this.#recorder = recorder;
    this.#history = history;
  }

  /** The id of `message`: its file entry's, else a local one given once. */
  of(message: AgentMessage): string {
    if (this.#recorder !== undefined) {
      const id = this.#recorder.historyIds[this.#history.lastIndexOf(message)];
      if (id !== undefined) return id;
    }
    let id = this.#local.get(message);
    if (id === undefined) {
      id = this.fresh();
      this.#local.set(message, id);
    }
    return id;
  }

  /** A new id no other of this session's local ids has. */
  fresh(): string {
    const id = newEntryId(this.#taken);
    this.#taken.add(id);
    return id;
  }
}
