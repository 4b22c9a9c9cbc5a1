/**
 * The file store: pi's session files. By default `<lifeline dir>/sessions/<encoded cwd>/
 * <timestamp>_<id>.jsonl`, as pi lays them out under its agent dir; with `dir` set, every file
 * goes directly in `dir` (pi's `--session-dir`).
 */
import { randomUUID } from "node:crypto";
import { type FileHandle, mkdir, open, readdir, readFile, rename, stat, unlink, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { LifelineError } from "../../shared/errors.js";
import { type FsyncPolicy, PersistenceQueue } from "./persistence-queue.js";
import {
  assertValidSessionId,
  encodeCwd,
  type SessionEntry,
  type SessionHeader,
  serializeLine,
  sessionFileName,
} from "./session-format.js";
import { assertNotLocked, lockSessionFile, type SessionLock } from "./session-lock.js";
import { type ParsedSession, parseSessionText, readSessionFile } from "./session-reader.js";
import type { OpenedSession, SessionInfo, SessionStore, SessionWriter, StoredSession } from "./session-store.js";
import { summarizeEntries } from "./session-summary.js";

/** Options of {@link FileSessionStore}. */
export interface FileSessionStoreOptions {
  /** The lifeline directory: sessions go under `<root>/sessions/<encoded cwd>/`. */
  root: string;
  /** Put every session file directly here instead (pi's `--session-dir`). */
  dir?: string | undefined;
  /** @default "batch" (see FsyncPolicy) */
  fsync?: FsyncPolicy | undefined;
}

/** Sessions as pi's JSONL files, one lock file per open session. */
export class FileSessionStore implements SessionStore {
  readonly #root: string;
  readonly #dir: string | undefined;
  readonly #fsync: FsyncPolicy;

  constructor(options: FileSessionStoreOptions) {
    this.#root = resolve(options.root);
    this.#dir = options.dir === undefined ? undefined : resolve(options.dir);
    this.#fsync = options.fsync ?? "batch";
  }

  /** The directory that holds `cwd`'s session files. */
  directoryOf(cwd: string): string {
    return this.#dir ?? join(this.#root, "sessions", encodeCwd(cwd));
  }

  async create(header: SessionHeader): Promise<SessionWriter> {
    assertValidSessionId(header.id);
    const directory = this.directoryOf(header.cwd);
    await mkdir(directory, { recursive: true });
    const path = join(directory, sessionFileName(header.timestamp, header.id));
    const lock = await lockSessionFile(path);
    try {
      const handle = await open(path, "wx").catch((error: unknown) => {
        throw fileError(`Could not create session file ${path}`, error);
      });
      const writer = new FileSessionWriter(path, handle, lock, this.#fsync, false);
      await writer.appendLines([serializeLine(header)]);
      return writer;
    } catch (error) {
      await lock.release();
      throw error;
    }
  }

  async open(ref: string, cwd: string): Promise<OpenedSession> {
    const path = await this.#resolve(ref, cwd);
    const lock = await lockSessionFile(path);
    try {
      let parsed: ParsedSession = await readSessionFile(path);
      if (parsed.migrated) {
        await rewriteFile(path, [serializeLine(parsed.header), ...parsed.entries.map(serializeLine)]);
        parsed = { ...parsed, endsWithNewline: true };
      }
      const handle = await open(path, "a").catch((error: unknown) => {
        throw fileError(`Could not open session file ${path} for appending`, error);
      });
      const writer = new FileSessionWriter(path, handle, lock, this.#fsync, !parsed.endsWithNewline);
      return { header: parsed.header, entries: parsed.entries, warnings: parsed.warnings, writer };
    } catch (error) {
      await lock.release();
      throw error;
    }
  }

  /** Reads a session file without locking it (damaged lines skipped, old versions migrated in memory). */
  async read(ref: string, cwd: string): Promise<StoredSession> {
    const { header, entries, warnings } = await readSessionFile(await this.#resolve(ref, cwd));
    return { header, entries, warnings };
  }

  async list(cwd: string | undefined): Promise<SessionInfo[]> {
    const files = await this.#files(cwd);
    const infos: SessionInfo[] = [];
    for (const file of files) {
      const info = await describe(file).catch(() => undefined);
      if (info === undefined) continue;
      if (this.#dir !== undefined && cwd !== undefined && info.cwd !== cwd) continue;
      infos.push(info);
    }
    return infos.sort((a, b) => b.modified.getTime() - a.modified.getTime());
  }

  /**
   * Deletes a session file no process has open (it takes the file's lock first, so a writer
   * cannot be appending meanwhile); resolves with what it was. The file's directory stays.
   */
  async delete(ref: string, cwd: string): Promise<SessionInfo> {
    const path = await this.#existing(ref, cwd);
    const lock = await lockSessionFile(path);
    try {
      const info = await describeToDelete(ref, path);
      await unlink(path).catch((error: unknown) => {
        throw fileError(`Could not delete session file ${path}`, error);
      });
      return info;
    } finally {
      await lock.release();
    }
  }

  /** What {@link delete} would delete: it checks the file's lock without taking it. */
  async deletable(ref: string, cwd: string): Promise<SessionInfo> {
    const path = await this.#existing(ref, cwd);
    await assertNotLocked(path);
    return describeToDelete(ref, path);
  }

  /** The path `ref` names, if its file exists. @throws ERR_SESSION_NOT_FOUND as #resolve, or if it does not. */
  async #existing(ref: string, cwd: string): Promise<string> {
    const path = await this.#resolve(ref, cwd);
    await stat(path).catch(() => {
      throw notFound(ref, path);
    });
    return path;
  }

  /** Session files of `cwd`'s directory, or of every directory when `cwd` is undefined. */
  async #files(cwd: string | undefined): Promise<string[]> {
    const directories =
      this.#dir !== undefined
        ? [this.#dir]
        : cwd !== undefined
          ? [this.directoryOf(cwd)]
          : (await readdirOrEmpty(join(this.#root, "sessions"))).map((name) => join(this.#root, "sessions", name));
    const files: string[] = [];
    for (const directory of directories) {
      for (const name of await readdirOrEmpty(directory)) {
        if (name.endsWith(".jsonl")) files.push(join(directory, name));
      }
    }
    return files;
  }

  /** A path (it has a separator or ends in .jsonl), else an id prefix: this cwd first, then all. */
  async #resolve(ref: string, cwd: string): Promise<string> {
    if (ref.includes("/") || ref.includes("\\") || ref.endsWith(".jsonl")) return resolve(cwd, ref);
    assertValidSessionId(ref);
    for (const scope of [cwd, undefined]) {
      const matches = (await this.#files(scope)).filter((file) => idOfFile(file).startsWith(ref));
      const exact = matches.filter((file) => idOfFile(file) === ref);
      if (exact.length === 1 || matches.length === 1) return (exact[0] ?? matches[0]) as string;
      if (matches.length > 1) {
        throw new LifelineError(
          "ERR_INVALID_OPTIONS",
          `Session id prefix "${ref}" matches ${matches.length} sessions (${matches.map(idOfFile).join(", ")}); give more of the id.`,
        );
      }
    }
    throw notFound(ref, this.#dir ?? join(this.#root, "sessions"));
  }
}

/** The SessionInfo of a file about to be deleted; ERR_SESSION_NOT_FOUND if it went meanwhile. */
function describeToDelete(ref: string, path: string): Promise<SessionInfo> {
  return describe(path).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") throw notFound(ref, path);
    throw fileError(`Could not read session file ${path}`, error);
  });
}

function notFound(ref: string, where: string): LifelineError {
  return new LifelineError(
    "ERR_SESSION_NOT_FOUND",
    `No session with an id starting "${ref}" in ${where}; list them with listSessions().`,
    { cliMessage: `No session with an id starting "${ref}" in ${where}; list them with \`lifeline sessions\`.` },
  );
}

/** The writer of one open session file. */
class FileSessionWriter implements SessionWriter {
  readonly path: string;
  readonly #queue: PersistenceQueue;
  readonly #lock: SessionLock;
  #closing: Promise<void> | undefined;

  constructor(path: string, handle: FileHandle, lock: SessionLock, fsync: FsyncPolicy, needsNewline: boolean) {
    this.path = path;
    this.#lock = lock;
    this.#queue = new PersistenceQueue(handle, path, fsync, needsNewline);
  }

  append(entries: readonly SessionEntry[], options: { lazy?: boolean } = {}): Promise<void> {
    return this.appendLines(entries.map(serializeLine), options.lazy === true);
  }

  appendLines(lines: string[], lazy = false): Promise<void> {
    return this.#queue.append(lines, lazy);
  }

  flush(): Promise<void> {
    return this.#queue.flush();
  }

  close(): Promise<void> {
    this.#closing ??= this.#queue.close().then(() => this.#lock.release());
    return this.#closing;
  }
}

/**
 * Replaces a file's content whole: a temp file in the same directory, then a rename, so a crash
 * leaves either the old file or the new one, never a mix.
 */
async function rewriteFile(path: string, lines: readonly string[]): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${randomUUID()}.tmp`);
  try {
    await writeFile(temp, lines.join(""), { flag: "wx" });
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw fileError(`Could not rewrite session file ${path}`, error);
  }
}

function idOfFile(file: string): string {
  const name = basename(file, ".jsonl");
  return name.slice(name.indexOf("_") + 1);
}

async function describe(file: string): Promise<SessionInfo> {
  const stats = await stat(file);
  const parsed = parseSessionText(await readFile(file, "utf8"), file);
  const { messageCount, firstMessage, name } = summarizeEntries(parsed.entries);
  return {
    id: parsed.header.id,
    path: file,
    cwd: parsed.header.cwd,
    created: new Date(parsed.header.timestamp),
    modified: stats.mtime,
    messageCount,
    firstMessage,
    ...(name === undefined || name === "" ? {} : { name }),
  };
}

async function readdirOrEmpty(directory: string): Promise<string[]> {
  try {
    return await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw fileError(`Could not list ${directory}`, error);
  }
}

function fileError(what: string, error: unknown): LifelineError {
  if (error instanceof LifelineError) return error;
  return new LifelineError("ERR_SESSION_FILE", `${what}: ${String(error)}`, { cause: error });
}
