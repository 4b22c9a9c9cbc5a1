/**
 * The built-in mock model server (dist/mock-server, what `lifeline mock-server` runs) in a process
 * of its own, for benchmarks whose mock must not spend the measured process's CPU. Started with
 * child_process.fork; the script is the JSON in the environment variable MOCK_SCRIPT.
 *
 * Tells the parent `{ port }` once listening. For every request whose conversation key contains
 * MOCK_WATCH (when set), it also sends `{ event: "start" | "end", conversation, outcome, at }`,
 * where `at` is `performance.timeOrigin + performance.now()` when the event happened here: a
 * clock the parent can read the same way (both are the machine's wall clock at sub-millisecond
 * resolution), so the parent can time its own calls against what the server saw. Answers
 * `{ cpu: true }` with `{ cpu: process.cpuUsage() }` (this process's CPU so far, µs). Exits when
 * the parent disconnects.
 */
import { startMockServer } from "../dist/mock-server/index.js";

const watch = process.env.MOCK_WATCH;
const server = await startMockServer({ port: 0, script: JSON.parse(process.env.MOCK_SCRIPT ?? "{}") });
const wall = () => performance.timeOrigin + performance.now();
if (watch !== undefined && watch !== "") {
  server.on("request_start", (record) => {
    if (record.conversation.includes(watch))
      process.send?.({ event: "start", conversation: record.conversation, at: wall() });
  });
  server.on("request_end", (record) => {
    if (record.conversation.includes(watch))
      process.send?.({ event: "end", conversation: record.conversation, outcome: record.outcome, at: wall() });
  });
}
process.on("message", (message) => {
  if (message?.cpu === true) process.send?.({ cpu: process.cpuUsage() });
});
process.send?.({ port: server.port });
process.on("disconnect", () => {
  void server.close().finally(() => process.exit(0));
});
