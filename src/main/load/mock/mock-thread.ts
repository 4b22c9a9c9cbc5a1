/**
 * Entry of the worker thread that runs the built-in mock server for `lifeline load`
 * (mock-target.ts starts it). The server's parsing, streaming and timers run on this thread's
 * event loop, so they do not show up as the host's event-loop delay that the run measures.
 *
 * Protocol on `parentPort` (plain objects): in, `{type: "stats"}` and `{type: "close"}`; out,
 * `{type: "ready", url}` or `{type: "failed", message}` once, then `{type: "stats", stats}` for each
 * request and once more after `close`, before the thread exits.
 */
import { parentPort, workerData } from "node:worker_threads";
import { type MockServer, startMockServer } from "../../../mock-server/index.js";
import { errorText } from "../../../shared/failures/error-text.js";
import type { MockTargetStats } from "./mock-target.js";

const port = parentPort;
if (port === null) throw new Error("mock-thread.js runs only as a worker thread (see mock-target.ts).");

/** Ended requests per step: `ok`, `reset`, `stall`, …, and an error step as its status (`503`). */
const steps: Record<string, number> = {};
/** Tool calls in the `tool_calls` answers that were sent in full. */
let toolCalls = 0;

function statsOf(server: MockServer): MockTargetStats {
  const { total, invalid, outcomes, maxInFlight } = server.stats();
  return { total, invalid, outcomes: { ...outcomes }, steps: { ...steps }, maxInFlight, toolCalls };
}

let server: MockServer;
try {
  server = await startMockServer({ script: (workerData as { script: unknown }).script });
} catch (error) {
  port.postMessage({ type: "failed", message: errorText(error) });
  port.close();
  process.exit(0);
}
server.on("request_end", (record) => {
  const key = record.step === "error" ? String(record.status ?? "error") : record.step;
  steps[key] = (steps[key] ?? 0) + 1;
  if (record.outcome === "completed") toolCalls += record.toolCalls ?? 0;
});
port.on("message", (message: { type: string }) => {
  if (message.type === "stats") port.postMessage({ type: "stats", stats: statsOf(server) });
  else if (message.type === "close") {
    void server.close().then(() => {
      port.postMessage({ type: "stats", stats: statsOf(server) });
      port.close();
    });
  }
});
port.postMessage({ type: "ready", url: server.url });
