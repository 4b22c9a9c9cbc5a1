/**
 * Section (b): abort latency, from `session.abort()` on the main thread to the worker's in-flight
 * model request being cancelled, seen as the HTTP connection closing at the server.
 *
 * A node:http server on 127.0.0.1 in this (main) process serves POST /v1/chat/completions: it
 * sends the SSE headers and one `chat.completion.chunk` and then stalls. The session uses a pi-ai
 * model object with api "openai-completions" pointing at it, so the worker's request is a real
 * undici fetch made by the OpenAI SDK inside pi-ai.
 *
 * Each iteration: prompt() → the server sees the request and writes the first chunk → the main
 * thread receives the session's first text delta (the worker is now parked on the socket) → idle
 * IDLE_MS → t0 = performance.now(); session.abort() → the server's `res` emits 'close' (the
 * connection was torn down by the worker's abort) at t1. Latency = t1 − t0, both read on the main
 * thread's clock, so no cross-thread clock sync is involved. Also recorded: when abort()'s promise
 * resolved (the worker acknowledged), and when the prompt settled.
 *
 * Two scenarios: an idle host (only the aborted session), and the same while BUSY_SESSIONS other
 * sessions on the same worker stream demo-stream answers (context, no target).
 */
import { createServer } from "node:http";
import { SSE_HEADERS, sseChunk } from "../test/fixtures/models.mjs";
import { makeHost, mockModel, pick, report, sleep, summarize } from "./lib.mjs";

const ITERATIONS = pick(200, 50);
const WARMUP = pick(10, 5);
const IDLE_MS = 20;
const BUSY_SESSIONS = pick(100, 30);

function startServer() {
  const requests = [];
  let waiter;
  const server = createServer((req, res) => {
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404).end();
      return;
    }
    req.resume();
    const entry = { seenAt: performance.now(), firstChunkAt: 0, closedAt: 0 };
    requests.push(entry);
    res.writeHead(200, SSE_HEADERS);
    res.write(sseChunk({ role: "assistant", content: "Hello" }), () => {
      entry.firstChunkAt = performance.now();
    });
    // Stall: never end. The close is the abort arriving.
    res.on("close", () => {
      entry.closedAt = performance.now();
      entry.onClose?.();
    });
    waiter?.(entry);
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({
        port,
        server,
        requests,
        nextRequest: () =>
          new Promise((r) => {
            waiter = (entry) => {
              waiter = undefined;
              r(entry);
            };
          }),
      });
    });
  });
}

/** Resolves on the session's first text delta (the first chunk made it through the worker to main). */
function firstDelta(session) {
  return new Promise((resolve) => {
    const off = session.subscribe((event) => {
      if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") {
        off();
        resolve(performance.now());
      }
    });
  });
}

async function abortOnce(session, srv, iteration) {
  const requestSeen = srv.nextRequest();
  const delta = firstDelta(session);
  const settled = session.prompt(`abort me ${iteration}`);
  const entry = await requestSeen;
  await delta;
  await sleep(IDLE_MS);
  const closed = new Promise((resolve) => {
    if (entry.closedAt > 0) resolve();
    else entry.onClose = resolve;
  });
  const t0 = performance.now();
  const ack = session.abort().then(() => performance.now());
  const result = await settled;
  const settledAt = performance.now();
  await closed;
  const ackAt = await ack;
  if (result.stopReason !== "aborted")
    throw new Error(`expected an aborted prompt, got ${result.stopReason}: ${result.errorMessage}`);
  return { closeMs: entry.closedAt - t0, ackMs: ackAt - t0, settleMs: settledAt - t0 };
}

async function scenario(busy) {
  const srv = await startServer();
  const { host, close } = await makeHost();
  const background = [];
  let stopBackground = false;
  try {
    const session = await host.createSession({ model: mockModel(srv.port), apiKey: "dummy" });
    if (busy > 0) {
      // Other sessions streaming on the same worker (threads: 1), prompting again as each finishes.
      const others = [];
      for (let i = 0; i < busy; i++) others.push(await host.createSession({ model: "demo/demo-stream" }));
      for (const other of others) {
        background.push(
          (async () => {
            while (!stopBackground) await other.prompt("[words=40] keep streaming").catch(() => {});
          })(),
        );
      }
      await sleep(1000);
    }
    for (let i = 0; i < WARMUP; i++) await abortOnce(session, srv, i);
    const samples = [];
    for (let i = 0; i < ITERATIONS; i++) samples.push(await abortOnce(session, srv, i));
    return {
      busySessions: busy,
      iterations: ITERATIONS,
      workers: host.workerCount,
      closeMs: summarize(samples.map((s) => s.closeMs)),
      ackMs: summarize(samples.map((s) => s.ackMs)),
      settleMs: summarize(samples.map((s) => s.settleMs)),
      requests: srv.requests.length,
    };
  } finally {
    stopBackground = true;
    await close();
    await Promise.allSettled(background);
    srv.server.closeAllConnections();
    await new Promise((resolve) => srv.server.close(resolve));
  }
}

const idle = await scenario(0);
const busy = await scenario(BUSY_SESSIONS);
report({ section: "b", config: { ITERATIONS, WARMUP, IDLE_MS, BUSY_SESSIONS }, idle, busy });
