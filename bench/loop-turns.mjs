/**
 * A preload, run by hand, that logs every long turn of each worker thread's event loop: the time
 * between two of its check phases (`setImmediate`), which is one whole turn of libuv's loop, and
 * how late a 100 ms interval timer fired. Used in docs/performance-history.md, section (m), "How long one
 * turn of the worker's loop lasts":
 *
 *   NODE_OPTIONS="--import ./bench/loop-turns.mjs" node --expose-gc bench/rss.mjs lifeline 5000
 *
 * LOOP_TURNS_LOG names the file lines are appended to (default <tmpdir>/loop-turns.log);
 * LOOP_TURNS_MIN_MS the shortest turn logged (default 500). Each line: seconds since the thread
 * started, the thread, what was measured. Its own handles are unref'd: it keeps nothing alive.
 */
import { appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isMainThread, threadId } from "node:worker_threads";

const LOG = process.env.LOOP_TURNS_LOG ?? join(tmpdir(), "loop-turns.log");
const MIN_MS = Number(process.env.LOOP_TURNS_MIN_MS ?? 500);
const TIMER_MS = 100;

if (!isMainThread) {
  const log = (what) => appendFileSync(LOG, `${(performance.now() / 1000).toFixed(1)} worker ${threadId} ${what}\n`);
  let turnStart = performance.now();
  let turns = 0;
  const onCheck = () => {
    const now = performance.now();
    turns++;
    if (now - turnStart >= MIN_MS) log(`turn ${(now - turnStart).toFixed(0)} ms (turn ${turns})`);
    turnStart = now;
    setImmediate(onCheck).unref();
  };
  setImmediate(onCheck).unref();
  let due = performance.now() + TIMER_MS;
  setInterval(() => {
    const now = performance.now();
    if (now - due >= MIN_MS) log(`timer ${(now - due).toFixed(0)} ms late`);
    due = now + TIMER_MS;
  }, TIMER_MS).unref();
}
