/**
 * The retry controller's production sleep: a main-thread timer bound to an AbortSignal (X2).
 */
import { setTimeout as delay } from "node:timers/promises";

/** Resolves after `ms`; rejects with the signal's reason as soon as `signal` aborts. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal });
}
