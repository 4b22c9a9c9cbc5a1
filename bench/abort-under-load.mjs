/**
 * Section (l): `abort()` under load. How long from `session.abort()` on the host's main thread to
 * the prompt settling (and to the model server seeing the request closed), on an idle host and
 * while BUSY_SESSIONS other sessions stream long answers through the same worker thread.
 *
 * The model server is the built-in mock (bench/mock-child.mjs, a process of its own, so its CPU
 * is not this process's). Its script gives:
 *  - probe conversations (keys containing "probe"): `stall` after one token, so the request stays
 *    open until the client leaves;
 *  - every other conversation: an answer of STREAM_TOKENS tokens, TOKEN_DELAY_MS apart (about
 *    500 tokens/s per session).
 *
 * The host has one worker thread (`threads: 1`), so the probes share their worker with every
 * streaming session. Each round: prompt() on each of PROBES probe sessions → the server has every
 * request and the main thread every probe's first text delta → then per probe, IDLE_MS → t0;
 * abort() → the prompt settles (`stopReason: "aborted"`), abort() resolves, the server reports the
 * connection closed (`client_closed`). Main-thread times are `performance.now()`; the server's
 * close time is read on the wall clock (`performance.timeOrigin + performance.now()`) on both sides.
 *
 * Also printed: the busy run's delivered text rate (what the streaming sessions really got: the
 * worker and the mock share two cores, so the offered 500 tokens/s per session is a ceiling), and
 * the host's main event-loop delay, the CPU of the process's other threads (the worker, mostly) and
 * the mock's CPU during it.
 */
import { fork } from "node:child_process";
import { loadavg } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { hrSeconds, makeHost, mockModel, pick, report, sleep, startMeter, summarize } from "./lib.mjs";

const ITERATIONS = pick(200, 40);
/**
 * The probing of one scenario stops after this long even if ITERATIONS were not reached: on a
 * quiet machine the streams take all the CPU the worker gets, each probe waits seconds for its
 * first delta, and the section must stay within its few minutes (n says how many were taken).
 */
const PROBE_WINDOW_MS = pick(90_000, 20_000);
/**
 * Probe sessions: each round prompts them all, waits until every one has its request open and its
 * first delta on the main thread (on a busy worker that alone takes a second or more), then aborts
 * them one after the other, IDLE_MS apart, each timed on its own.
 */
const PROBES = pick(8, 4);
const IDLE_MS = 20;
const BUSY_SESSIONS = pick(500, 200);
/** Seconds the streams run before the first probe: the kickoff of BUSY_SESSIONS prompts is over. */
const RAMP_S = pick(5, 3);
const STREAM_TOKENS = 5000;
const TOKEN_DELAY_MS = 2;
const PROBE_STEPS = 2000;

const SCRIPT = {
  conversations: [
    { match: "probe", steps: Array.from({ length: PROBE_STEPS }, () => ({ type: "stall", afterTokens: 1 })) },
    {
      match: "",
      steps: Array.from({ length: 50 }, () => ({ type: "ok", tokens: STREAM_TOKENS, tokenDelayMs: TOKEN_DELAY_MS })),
    },
  ],
};

const wall = () => performance.timeOrigin + performance.now();

/** The mock in its own process; `ends` maps a probe's conversation key to its close waiter. */
async function startMock() {
  const child = fork(fileURLToPath(new URL("./mock-child.mjs", import.meta.url)), [], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    env: { ...process.env, MOCK_SCRIPT: JSON.stringify(SCRIPT), MOCK_WATCH: "probe" },
  });
  /** Waiters for a probe's request end, by probe number; for the mock's CPU reading. */
  const endWaiters = new Map();
  const cpuWaiters = [];
  const port = await new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`mock child exited with ${code}`)));
    child.on("message", (message) => {
      if (message.port !== undefined) resolve(message.port);
      else if (message.event === "end") {
        // The key is the probe's first prompt, `probe p<k> …` (see abortRound).
        const k = /probe p(\d+) /.exec(message.conversation)?.[1];
        const waiter = endWaiters.get(k);
        endWaiters.delete(k);
        waiter?.(message);
      } else if (message.cpu !== undefined) cpuWaiters.shift()?.(message.cpu);
    });
  });
  return {
    port,
    /** The end of probe `k`'s open request (one at a time per probe). */
    nextEnd: (k) => new Promise((resolve) => endWaiters.set(String(k), resolve)),
    /** The mock process's CPU so far, in ms. */
    cpuMs: () =>
      new Promise((resolve) => {
        cpuWaiters.push((cpu) => resolve((cpu.user + cpu.system) / 1000));
        child.send({ cpu: true });
      }),
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", resolve);
        child.disconnect();
      }),
  };
}

/** Resolves on the session's first text delta: the probe's request is open and streaming. */
function firstDelta(session) {
  return new Promise((resolve) => {
    const off = session.subscribe((event) => {
      if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") {
        off();
        resolve();
      }
    });
  });
}

/** One round: every probe prompted and streaming, then each aborted in turn; one sample per probe. */
async function abortRound(probes, mock, round) {
  const open = probes.map((session, k) => {
    const ended = mock.nextEnd(k);
    const delta = firstDelta(session);
    const settled = session.prompt(`probe p${k} i${round}`);
    return { session, ended, delta, settled };
  });
  await Promise.all(open.map((o) => o.delta));
  const samples = [];
  for (const { session, ended, settled } of open) {
    await sleep(IDLE_MS);
    const t0 = performance.now();
    const t0Wall = wall();
    const t0Hr = hrSeconds();
    const ack = session.abort().then(() => performance.now());
    const result = await settled;
    const settledAt = performance.now();
    const end = await ended;
    const ackAt = await ack;
    if (result.stopReason !== "aborted")
      throw new Error(`expected an aborted prompt, got ${result.stopReason}: ${result.errorMessage}`);
    if (end.outcome !== "client_closed") throw new Error(`expected client_closed at the server, got ${end.outcome}`);
    samples.push({ settleMs: settledAt - t0, ackMs: ackAt - t0, closeMs: end.at - t0Wall, fromHr: t0Hr });
  }
  return samples;
}

async function scenario(busy) {
  const mock = await startMock();
  const { host, close } = await makeHost({ threads: 1 });
  const model = mockModel(mock.port);
  const background = [];
  let stop = false;
  let deltaChars = 0;
  let deltas = 0;
  // A worker terminated as hung (an abort call unanswered within the control bound) restores its
  // sessions: counted, since it would change what the figures mean.
  let restored = 0;
  const loop = monitorEventLoopDelay({ resolution: 1 });
  try {
    const probes = [];
    for (let k = 0; k < PROBES; k++) {
      const probe = await host.createSession({ model, apiKey: "dummy" });
      probe.subscribe((event) => {
        if (event.type === "session_restored") restored++;
      });
      probes.push(probe);
    }
    if (busy > 0) {
      const others = [];
      for (let i = 0; i < busy; i++) others.push(await host.createSession({ model, apiKey: "dummy" }));
      for (const [index, other] of others.entries()) {
        other.subscribe((event) => {
          if (event.type === "session_restored") restored++;
          if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") {
            deltas++;
            deltaChars += event.assistantMessageEvent.delta.length;
          }
        });
        background.push(
          (async () => {
            for (let k = 0; !stop; k++) await other.prompt(`stream ${index} ${k}`).catch(() => {});
          })(),
        );
      }
      await sleep(RAMP_S * 1000);
    }
    await abortRound(probes, mock, "w");
    const chars0 = deltaChars;
    const deltas0 = deltas;
    const t0 = performance.now();
    const meter = startMeter();
    const cpu0 = process.cpuUsage();
    const mockCpu0 = await mock.cpuMs();
    loop.enable();
    const samples = [];
    const deadline = performance.now() + PROBE_WINDOW_MS;
    for (let round = 0; samples.length < ITERATIONS && performance.now() < deadline; round++)
      samples.push(...(await abortRound(probes, mock, round)));
    loop.disable();
    const seconds = (performance.now() - t0) / 1000;
    const main = meter();
    const cpu = process.cpuUsage(cpu0);
    const processCpuMs = (cpu.user + cpu.system) / 1000;
    const mainCpuMs = main.cpuNs / 1e6;
    const mockCpuMs = (await mock.cpuMs()) - mockCpu0;
    return {
      busySessions: busy,
      workers: host.workerCount,
      settleMs: summarize(samples.map((s) => s.settleMs)),
      ackMs: summarize(samples.map((s) => s.ackMs)),
      closeMs: summarize(samples.map((s) => s.closeMs)),
      // The slowest aborts (abort() → settled), each with its start on perf's clock (stall-perf.mjs).
      slowest: [...samples]
        .sort((a, b) => b.settleMs - a.settleMs)
        .slice(0, 16)
        .map((s) => ({ fromHr: s.fromHr, gapMs: s.settleMs, phase: busy === 0 ? "idle" : "busy" })),
      windowS: seconds,
      deltasPerS: (deltas - deltas0) / seconds,
      // The mock's tokens are words of about 5 characters with their space.
      kcharsPerS: (deltaChars - chars0) / seconds / 1000,
      mainLoopP99Ms: loop.percentile(99) / 1e6,
      mainLoopMaxMs: loop.max / 1e6,
      // Share of one core: the main thread, and the process's other threads (the worker, mostly).
      mainCpuPct: (mainCpuMs / (seconds * 1000)) * 100,
      otherThreadsCpuPct: ((processCpuMs - mainCpuMs) / (seconds * 1000)) * 100,
      mockCpuPct: (mockCpuMs / (seconds * 1000)) * 100,
      sessionsRestored: restored,
      loadavg: loadavg()[0],
    };
  } finally {
    stop = true;
    await close();
    await Promise.allSettled(background);
    await mock.stop();
  }
}

const idle = await scenario(0);
const busy = await scenario(BUSY_SESSIONS);
report({
  section: "l",
  /** The main thread's id for perf (stall-perf.mjs): on Linux, the process id. */
  pid: process.pid,
  config: { ITERATIONS, PROBE_WINDOW_MS, PROBES, IDLE_MS, BUSY_SESSIONS, RAMP_S, STREAM_TOKENS, TOKEN_DELAY_MS },
  idle,
  busy,
});
