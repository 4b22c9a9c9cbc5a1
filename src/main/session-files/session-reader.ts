/**
 * Reading a session file: parse it line by line, never throwing on a damaged line, and migrate
 * older versions in memory. A torn last line (the host died mid-append) is skipped with a warning
 * naming the file and line; so is any other line that is not JSON (pi skips those too).
 */
import { readFile } from "node:fs/promises";
import { LifelineError } from "../../shared/errors.js";
import { newEntryId, SESSION_VERSION, type SessionEntry, type SessionHeader } from "./session-format.js";

/** A parsed session file. */
export interface ParsedSession {
  header: SessionHeader;
  entries: SessionEntry[];
  /** One text per skipped line, naming the file and the line number. */
  warnings: string[];
  /** False when the file's last byte is not a newline: the next append must start with one. */
  endsWithNewline: boolean;
  /** True when the file was of an older version and was migrated in memory (rewrite it). */
  migrated: boolean;
}

/**
 * Parses a session file's text. `file` only names it in warnings and errors.
 * @throws LifelineError ERR_SESSION_FILE when the first line is not a session header.
 */
export function parseSessionText(text: string, file: string): ParsedSession {
  const lines = text.split("\n");
  const endsWithNewline = text.length === 0 || text.endsWith("\n");
  // split leaves "" after a final newline; that is not a line.
  if (endsWithNewline) lines.pop();
  const warnings: string[] = [];
  const records: Record<string, unknown>[] = [];
  lines.forEach((line, index) => {
    if (line.trim() === "") return;
    const lineNumber = index + 1;
    const torn = !endsWithNewline && index === lines.length - 1;
    try {
      const value: unknown = JSON.parse(line);
      if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error("not an object");
      records.push(value as Record<string, unknown>);
    } catch {
      warnings.push(
        torn
          ? `${file}:${lineNumber}: skipped a torn last line (the writer stopped mid-append); the rest of the session is intact`
          : `${file}:${lineNumber}: skipped a line that is not a JSON object`,
      );
    }
  });
  const first = records[0];
  if (first === undefined || first.type !== "session" || typeof first.id !== "string") {
    throw new LifelineError(
      "ERR_SESSION_FILE",
      `${file} is not a session file: its first line must be a {"type":"session",...} header. Pass a .jsonl file written by lifeline or pi.`,
    );
  }
  const header = first as unknown as SessionHeader;
  const entries = records.slice(1) as unknown as SessionEntry[];
  const migrated = migrate(header, entries);
  return { header, entries, warnings, endsWithNewline, migrated };
}

/**
 * Reads and parses a session file (asynchronously: never blocks the host's event loop).
 * @throws LifelineError ERR_SESSION_NOT_FOUND when it does not exist, ERR_SESSION_FILE when it
 *   cannot be read or has no header.
 */
export async function readSessionFile(file: string): Promise<ParsedSession> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      throw new LifelineError("ERR_SESSION_NOT_FOUND", `No session file at ${file}; check the path.`, { cause: error });
    }
    throw new LifelineError("ERR_SESSION_FILE", `Could not read session file ${file}: ${String(error)}`, {
      cause: error,
    });
  }
  return parseSessionText(text, file);
}

/**
 * Brings version 1 (a flat list without ids) and version 2 (`hookMessage` role) entries to
 * version 3, in place, as pi's documentation describes. Returns whether anything changed.
 */
function migrate(header: SessionHeader, entries: SessionEntry[]): boolean {
  const version = typeof header.version === "number" ? header.version : 1;
  if (version >= SESSION_VERSION) return false;
  if (version < 2) {
    const taken = new Set<string>();
    let previous: string | null = null;
    for (const entry of entries) {
      entry.id = newEntryId(taken);
      taken.add(entry.id);
      entry.parentId = previous;
      previous = entry.id;
    }
    for (const entry of entries) {
      const index = (entry as { firstKeptEntryIndex?: unknown }).firstKeptEntryIndex;
      if (entry.type !== "compaction" || typeof index !== "number") continue;
      // The index counted the header as entry 0.
      const kept = entries[index - 1];
      if (kept !== undefined) (entry as { firstKeptEntryId?: string }).firstKeptEntryId = kept.id;
      delete (entry as { firstKeptEntryIndex?: unknown }).firstKeptEntryIndex;
    }
  }
  for (const entry of entries) {
    const message = (entry as { message?: { role?: unknown } }).message;
    if (entry.type === "message" && message?.role === "hookMessage") message.role = "custom";
  }
  header.version = SESSION_VERSION;
  return true;
}
