/**
 * The words of the terminal UI's retry feedback (SPEC R10) and its countdown arithmetic. Pure: no
 * clock, no terminal, so the exact strings are tested against numbers alone.
 */

/** The key named in the loader. pi 0.73.1 prints its keybinding name ("escape"); R10 fixes "esc". */
const CANCEL_KEY = "esc";

/**
 * Whole seconds shown while `remainingMs` are left before the next attempt: rounded up (as pi
 * 0.73.1 counts), and never below 1, because the loader stays up until the retried attempt starts
 * and "in 0s" would read as a hang.
 */
export function secondsLeft(remainingMs: number): number {
  return Math.max(1, Math.ceil(remainingMs / 1000));
}

/**
 * Milliseconds from now until {@link secondsLeft} shows a smaller number, or undefined once it shows
 * 1 and will not change again. A countdown that sleeps exactly this long redraws on the second it
 * changes, without polling and without drift.
 */
export function msUntilNextSecond(remainingMs: number): number | undefined {
  const shown = secondsLeft(remainingMs);
  if (shown <= 1) return undefined;
  return remainingMs - (shown - 1) * 1000;
}

/**
 * R10's loader text: `Retrying (1/3) in 2s… (esc to cancel)`, with the Unicode ellipsis.
 * @param attempt the 1-based attempt of `auto_retry_start`
 * @param maxAttempts `auto_retry_start.maxAttempts`
 * @param remainingMs time left until the retried attempt is sent
 */
export function retryLoaderText(attempt: number, maxAttempts: number, remainingMs: number): string {
  return `Retrying (${attempt}/${maxAttempts}) in ${secondsLeft(remainingMs)}s… (${CANCEL_KEY} to cancel)`;
}

/**
 * R10's line for a chain that ended without success: `Retry failed after N attempts: <finalError>`.
 * N is `auto_retry_end.attempt` as it comes, so a chain cancelled during its first sleep reads
 * "after 1 attempts" exactly as pi prints it. A missing `finalError` reads "Unknown error" (pi).
 */
export function retryFailedText(attempt: number, finalError: string | undefined): string {
  return `Retry failed after ${attempt} attempts: ${finalError ?? "Unknown error"}`;
}

/** The line for an answer the user stopped; pi's wording, with the retries the prompt had made. */
export function abortedText(retries: number): string {
  if (retries <= 0) return "Operation aborted";
  return `Aborted after ${retries} retry ${retries === 1 ? "attempt" : "attempts"}`;
}
