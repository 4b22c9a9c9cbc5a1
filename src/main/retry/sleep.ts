/**
 * The retry controller's production sleep: a main-thread timer bound to an AbortSignal (X2).
 */
import { MAX_TIMER_MS } from "../../shared/timer-ms.js";

/**
 * Resolves after `ms`; rejects with the signal's reason as soon as `signal` aborts.
 *
 * A delay above Node's timer range ({@link MAX_TIMER_MS}, about 24.8 days) is slept in parts:
 * one timer of that length would fire after 1 ms. Valid settings reach such delays
 * (`baseDelayMs · 2^(n−1)` with many retries). The timer is not unref'd: a retry's backoff is
 * in-flight work of a prompt and keeps the process alive, as the prompt does.
 */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    let remaining = Number.isFinite(ms) ? Math.max(0, ms) : Number.MAX_SAFE_INTEGER;
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    // Always at least one timer, so even 0 ms resolves on a later macrotask.
    const schedule = () => {
      const part = Math.min(remaining, MAX_TIMER_MS);
      remaining -= part;
      timer = setTimeout(() => {
        if (remaining > 0) {
          schedule();
          return;
        }
        signal.removeEventListener("abort", onAbort);
        resolve();
      }, part);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    schedule();
  });
}
