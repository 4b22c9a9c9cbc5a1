/**
 * The token usage of a reply that used none: a failed or interrupted reply, a scripted one.
 * A function, not a constant: messages are mutable and travel between threads.
 */
import type { Usage } from "@mariozechner/pi-ai";

/** A fresh zero usage. */
export function emptyUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}
