/**
 * The workload of section (o) (the performance issue's), shared by (o) and by (i)'s process-CPU
 * part: N sessions each given a distinct prompt at once; the model server is the built-in mock
 * (bench/mock-child.mjs, a process of its own, so its CPU is neither side's), every conversation
 * first a 503, then TOKENS tokens 2 ms apart (~500 tokens/s) over real HTTP/SSE.
 *
 * Sides, each meant to run in a fresh child process so `process.cpuUsage()` and RSS are its alone:
 *   baseline — the loop pi's AgentSession wraps, run in-process: pi-agent-core's `Agent` with
 *              pi-ai's OpenAI-compatible provider, on the main thread; one listener per session
 *              that counts events (what an in-process host does with them), and pi's auto-retry
 *              on a failed reply: the error message dropped from the transcript, a short sleep
 *              (RETRY_DELAY_MS, the host's `retry.baseDelayMs` below), then `continue()`. No
 *              session files, no extensions: pi without its file I/O, so if anything cheaper than pi.
 *   lifeline — a SessionHost with its default threads, auto-retry on (`retry.baseDelayMs`
 *              RETRY_DELAY_MS), the same model over HTTP, one counting listener per session.
 * Both run a warm-up batch of WARM sessions first (JIT), then the measured batch. CPU is counted
 * from the first prompt to the last settle: the whole process (user + system), and for lifeline
 * also the main thread alone and the worker threads (Linux schedstat). RSS is read after the
 * batch, before anything is closed.
 */
import { loadavg } from "node:os";
import { inProcessAgents } from "./in-process-agents.mjs";
import { makeHost, mockModel, pick, sessionOpener, sleep, startMockChild, threadCpu } from "./lib.mjs";

export const WARM = pick(100, 40);
export const TOKENS = 200;
export const RETRY_DELAY_MS = 10;
const SCRIPT = { conversations: [{ match: "", steps: [503, { type: "ok", tokens: TOKENS, tokenDelayMs: 2 }] }] };

/** The mock model server of this workload, in a process of its own. */
export const startMock = () => startMockChild(SCRIPT);

/** A listener that counts events, as an in-process host's subscriber would see them. */
function counter() {
  const counts = { events: 0 };
  return { counts, listener: () => void counts.events++ };
}

const monoUs = () => Number(process.hrtime.bigint() / 1000n);

/** The in-process loop: one Agent per session on this thread, pi's retry after a failed reply. */
export async function baselineSide(n) {
  const mock = await startMock();
  const model = mockModel(mock.port);
  const { counts, listener } = counter();
  const { make, run } = inProcessAgents(model, listener, RETRY_DELAY_MS);
  const warm = Array.from({ length: WARM }, make);
  await Promise.all(warm.map((a, i) => run(a, `warm-up ${i}: answer me`)));
  const agents = Array.from({ length: n }, make);
  return measure(n, counts, mock, async () => {
    const results = await Promise.all(agents.map((a, i) => run(a, `batch ${i}: answer me`)));
    return results;
  });
}

/**
 * lifeline: a host with its default threads and auto-retry, one counting listener per session.
 * `hostOptions` are merged into the host's options (section (i): its `telemetry`); `afterBatch`,
 * when given, runs inside the measured window once every prompt settled (section (i): the SDK's
 * flush of what it still holds, so that its export work is counted).
 */
export async function lifelineSide(n, { hostOptions = {}, afterBatch } = {}) {
  const mock = await startMock();
  const options = { model: mockModel(mock.port), apiKey: "dummy" };
  const { counts, listener } = counter();
  const tidsBefore = new Set((await threadCpu()).keys());
  const { host, close } = await makeHost({ settings: { retry: { baseDelayMs: RETRY_DELAY_MS } }, ...hostOptions });
  const { open, warmUp } = sessionOpener(host, options);
  await warmUp(WARM);
  const sessions = await open(n);
  for (const s of sessions) s.subscribe(listener);
  const result = await measure(
    n,
    counts,
    mock,
    async () => {
      const last = await Promise.all(
        sessions.map((s, i) => s.prompt(`batch ${i}: answer me`).then(() => s.messages.at(-1))),
      );
      await afterBatch?.();
      return last;
    },
    tidsBefore,
  );
  const workers = host.workerCount;
  await close();
  return { ...result, workers };
}

/** Times `batch` (CPU, per thread where it can), checks its results, reads RSS, stops the mock. */
async function measure(n, counts, mock, batch, tidsBefore) {
  await sleep(200);
  const threads0 = await threadCpu();
  const events0 = counts.events;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const startUs = monoUs();
  const results = await batch();
  const endUs = monoUs();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const threads1 = await threadCpu();
  const rssMb = process.memoryUsage().rss / 2 ** 20;
  await mock.stop();
  const failures = results.filter((m) => m?.role !== "assistant" || m.stopReason !== "stop");
  const processNs = (cpu.user + cpu.system) * 1e3;
  const mainTid = String(process.pid);
  const mainNs = (threads1.get(mainTid) ?? Number.NaN) - (threads0.get(mainTid) ?? Number.NaN);
  // lifeline's workers: threads that appeared with the host (libuv's pool may start more; the
  // busiest new ones are the workers, as in section (n)).
  let workerNs = Number.NaN;
  if (tidsBefore !== undefined) {
    const grown = [...threads1]
      .filter(([tid]) => !tidsBefore.has(tid) && threads0.has(tid))
      .map(([tid, ns]) => ns - (threads0.get(tid) ?? ns))
      .sort((a, b) => b - a);
    if (grown.length > 0) workerNs = grown[0];
  }
  return {
    sessions: n,
    failed: failures.length,
    failedWith: [...new Set(failures.map((m) => `${m?.stopReason}: ${m?.errorMessage ?? ""}`.slice(0, 160)))].slice(
      0,
      3,
    ),
    wallMs,
    events: counts.events - events0,
    processCpuUsPerPrompt: processNs / 1e3 / n,
    userUsPerPrompt: cpu.user / n,
    systemUsPerPrompt: cpu.system / n,
    mainCpuUsPerPrompt: mainNs / 1e3 / n,
    workerCpuUsPerPrompt: workerNs / 1e3 / n,
    rssMb,
    batchUs: [startUs, endUs],
    loadavg: loadavg(),
  };
}
