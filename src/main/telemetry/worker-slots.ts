/**
 * Small stable numbers for a host's worker threads (B9's `lifeline.worker.slot` attribute): a
 * worker keeps its slot for its life, and a worker that starts takes the lowest slot free, so a
 * replaced worker's successor reuses its slot. Thread ids only grow; slots stay below the most
 * workers alive at once, which keeps the series of per-worker metrics few.
 */

/** See the file comment. Main thread only. */
export class WorkerSlots {
  readonly #byThread = new Map<number, number>();

  /**
   * The slot of each of `threadIds` (the live workers), in the same order. Workers not listed any
   * more give their slots up first, so they are free for new ones.
   */
  assign(threadIds: readonly number[]): number[] {
    const live = new Set(threadIds);
    for (const threadId of this.#byThread.keys()) if (!live.has(threadId)) this.#byThread.delete(threadId);
    const taken = new Set(this.#byThread.values());
    let next = 0;
    return threadIds.map((threadId) => {
      let slot = this.#byThread.get(threadId);
      if (slot === undefined) {
        while (taken.has(next)) next++;
        slot = next;
        taken.add(slot);
        this.#byThread.set(threadId, slot);
      }
      return slot;
    });
  }
}
