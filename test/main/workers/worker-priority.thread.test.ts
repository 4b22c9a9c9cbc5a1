/**
 * `workerPriority` (host-options.ts, src/worker/thread-priority.ts) on real worker threads of the
 * built package (run `npm run build` first): the worker threads run at the given nice value, and
 * the main thread and libuv's thread pool (the main thread's file and DNS work) keep theirs. Read
 * from /proc/self/task/<tid>/stat, the kernel's own account of each thread; Linux only.
 */
import { readdirSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { realHost } from "../../fixtures/real-host.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Every thread of this process: its id, name (comm) and nice value. */
function threads(): { tid: number; name: string; nice: number }[] {
  return readdirSync("/proc/self/task").flatMap((entry) => {
    try {
      const stat = readFileSync(`/proc/self/task/${entry}/stat`, "utf8");
      // "tid (comm) state ppid …": the name may hold spaces, so split after its closing paren.
      const close = stat.lastIndexOf(")");
      const fields = stat.slice(close + 2).split(" ");
      // Field 19 of stat is nice; fields[0] here is field 3 (state).
      return [{ tid: Number(entry), name: stat.slice(stat.indexOf("(") + 1, close), nice: Number(fields[16]) }];
    } catch {
      return []; // the thread ended while listed
    }
  });
}

describe.runIf(process.platform === "linux")("workerPriority", () => {
  it("runs the worker threads at the nice value given, and leaves the main thread and the thread pool alone", async () => {
    const before = new Set(threads().map((t) => t.tid));
    const base = threads().find((t) => t.tid === process.pid)?.nice ?? 0;
    const host = realHost(cleanups, "lifeline-priority-", { workerPriority: 7, threads: 2 });
    const sessions = await Promise.all([0, 1].map(() => host.createSession({ model: "demo/demo-fast" })));
    await Promise.all(sessions.map((s) => s.prompt("hello")));
    const all = threads();
    const lowered = all.filter((t) => t.nice === 7);
    // Two workers (piscina's threads are named after nothing of ours, so they are told by their nice value).
    expect(lowered.length).toBe(2);
    for (const t of lowered) expect(before.has(t.tid)).toBe(false);
    expect(all.find((t) => t.tid === process.pid)?.nice).toBe(base);
    // libuv's pool threads are named "libuv-worker" on Node 20; none inherited a worker's priority.
    const pool = all.filter((t) => t.name.startsWith("libuv"));
    for (const t of pool) expect(t.nice, `${t.name} ${t.tid}`).toBe(base);
    expect(all.filter((t) => t.nice !== base && t.nice !== 7)).toEqual([]);
  }, 60_000);

  it("leaves every thread at the main thread's nice value by default", async () => {
    const host = realHost(cleanups, "lifeline-priority-");
    const session = await host.createSession({ model: "demo/demo-fast" });
    await session.prompt("hello");
    const base = threads().find((t) => t.tid === process.pid)?.nice ?? 0;
    expect(threads().filter((t) => t.nice !== base)).toEqual([]);
  }, 60_000);

  it("refuses a value outside 0–19 with ERR_INVALID_OPTIONS", () => {
    expect(() => realHost(cleanups, "lifeline-priority-", { workerPriority: 20 })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }),
    );
    expect(() => realHost(cleanups, "lifeline-priority-", { workerPriority: -1 })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }),
    );
  });
});
