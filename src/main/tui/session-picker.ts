/**
 * The `-r/--resume` picker: this directory's stored sessions as a pi-tui SelectList, most recent
 * first, one line each: its name (or first user message), then how long ago it was written and how
 * many messages it holds. Up/Down move, Enter picks, Esc or Ctrl+C cancels (SelectList's keys).
 */
import { Container, type SelectItem, SelectList, Text } from "@mariozechner/pi-tui";
import type { SessionInfo } from "../session-files/session-store.js";
import { style } from "./theme.js";

/** How many sessions show at once; SelectList scrolls the rest and shows "(n/total)". */
const VISIBLE = 10;

/** "now", "5m", "3h", "2d", "3w", or the date for anything older than four weeks. */
export function sessionAge(modified: Date, now: Date): string {
  const minutes = Math.floor((now.getTime() - modified.getTime()) / 60_000);
  if (minutes < 1) return "now";
  if (minutes < 60) return `${minutes}m ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h ago`;
  const days = Math.floor(hours / 24);
  if (days < 28) return days < 7 ? `${days}d ago` : `${Math.floor(days / 7)}w ago`;
  return modified.toISOString().slice(0, 10);
}

/**
 * One picker row for a session. The label is its name, else its first user message, else its id,
 * on one line with control characters blanked (a stored message must not move the cursor).
 */
export function sessionPickItem(info: SessionInfo, now: Date): SelectItem {
  const text = (info.name ?? "") || info.firstMessage || `(no messages) ${info.id}`;
  const label = text.replace(/\p{Cc}+/gu, " ").trim();
  const messages = `${info.messageCount} ${info.messageCount === 1 ? "message" : "messages"}`;
  return { value: info.path, label, description: `${sessionAge(info.modified, now)} · ${messages}` };
}

/** The picker: a title, the list, and a key hint. Focus it; it forwards keys to the list. */
export class SessionPicker extends Container {
  readonly #list: SelectList;

  /**
   * @param sessions as `listSessions` returns them (most recent first); not empty.
   * @param done called once with the chosen session, or `undefined` when the user cancels.
   */
  constructor(sessions: readonly SessionInfo[], done: (chosen: SessionInfo | undefined) => void, now = new Date()) {
    super();
    const byPath = new Map(sessions.map((info) => [info.path, info]));
    this.#list = new SelectList(
      sessions.map((info) => sessionPickItem(info, now)),
      VISIBLE,
      {
        selectedPrefix: style.cyan,
        selectedText: style.cyan,
        description: style.gray,
        scrollInfo: style.gray,
        noMatch: style.gray,
      },
      { minPrimaryColumnWidth: 24, maxPrimaryColumnWidth: 60 },
    );
    let settled = false;
    const settle = (chosen: SessionInfo | undefined) => {
      if (settled) return;
      settled = true;
      done(chosen);
    };
    this.#list.onSelect = (item) => settle(byPath.get(item.value));
    this.#list.onCancel = () => settle(undefined);
    this.addChild(new Text(style.bold(`Resume a session (${sessions.length} in this directory)`), 1, 0));
    this.addChild(this.#list);
    this.addChild(new Text(style.gray("↑/↓ choose · Enter resumes · Esc or Ctrl+C quits"), 1, 0));
  }

  handleInput(data: string): void {
    this.#list.handleInput(data);
  }
}
