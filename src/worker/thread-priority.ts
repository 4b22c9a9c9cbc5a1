/**
 * Lowers the scheduling priority of the calling thread only (`workerPriority`, host-options.ts).
 *
 * Why: on a machine whose cores are all busy, the host's main thread waits for a CPU behind its
 * own workers (bench (m), docs/performance.md): the kernel shares the cores fairly among runnable
 * threads, so a burst of main-thread work that needs 20 ms of CPU takes 30–60 ms of wall time.
 * With the workers at a lower priority (a higher nice value), the main thread runs first when both
 * want a core; the workers lose nothing while a core is free.
 *
 * Linux only: there a nice value belongs to a thread, and `setpriority` on a thread id changes that
 * thread alone. The thread id comes from `/proc/thread-self`. Elsewhere a nice value is the whole
 * process's, so nothing is changed (the result says so).
 */
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";

/** What {@link lowerThreadPriority} did. */
export type PriorityOutcome = { applied: true; tid: number } | { applied: false; reason: string };

/**
 * Sets the calling thread's nice value to `priority` (0 to 19; higher runs later), on Linux.
 * Never throws: a platform without per-thread nice values, or a refusal, is the result.
 */
export function lowerThreadPriority(priority: number): PriorityOutcome {
  if (process.platform !== "linux") return { applied: false, reason: `not on Linux (${process.platform})` };
  try {
    // "<pid>/task/<tid>"
    const tid = Number(readlinkSync("/proc/thread-self").split("/").at(-1));
    if (!Number.isSafeInteger(tid) || tid <= 0) return { applied: false, reason: "no thread id in /proc/thread-self" };
    setPriority(tid, priority);
    return { applied: true, tid };
  } catch (error) {
    return { applied: false, reason: error instanceof Error ? error.message : String(error) };
  }
}
