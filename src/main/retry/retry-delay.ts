/**
 * How long a retry waits (SPEC R4, B6): exponential backoff from `retry.baseDelayMs`, jittered as
 * `retry.jitter` says, raised to the server's retry hint when `retry.respectRetryAfter` is on, and
 * capped by `retry.maxDelayMs`. Pure: the randomness comes from the caller (the controller's
 * injected `random`, STYLE 7).
 */
import type { RetrySettings } from "../../shared/settings/settings.js";

/**
 * The delay before retry `attempt` (1-based), in whole ms; undefined when the server's hint is
 * above `retry.maxDelayMs` (the chain then ends "over_cap" rather than retrying early).
 * `source.random` is called as a method, so it may live on a class's prototype.
 */
export function retryDelay(
  settings: RetrySettings,
  attempt: number,
  retryAfterMs: number | undefined,
  source: { random(): number },
): number | undefined {
  // Capped so the delay stays a finite number (2^(n−1) is Infinity past n = 1024, and 0 · Infinity
  // is NaN): auto_retry_start.delayMs is always a real number; the sleep splits long delays.
  const backoff =
    settings.baseDelayMs === 0 ? 0 : Math.min(settings.baseDelayMs * 2 ** (attempt - 1), Number.MAX_SAFE_INTEGER);
  let delay = backoff;
  if (settings.jitter === "full") delay = source.random() * backoff;
  else if (settings.jitter === "equal") delay = backoff / 2 + (source.random() * backoff) / 2;
  if (settings.respectRetryAfter && retryAfterMs !== undefined) {
    if (settings.maxDelayMs !== undefined && retryAfterMs > settings.maxDelayMs) return undefined;
    delay = Math.max(delay, retryAfterMs);
  }
  if (settings.maxDelayMs !== undefined) delay = Math.min(delay, settings.maxDelayMs);
  return Math.min(Math.round(delay), Number.MAX_SAFE_INTEGER);
}

/** A delay as `finalError` texts show it: `850ms`, `1.5s`. */
export function formatMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10}s` : `${ms}ms`;
}
