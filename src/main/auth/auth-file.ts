/**
 * `$LIFELINE_DIR/auth.json`, pi's credential file, read as pi reads it and extended as oh-my-pi
 * extends it: a provider's value is one credential or an array of them.
 *
 *   { "openai": [{ "type": "api_key", "key": "A" }, { "type": "api_key", "key": "B" }],
 *     "anthropic": { "type": "api_key", "key": "C" } }
 *
 * - Keys are taken literally (pi also resolves `!command` and environment-variable names in this
 *   file; lifeline does that only in models.json).
 * - `oauth` entries are skipped with one warning: lifeline has no OAuth login.
 * - The file is created 0600 and rewritten 0600; a file that group or others can read gets one
 *   warning per process.
 * - Every write is a read-modify-write under a lock on the file (proper-lockfile, as pi), so two
 *   processes adding keys at once both keep their entries. Readers take no lock: a write is a
 *   rename of a complete temporary file, so a reader sees the old file or the new one.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import lockfile from "proper-lockfile";
import { LifelineError } from "../../shared/errors.js";
import { errorText } from "../../shared/failures/error-text.js";

/** The file's keys per provider, in file order, and what was skipped. */
export interface AuthFileContents {
  keys: Map<string, string[]>;
  /** Providers with `oauth` entries (skipped). */
  oauth: string[];
}

/** The auth file's path in a lifeline directory. */
export function authPath(lifelineDir: string): string {
  return join(lifelineDir, "auth.json");
}

const warned = new Set<string>();

/** Emits a process warning once per process and text. */
function warnOnce(text: string): void {
  if (warned.has(text)) return;
  warned.add(text);
  process.emitWarning(text, { code: "LIFELINE_AUTH_FILE" });
}

/**
 * Reads the file synchronously (it is small and read on the main thread between requests).
 * A missing file has no keys. Warns once about a file group or others can read, and about oauth
 * entries.
 * @throws LifelineError ERR_AUTH_FILE for unreadable or malformed JSON.
 */
export function readAuthFile(path: string): AuthFileContents {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { keys: new Map(), oauth: [] };
    throw new LifelineError("ERR_AUTH_FILE", `Cannot read ${path}: ${errorText(error)}. Check its permissions.`);
  }
  checkMode(path);
  const contents = parseAuthData(parseJson(text, path), path);
  if (contents.oauth.length > 0) {
    warnOnce(
      `${path}: skipping oauth credentials of ${contents.oauth.join(", ")}: lifeline has no OAuth login. Add an API key with \`lifeline auth add <provider>\`.`,
    );
  }
  return contents;
}

/** The keys of an already parsed file. Unknown or malformed entries are skipped with a warning. */
function parseAuthData(data: Record<string, unknown>, path: string): AuthFileContents {
  const keys = new Map<string, string[]>();
  const oauth: string[] = [];
  for (const [provider, value] of Object.entries(data)) {
    const entries = Array.isArray(value) ? value : [value];
    const list: string[] = [];
    entries.forEach((entry, index) => {
      const record = (entry ?? {}) as { type?: unknown; key?: unknown };
      if (record.type === "api_key" && typeof record.key === "string" && record.key !== "") list.push(record.key);
      else if (record.type === "oauth") {
        if (!oauth.includes(provider)) oauth.push(provider);
      } else {
        warnOnce(
          `${path}: skipping ${provider}${Array.isArray(value) ? `[${index}]` : ""}: expected { "type": "api_key", "key": "…" }.`,
        );
      }
    });
    if (list.length > 0) keys.set(provider, list);
  }
  return { keys, oauth };
}

/**
 * Read-modify-write under the file lock: creates the directory (0700) and the file (0600) if
 * needed, locks, reads the current contents, lets `mutate` change them, writes them back 0600.
 * @throws LifelineError ERR_AUTH_FILE when the lock cannot be had (another process holds it for
 *   more than ~10 s) or the file is malformed.
 */
export async function updateAuthFile<T>(path: string, mutate: (data: Record<string, unknown>) => T): Promise<T> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!existsSync(path)) {
    try {
      writeFileSync(path, "{}\n", { mode: 0o600, flag: "wx" });
    } catch (error) {
      // Another process created it first: fine, the lock orders the writes.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw fileError(path, error);
    }
  }
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(path, {
      realpath: false,
      stale: 10_000,
      retries: { retries: 20, factor: 1.5, minTimeout: 20, maxTimeout: 1000, randomize: true },
    });
  } catch (error) {
    throw new LifelineError(
      "ERR_AUTH_FILE",
      `Cannot lock ${path}: ${errorText(error)}. Another lifeline process may be writing it; try again.`,
    );
  }
  try {
    const data = parseJson(readFileSync(path, "utf8"), path);
    const result = mutate(data);
    const temporary = `${path}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
    chmodSync(temporary, 0o600);
    renameSync(temporary, path);
    return result;
  } finally {
    await release().catch(() => {});
  }
}

/** A credential list as stored: one object for one key (pi's shape), an array for more. */
export function storedValue(credentials: readonly unknown[]): unknown {
  return credentials.length === 1 ? credentials[0] : [...credentials];
}

/** The stored entries of a provider as an array (whatever shape the file has). */
export function entriesOf(value: unknown): unknown[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? [...value] : [value];
}

function checkMode(path: string): void {
  if (process.platform === "win32") return;
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch {
    return;
  }
  if ((mode & 0o077) === 0) return;
  warnOnce(
    `${path} can be read by other users (mode ${mode.toString(8).padStart(4, "0")}); it holds API keys. Run: chmod 600 ${path}`,
  );
}

function parseJson(text: string, path: string): Record<string, unknown> {
  let data: unknown;
  try {
    data = text.trim() === "" ? {} : JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the fault, which may be a key: not repeated.
    throw new LifelineError("ERR_AUTH_FILE", `${path} is not valid JSON. Fix or remove the file.`);
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new LifelineError(
      "ERR_AUTH_FILE",
      `${path} must hold a JSON object of providers, like { "openai": { "type": "api_key", "key": "…" } }. Fix or remove the file.`,
    );
  }
  return data as Record<string, unknown>;
}

function fileError(path: string, error: unknown): LifelineError {
  return new LifelineError(
    "ERR_AUTH_FILE",
    `Cannot write ${path}: ${errorText(error)}. Check the directory's permissions.`,
  );
}
