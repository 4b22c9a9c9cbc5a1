/**
 * The auth storage backed by `$LIFELINE_DIR/auth.json` (auth-file.ts for the file, key-pool.ts for
 * which session uses which key). The session host uses one by default; embedding apps can create
 * their own, manage keys with {@link FileAuthStorage.add} / {@link FileAuthStorage.remove} /
 * {@link FileAuthStorage.list}, and pass it as `authStorage`.
 *
 * The file is read again when its size or modification time changed (one `stat` per request
 * attempt), so keys added by `lifeline auth add` in another process reach running sessions.
 */
import { statSync } from "node:fs";
import { LifelineError } from "../../shared/errors.js";
import { authPath, entriesOf, readAuthFile, storedValue, updateAuthFile } from "./auth-file.js";
import type { AuthStorage, LimitKind, UsageLimitInfo, UsageLimitOutcome } from "./auth-storage.js";
import { KeyPool } from "./key-pool.js";

/** One stored credential as listings show it: never the key itself. */
export interface AuthEntry {
  provider: string;
  /** 0-based position among the provider's entries (what `remove` takes). */
  index: number;
  type: string;
  /** The key with all but its first 3 and last 4 characters hidden ("****" for short keys). */
  masked: string;
  /** Epoch ms when this process's block on the key ends; absent when it is free. */
  blockedUntil?: number;
}

/** Options of {@link FileAuthStorage}. */
export interface FileAuthStorageOptions {
  /** Epoch ms; a test seam. @default Date.now */
  now?: () => number;
  /** How long a key stays blocked without a retry hint. @default 30 s rate limit, 30 min usage limit */
  blockMs?: Partial<Record<LimitKind, number>>;
}

/**
 * Serves keys from an `auth.json` of pi's format, rotating a provider's keys as they hit rate and
 * usage limits (see the file comment and docs/auth.md).
 */
export class FileAuthStorage implements AuthStorage {
  /** The file this storage reads and writes. */
  readonly path: string;
  readonly #pool: KeyPool;
  /** `size:mtimeMs` of the file as last read; "" before the first read. */
  #seen = "";

  /** A storage for `path` (an `auth.json`). Reading is lazy; a missing file has no keys. */
  constructor(path: string, options: FileAuthStorageOptions = {}) {
    this.path = path;
    this.#pool = new KeyPool({
      now: options.now ?? Date.now,
      ...(options.blockMs ? { blockMs: options.blockMs } : {}),
    });
  }

  /** The storage of a lifeline directory's `auth.json`. */
  static inDir(lifelineDir: string, options: FileAuthStorageOptions = {}): FileAuthStorage {
    return new FileAuthStorage(authPath(lifelineDir), options);
  }

  apiKeyFor(provider: string, sessionId: string): string | undefined {
    this.#refresh();
    return this.#pool.pick(provider, sessionId);
  }

  isExhausted(provider: string): boolean {
    this.#refresh();
    return this.#pool.isExhausted(provider);
  }

  markUsageLimitReached(provider: string, sessionId: string, info: UsageLimitInfo): UsageLimitOutcome {
    this.#refresh();
    return this.#pool.markLimited(provider, sessionId, info.kind ?? "usage_limit", info.retryAfterMs);
  }

  releaseSession(sessionId: string): void {
    this.#pool.release(sessionId);
  }

  /** Whether the file holds at least one API key for `provider`. */
  has(provider: string): boolean {
    this.#refresh();
    return this.#pool.has(provider);
  }

  /**
   * Appends an API key for `provider` (a provider with one key keeps pi's single-object shape;
   * more become an array). Under the file lock, so concurrent writers keep every entry.
   * Resolves with the new entry's index.
   * @throws ERR_INVALID_OPTIONS for an empty provider or key; ERR_AUTH_FILE.
   */
  async add(provider: string, key: string): Promise<number> {
    const name = checkProvider(provider);
    const trimmed = typeof key === "string" ? key.trim() : "";
    if (trimmed === "" || /\s/.test(trimmed)) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        "An API key must be a non-empty string without spaces or line breaks; pass the key exactly as the provider issued it.",
      );
    }
    const index = await updateAuthFile(this.path, (data) => {
      const entries = entriesOf(data[name]);
      entries.push({ type: "api_key", key: trimmed });
      data[name] = storedValue(entries);
      return entries.length - 1;
    });
    this.#refresh(true);
    return index;
  }

  /**
   * Removes `provider`'s entry at `index`, or all its entries when `index` is undefined.
   * Resolves with how many entries were removed (0 when there was none).
   * @throws ERR_INVALID_OPTIONS for a bad index; ERR_AUTH_FILE.
   */
  async remove(provider: string, index?: number): Promise<number> {
    const name = checkProvider(provider);
    if (index !== undefined && (!Number.isInteger(index) || index < 0)) {
      throw new LifelineError(
        "ERR_INVALID_OPTIONS",
        `The index must be a whole number ≥ 0 (see \`lifeline auth list\`).`,
      );
    }
    const removed = await updateAuthFile(this.path, (data) => {
      const entries = entriesOf(data[name]);
      if (index === undefined) {
        delete data[name];
        return entries.length;
      }
      if (index >= entries.length) return 0;
      entries.splice(index, 1);
      if (entries.length === 0) delete data[name];
      else data[name] = storedValue(entries);
      return 1;
    });
    this.#refresh(true);
    return removed;
  }

  /** Every stored credential with its key masked, providers in file order. */
  list(): AuthEntry[] {
    this.#refresh(true);
    const contents = readAuthFile(this.path);
    const listed: AuthEntry[] = [];
    for (const [provider, keys] of contents.keys) {
      keys.forEach((key, index) => {
        const entry: AuthEntry = { provider, index, type: "api_key", masked: maskKey(key) };
        const until = this.#pool.blockedUntil(provider, key);
        if (until !== undefined) entry.blockedUntil = until;
        listed.push(entry);
      });
    }
    for (const provider of contents.oauth) {
      listed.push({ provider, index: -1, type: "oauth", masked: "(oauth: not used by lifeline)" });
    }
    return listed;
  }

  /** Reads the file again when it changed since the last read (or always, with `force`). */
  #refresh(force = false): void {
    let stamp: string;
    try {
      const stat = statSync(this.path);
      stamp = `${stat.size}:${stat.mtimeMs}:${stat.ino}`;
    } catch {
      stamp = "missing";
    }
    if (!force && stamp === this.#seen) return;
    this.#seen = stamp;
    this.#pool.setKeys(readAuthFile(this.path).keys);
  }
}

/** A key as listings show it: its first 3 and last 4 characters, or "****" when that would reveal too much. */
export function maskKey(key: string): string {
  return key.length >= 16 ? `${key.slice(0, 3)}…${key.slice(-4)}` : "****";
}

function checkProvider(provider: string): string {
  if (typeof provider !== "string" || !/^[\w.@:-]+$/.test(provider)) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `Invalid provider name ${JSON.stringify(provider)}: use the provider's id, like "openai" or a models.json provider.`,
    );
  }
  return provider;
}
