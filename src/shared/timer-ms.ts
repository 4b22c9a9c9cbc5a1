/**
 * The longest delay a Node timer takes. Above it Node warns (TimeoutOverflowWarning) and fires
 * after 1 ms, so a setting or option that feeds a timer is refused above it, and a computed delay
 * that can exceed it (exponential backoff) is slept in parts (see main/retry/sleep.ts).
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The validation message of a millisecond value over {@link MAX_TIMER_MS}. */
export const MAX_TIMER_MESSAGE = `must be at most ${MAX_TIMER_MS} ms (2^31-1, the longest delay a Node timer takes)`;
