/**
 * The R4 step of a retry that the auth storage decides: a usage limit, or a 429 rate limit when
 * the storage serves keys, is reported to it (`markUsageLimitReached`), which may switch the
 * session to another key. Called by the retry controller only, before `auto_retry_start`.
 */
import { type AuthStorage, type LimitKind, normalizeOutcome, type UsageLimitOutcome } from "../auth/auth-storage.js";

/** What the report needs of the controller's options (their functions are called as methods). */
export interface LimitReportOptions {
  sessionId: string;
  authStorage?: AuthStorage | undefined;
  /** Base URL of the session's current model, passed to the auth storage. */
  baseUrl?: () => string | undefined;
}

/** The failure a retry decision carries, as far as the report reads it. */
export interface LimitedFailure {
  message: { provider: string };
  usageLimit: boolean;
  /** A burst rate limit (429). */
  rateLimit?: boolean;
  retryAfterMs?: number;
}

/**
 * Which limit the R4 step handles: usage limits always; 429 rate limits only with a storage that
 * serves keys (another key may be free; without one a 429 is a plain transient failure).
 */
export function limitKind(failure: LimitedFailure, authStorage: AuthStorage | undefined): LimitKind | undefined {
  if (failure.usageLimit) return "usage_limit";
  if (failure.rateLimit === true && typeof authStorage?.apiKeyFor === "function") return "rate_limit";
  return undefined;
}

/** R4: tells the storage; a throw, a rejection or an odd answer counts as "did not switch". */
export async function reportLimit(
  options: LimitReportOptions,
  failure: LimitedFailure,
  kind: LimitKind,
): Promise<UsageLimitOutcome> {
  const storage = options.authStorage;
  if (storage === undefined) return { switched: false };
  const info: { retryAfterMs?: number; baseUrl?: string; kind?: LimitKind } = {};
  if (failure.retryAfterMs !== undefined) info.retryAfterMs = failure.retryAfterMs;
  const baseUrl = options.baseUrl?.();
  if (baseUrl !== undefined) info.baseUrl = baseUrl;
  if (kind === "rate_limit") info.kind = kind;
  return Promise.resolve()
    .then(() => storage.markUsageLimitReached(failure.message.provider, options.sessionId, info))
    .then(normalizeOutcome, () => ({ switched: false }));
}
