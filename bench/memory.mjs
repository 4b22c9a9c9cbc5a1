/**
 * Section (d): main-thread memory per idle session.
 *
 * One warm-up session is created first, so the pool, the worker link, the settings files and
 * every lazily loaded module are already in place. Then: full GC → heapUsed → create SESSIONS idle
 * sessions (demo-fast model, never prompted) → full GC → heapUsed. The difference divided by
 * SESSIONS is what one idle session keeps alive on the main thread (its AgentSession, retry
 * controller, event stream, settings copy, link registration and the host's map entry). The
 * worker-side Agent lives in the worker's own V8 heap and is not in this figure; RSS is reported
 * for the whole process (main + workers) as context.
 *
 * Then every session runs one prompt of the performance issue's workload on demo-fast (a failed
 * first request, so a retry, then a 200-word answer) and the heap is measured again: what a session
 * keeps once it has a short transcript (P4 of docs/performance.md asks ≤ 8 KB per session).
 *
 * A last pass disposes every session and measures again, to show the memory is given back.
 */
import { fullGc, makeHost, mapLimit, pick, report } from "./lib.mjs";

const SESSIONS = pick(1000, 200);

const mem = () => {
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, rss: m.rss, external: m.external, arrayBuffers: m.arrayBuffers };
};

const { host, close } = await makeHost();
try {
  const warm = await host.createSession({ model: "demo/demo-fast" });
  await warm.prompt("[words=5] warm-up");
  await fullGc();
  const before = mem();

  const t0 = performance.now();
  const sessions = await mapLimit(
    Array.from({ length: SESSIONS }, (_, i) => i),
    32,
    () => host.createSession({ model: "demo/demo-fast" }),
  );
  const createMs = performance.now() - t0;
  await fullGc();
  const after = mem();
  const workers = host.workerCount;
  const open = host.sessionCount;

  await mapLimit(sessions, 50, (session, i) => session.prompt(`[fail=1][words=200] session ${i}`));
  await fullGc();
  const prompted = mem();

  await Promise.all(sessions.map((session) => session.dispose()));
  sessions.length = 0; // drop this script's own references
  await fullGc();
  const disposed = mem();

  report({
    section: "d",
    sessions: SESSIONS,
    openSessions: open,
    workers,
    createMsTotal: createMs,
    heapBytesPerSession: (after.heapUsed - before.heapUsed) / SESSIONS,
    heapBytesPerPromptedSession: (prompted.heapUsed - before.heapUsed) / SESSIONS,
    rssPromptedMb: prompted.rss / 2 ** 20,
    externalBytesPerSession: (after.external - before.external) / SESSIONS,
    heapUsedBeforeMb: before.heapUsed / 2 ** 20,
    heapUsedAfterMb: after.heapUsed / 2 ** 20,
    heapUsedDisposedMb: disposed.heapUsed / 2 ** 20,
    rssBeforeMb: before.rss / 2 ** 20,
    rssAfterMb: after.rss / 2 ** 20,
    rssDisposedMb: disposed.rss / 2 ** 20,
  });
} finally {
  await close();
}
