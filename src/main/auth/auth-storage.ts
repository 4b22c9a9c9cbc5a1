/**
 * Where the retry controller reports usage limits and rate limits (SPEC R4), and where sessions
 * get their provider keys from. {@link InMemoryAuthStorage} records limits and never switches;
 * `FileAuthStorage` (file-auth-storage.ts) rotates the keys of `auth.json`.
 */

/** Why a credential was reported: an exhausted quota, or a burst rate limit (a plain 429). */
export type LimitKind = "usage_limit" | "rate_limit";

/** What the controller passes when a usage-limit (or, to a key-serving storage, rate-limit) error arrives. */
export interface UsageLimitInfo {
  /** The server's retry hint, when the error carried one. */
  retryAfterMs?: number;
  /** The model's base URL, so storages can key limits per endpoint. */
  baseUrl?: string;
  /** Which failure it was. Absent means `usage_limit` (the only kind reported before rotation existed). */
  kind?: LimitKind;
}

/**
 * What a storage answers to a report:
 * - `switched: true`: the session now has another free credential; the retry runs at once.
 * - `switched: false` with `retryAfterMs`: every credential of the provider is blocked; the first
 *   frees in `retryAfterMs`. The controller waits that long if `retry.maxDelayMs` allows.
 */
export interface UsageLimitOutcome {
  switched: boolean;
  retryAfterMs?: number;
}

/** Credential storage as the retry controller and the session host see it. */
export interface AuthStorage {
  /**
   * Called on a usage-limit error before the retry sleep (and on a 429 rate limit when the storage
   * serves keys, i.e. has {@link apiKeyFor}). Returns true (or `{ switched: true }`) when the
   * storage switched to another credential, in which case the retry runs with no delay.
   * A throw or rejection counts as "did not switch"; it never breaks the chain.
   */
  markUsageLimitReached(
    provider: string,
    sessionId: string,
    info: UsageLimitInfo,
  ): boolean | UsageLimitOutcome | Promise<boolean | UsageLimitOutcome>;
  /**
   * The key `sessionId` should use for `provider` now, or undefined when the storage has none
   * (the host then falls back to models.json and the environment). Synchronous: it is asked on
   * the main thread right before each request attempt is posted. Optional.
   */
  apiKeyFor?(provider: string, sessionId: string): string | undefined;
  /**
   * Whether every credential of `provider` is blocked now (a fallback model skips such providers).
   * Optional; a storage without it is taken to have a usable key.
   */
  isExhausted?(provider: string): boolean;
  /** The session ended: forget its sticky credentials. Optional. */
  releaseSession?(sessionId: string): void;
}

/** One recorded usage limit. */
export interface UsageLimitRecord extends UsageLimitInfo {
  provider: string;
  sessionId: string;
  /** Epoch ms when it was recorded. */
  at: number;
}

/** Keeps usage-limit reports in memory; has no other credential to switch to. */
export class InMemoryAuthStorage implements AuthStorage {
  readonly #records: UsageLimitRecord[] = [];

  markUsageLimitReached(provider: string, sessionId: string, info: UsageLimitInfo): boolean {
    this.#records.push({ provider, sessionId, at: Date.now(), ...info });
    return false;
  }

  /** Every report so far, oldest first. */
  get records(): readonly UsageLimitRecord[] {
    return this.#records;
  }
}

/** A storage's answer in one shape: a boolean means `{ switched }`, anything odd means "did not switch". */
export function normalizeOutcome(value: unknown): UsageLimitOutcome {
  if (value === true) return { switched: true };
  if (value !== null && typeof value === "object") {
    const { switched, retryAfterMs } = value as { switched?: unknown; retryAfterMs?: unknown };
    const outcome: UsageLimitOutcome = { switched: switched === true };
    if (typeof retryAfterMs === "number" && Number.isFinite(retryAfterMs) && retryAfterMs >= 0) {
      outcome.retryAfterMs = Math.round(retryAfterMs);
    }
    return outcome;
  }
  return { switched: false };
}
