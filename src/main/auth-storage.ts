/**
 * Where the retry controller reports usage limits (SPEC R4). Rotation across stored credentials
 * is a later feature; the in-memory storage records limits and never switches.
 */

/** What the controller passes when a usage-limit error arrives. */
export interface UsageLimitInfo {
  /** The server's retry hint, when the error carried one. */
  retryAfterMs?: number;
  /** The model's base URL, so storages can key limits per endpoint. */
  baseUrl?: string;
}

/** Credential storage as the retry controller sees it. */
export interface AuthStorage {
  /**
   * Called on a usage-limit error before the retry sleep. Returns true when the storage switched
   * to another credential or model, in which case the retry runs with no delay.
   * A throw or rejection counts as "did not switch"; it never breaks the chain.
   */
  markUsageLimitReached(provider: string, sessionId: string, info: UsageLimitInfo): boolean | Promise<boolean>;
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
