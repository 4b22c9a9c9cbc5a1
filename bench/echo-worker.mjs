/**
 * The raw baseline of section (a): a bare worker on worker_threads, no pool, no RPC layer.
 * - any message with `cmd: "echo"` is posted straight back (round trip);
 * - `{ cmd: "flood", count, payload }` posts `payload` back `count` times as fast as it can
 *   (one-way stream), then `{ cmd: "flood_done" }`.
 */
import { parentPort } from "node:worker_threads";

parentPort.on("message", (message) => {
  if (message.cmd === "flood") {
    for (let i = 0; i < message.count; i++) parentPort.postMessage(message.payload);
    parentPort.postMessage({ cmd: "flood_done" });
    return;
  }
  parentPort.postMessage(message);
});
