/**
 * Which key of a provider each session uses, and which keys are blocked until when. Pure: the
 * clock is injected and there is no I/O (file-auth-storage.ts feeds it the keys of auth.json).
 *
 * - Sticky: a session keeps its key while the key is free, so the provider's prompt cache (keyed
 *   by account) keeps working for it.
 * - Spread: a session without a key (new, or its key blocked) gets the free key with the fewest
 *   sessions on it now, ties broken by the fewest sessions ever given it, then by file order.
 * - Blocked: a key reported for a usage limit or a rate limit is not handed out until its reset.
 *
 * Blocks live in this process only: another lifeline process finds out by hitting the limit itself.
 */
import type { LimitKind, UsageLimitOutcome } from "./auth-storage.js";

/**
 * How long a key is blocked when the server gave no retry hint. Numbers taken from oh-my-pi's
 * credential backoff: a burst rate limit (requests or tokens per minute) resets within a minute,
 * so 30 s; an exhausted quota (a plan's usage window, billing) lasts hours, and 30 min keeps a
 * blocked key from being tried over and over without locking it out for the day.
 */
export const DEFAULT_BLOCK_MS: Readonly<Record<LimitKind, number>> = {
  rate_limit: 30_000,
  usage_limit: 30 * 60_000,
};

export interface KeyPoolOptions {
  /** Epoch ms. */
  now: () => number;
  /** Overrides of {@link DEFAULT_BLOCK_MS}. */
  blockMs?: Partial<Record<LimitKind, number>>;
}

export class KeyPool {
  readonly #now: () => number;
  readonly #blockMs: Record<LimitKind, number>;
  #keys = new Map<string, readonly string[]>();
  /** provider → sessionId → key. */
  readonly #sticky = new Map<string, Map<string, string>>();
  /** provider\0key → epoch ms when the key frees. */
  readonly #blockedUntil = new Map<string, number>();
  /** provider\0key → sessions ever given the key. */
  readonly #given = new Map<string, number>();

  constructor(options: KeyPoolOptions) {
    this.#now = options.now;
    this.#blockMs = { ...DEFAULT_BLOCK_MS, ...options.blockMs };
  }

  /** Replaces the key lists (the file was read again). Stickiness and blocks of kept keys survive. */
  setKeys(keys: ReadonlyMap<string, readonly string[]>): void {
    this.#keys = new Map(keys);
    for (const [provider, sessions] of this.#sticky) {
      const list = this.#keys.get(provider) ?? [];
      for (const [sessionId, key] of sessions) if (!list.includes(key)) sessions.delete(sessionId);
    }
  }

  /** Whether `provider` has any key here. */
  has(provider: string): boolean {
    return (this.#keys.get(provider)?.length ?? 0) > 0;
  }

  /**
   * The key `sessionId` uses for `provider`: its sticky key while free, else a free key by the
   * spread rule; when every key is blocked, its sticky key, else the one that frees first.
   */
  pick(provider: string, sessionId: string): string | undefined {
    const keys = this.#keys.get(provider);
    if (keys === undefined || keys.length === 0) return undefined;
    const sessions = this.#sessionsOf(provider);
    const current = sessions.get(sessionId);
    if (current !== undefined && this.#isFree(provider, current)) return current;
    const next = this.#freeKey(provider, keys, current) ?? current ?? this.#firstToFree(provider, keys);
    if (next !== undefined && next !== current) this.#assign(provider, sessionId, next);
    return next;
  }

  /**
   * R4: blocks the session's key until `retryAfterMs` from now (else the default of `kind`) and
   * moves the session to a free sibling. Answers `{ switched: true }`, or, when none is free,
   * `{ switched: false, retryAfterMs }` with the wait until the first key frees. A session that
   * has no key of the provider here answers `{ switched: false }`: its key came from elsewhere (its
   * own `apiKey`, models.json, the environment), so no stored key is to blame.
   */
  markLimited(provider: string, sessionId: string, kind: LimitKind, retryAfterMs?: number): UsageLimitOutcome {
    const keys = this.#keys.get(provider);
    if (keys === undefined || keys.length === 0) return { switched: false };
    const failed = this.#sessionsOf(provider).get(sessionId);
    if (failed === undefined) return { switched: false };
    // A burst rate limit on a provider's only key is a plain transient failure: the backoff
    // handles it, as it did before rotation, instead of a 30 s block.
    if (kind === "rate_limit" && keys.length < 2) return { switched: false };
    const now = this.#now();
    const until = now + Math.max(0, retryAfterMs ?? this.#blockMs[kind]);
    const slot = slotOf(provider, failed);
    this.#blockedUntil.set(slot, Math.max(this.#blockedUntil.get(slot) ?? 0, until));
    const next = this.#freeKey(provider, keys, failed);
    if (next !== undefined) {
      this.#assign(provider, sessionId, next);
      return { switched: true };
    }
    const first = this.#firstToFree(provider, keys);
    const frees = first === undefined ? until : (this.#blockedUntil.get(slotOf(provider, first)) ?? until);
    return { switched: false, retryAfterMs: Math.max(0, frees - now) };
  }

  /** Whether `provider` has keys here and every one is blocked now. */
  isExhausted(provider: string): boolean {
    const keys = this.#keys.get(provider);
    if (keys === undefined || keys.length === 0) return false;
    return keys.every((key) => !this.#isFree(provider, key));
  }

  /** Epoch ms when `key` of `provider` frees, or undefined when it is free. */
  blockedUntil(provider: string, key: string): number | undefined {
    const until = this.#blockedUntil.get(slotOf(provider, key));
    return until !== undefined && until > this.#now() ? until : undefined;
  }

  /** Forgets a session's keys (it ended): they count no more for the spread. */
  release(sessionId: string): void {
    for (const sessions of this.#sticky.values()) sessions.delete(sessionId);
  }

  #sessionsOf(provider: string): Map<string, string> {
    let sessions = this.#sticky.get(provider);
    if (sessions === undefined) {
      sessions = new Map();
      this.#sticky.set(provider, sessions);
    }
    return sessions;
  }

  #isFree(provider: string, key: string): boolean {
    return this.blockedUntil(provider, key) === undefined;
  }

  #assign(provider: string, sessionId: string, key: string): void {
    this.#sessionsOf(provider).set(sessionId, key);
    const slot = slotOf(provider, key);
    this.#given.set(slot, (this.#given.get(slot) ?? 0) + 1);
  }

  /** The free key with the fewest sessions now, then the fewest ever, then file order. */
  #freeKey(provider: string, keys: readonly string[], except: string | undefined): string | undefined {
    const load = new Map<string, number>();
    for (const key of this.#sessionsOf(provider).values()) load.set(key, (load.get(key) ?? 0) + 1);
    let best: string | undefined;
    let bestScore: [number, number] = [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
    for (const key of keys) {
      if (key === except || !this.#isFree(provider, key)) continue;
      const score: [number, number] = [load.get(key) ?? 0, this.#given.get(slotOf(provider, key)) ?? 0];
      if (score[0] < bestScore[0] || (score[0] === bestScore[0] && score[1] < bestScore[1])) {
        best = key;
        bestScore = score;
      }
    }
    return best;
  }

  #firstToFree(provider: string, keys: readonly string[]): string | undefined {
    let first: string | undefined;
    let firstAt = Number.POSITIVE_INFINITY;
    for (const key of keys) {
      const at = this.#blockedUntil.get(slotOf(provider, key)) ?? 0;
      if (at < firstAt) {
        first = key;
        firstAt = at;
      }
    }
    return first;
  }
}

function slotOf(provider: string, key: string): string {
  return `${provider}\0${key}`;
}
