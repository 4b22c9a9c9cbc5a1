/**
 * The piscina side of {@link KeepAlive}: piscina 5 keeps a worker referenced through a
 * MessagePort of its own for as long as a task runs on it, and lifeline's link task runs for the
 * worker's whole life. piscina has no public switch for that port, so this reaches the pool's own
 * record of each worker (behind the `Piscina.kWorkerData` symbol of the worker the `workerCreate`
 * event reports), whose `ref()`/`unref()` do exactly what piscina does itself when a task starts
 * or ends. A link's worker is the one whose running task transferred the link's port.
 *
 * piscina is pinned to an exact version; if a later one changes these records the lookup finds
 * nothing and an idle host keeps the process alive again, as it did before (and
 * test/embedding.process.test.ts fails).
 */
import type { MessagePort } from "node:worker_threads";
import type { Piscina } from "piscina";

/** What lifeline uses of piscina's record of one worker. */
interface PoolThreadRecord {
  ref(): void;
  unref(): void;
  taskInfos: Map<unknown, { transferList?: unknown }>;
}

/**
 * Follows the pool's workers. Returns `setReferenced(port, referenced)`, which refs or unrefs
 * piscina's handle of the worker running the task that was handed `port`; it does nothing when
 * no such worker is found.
 */
export function trackPoolThreads(pool: Piscina): (port: MessagePort, referenced: boolean) => void {
  const records = new Map<unknown, PoolThreadRecord>();
  pool.on("workerCreate", (worker: object & { id?: unknown }) => {
    const record = internalRecord(worker);
    if (record !== undefined) records.set(worker.id, record);
  });
  pool.on("workerDestroy", (worker: { id?: unknown }) => {
    records.delete(worker.id);
  });
  return (port, referenced) => {
    for (const record of records.values()) {
      for (const task of record.taskInfos.values()) {
        if (!Array.isArray(task.transferList) || !task.transferList.includes(port)) continue;
        if (referenced) record.ref();
        else record.unref();
        return;
      }
    }
  };
}

function internalRecord(worker: object): PoolThreadRecord | undefined {
  const key = Object.getOwnPropertySymbols(worker).find((symbol) => symbol.description === "Piscina.kWorkerData");
  if (key === undefined) return undefined;
  const record: unknown = (worker as Record<symbol, unknown>)[key];
  if (record === null || typeof record !== "object") return undefined;
  const { ref, unref, taskInfos } = record as Partial<PoolThreadRecord>;
  if (typeof ref !== "function" || typeof unref !== "function" || !(taskInfos instanceof Map)) return undefined;
  return record as PoolThreadRecord;
}
