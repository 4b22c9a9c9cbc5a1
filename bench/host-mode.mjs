/**
 * Section (t): what one `lifeline --mode host` process serving many sessions costs per session
 * and per prompt, against `lifeline --mode rpc` with one session a process.
 *
 * The same per-session workload on both sides, against one mock model server (bench/mock-child.mjs,
 * a process of its own, so its CPU is neither side's): every session is opened, gets one warm-up
 * prompt, then PROMPTS measured prompts, one after the other (each waits for the previous one's
 * `agent_settled`). Every reply is TOKENS word tokens streamed TOKEN_DELAY_MS apart.
 *   host: one `--mode host` child on stdio; SESSIONS open_session commands (all sent at once),
 *         then sessions prompt IN_FLIGHT at a time (a lane takes the next session and runs its
 *         prompts), so the machine has as many prompts in flight as on the rpc side.
 *   rpc:  PROCESSES `--mode rpc` children (started START_LANES at a time, each ready once
 *         `get_state` answers), one session each, all prompting at once.
 * Measured per side: RSS per session (the sum of the children's VmRSS ÷ sessions) after the
 * sessions are open and after the prompts; process CPU per prompt (utime + stime of
 * /proc/<pid>/stat, in clock ticks, the delta over the measured prompts summed over the side's
 * children ÷ prompts; the warm-up prompts' the same way, reported apart); the time the client
 * (this process) sees from writing `prompt` to the session's first event, and to the `prompt`
 * response; the share of the measured phase each side's main threads spent running and runnable
 * but waiting for a CPU (/proc/<pid>/schedstat), against which to read the latencies on a crowded
 * machine. The per-session and per-prompt figures compare although the sides have different
 * session counts. An rpc process serves its one session only, so its measured prompts run on code
 * that one warm-up prompt has warmed, where the host's run on code thousands of prompts have: that
 * (and each process's start, reported apart) is what a process per session costs.
 *
 * Each side runs in a fresh child of this script (`host-mode.mjs host <port>` / `rpc <port>`),
 * the rpc side first, so neither client's heap or JIT state is the other's.
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { mockModelsJson } from "../test/fixtures/models.mjs";
import { mapLimit, pick, report, runChild, startMockChild, summarize } from "./lib.mjs";

const SESSIONS = pick(1000, 100);
const PROCESSES = pick(50, 10);
const IN_FLIGHT = PROCESSES;
const PROMPTS = pick(3, 2);
const TOKENS = 20;
const TOKEN_DELAY_MS = 2;
/** rpc children starting at a time: all 50 at once only thrash two cores. */
const START_LANES = 8;
/** Longest wait for one command's response, one prompt's settling, or one child's start or exit. */
const STEP_MS = 60_000;

const CLI = fileURLToPath(new URL("../dist/main/cli.js", import.meta.url));
const CLK_TCK = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** utime + stime of `pid` (every thread, live or ended), in clock ticks. */
function cpuTicks(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * The main thread's time running and waiting for a CPU while runnable (/proc/<pid>/schedstat, the
 * thread-group leader's), ns: what a busy main thread and a crowded machine each add to latency.
 */
function mainSchedNs(pid) {
  const [run, wait] = readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ").map(Number);
  return { run, wait };
}

/** VmRSS of `pid`, bytes. */
function rssBytes(pid) {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (match === null) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]) * 1024;
}

let nextId = 0;
/** Every child spawned and not yet exited, so that a failed run leaves none behind. */
const live = new Set();

/**
 * A CLI child speaking JSONL on stdio, with its own LIFELINE_DIR. Records are routed by
 * `sessionId` (the rpc side's carry none: they go to "default"); a response with a pending `id`
 * settles its request.
 */
async function startChild(mode, port) {
  const dir = await mkdtemp(join(tmpdir(), `lifeline-bench-t-${mode}-`));
  await writeFile(join(dir, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 10 } }));
  await writeFile(join(dir, "models.json"), mockModelsJson(`http://127.0.0.1:${port}`));
  const child = spawn(process.execPath, [CLI, "--mode", mode, "--provider", "mock", "--model", "mock-1"], {
    cwd: dir,
    env: { ...process.env, LIFELINE_DIR: dir, NO_COLOR: "1" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  live.add(child);
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  child.stdin.on("error", () => {});
  const pending = new Map();
  const listeners = new Map();
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(signal ?? code)));
  void exited.then((how) => {
    live.delete(child);
    for (const { reject } of pending.values()) reject(new Error(`${mode} child exited (${how}): ${stderr}`));
    for (const listener of listeners.values()) listener({ type: "exit", how, stderr });
  });
  createInterface({ input: child.stdout }).on("line", (line) => {
    const at = performance.now();
    const record = JSON.parse(line);
    if (record.type === "response" && pending.has(record.id)) {
      pending.get(record.id).resolve({ record, at });
      pending.delete(record.id);
    }
    listeners.get(record.sessionId ?? "default")?.(record, at);
  });
  const send = (command) => {
    const id = `b${++nextId}`;
    const sentAt = performance.now();
    const response = new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    child.stdin.write(`${JSON.stringify({ id, ...command })}\n`);
    return { sentAt, response: within(response, STEP_MS, `${mode} ${command.type}`) };
  };
  const request = async (command) => {
    const { record } = await send(command).response;
    if (!record.success) throw new Error(`${mode} ${command.type} failed: ${JSON.stringify(record.error)}`);
    return record;
  };
  /**
   * Prompts `sessionId` (undefined: the rpc side's one session) and resolves once it settles, with
   * the client-observed milliseconds from the write to its first event and to the response.
   */
  const prompt = async (sessionId, message) => {
    const key = sessionId ?? "default";
    let firstAt;
    let settled;
    const done = new Promise((resolve, reject) => {
      settled = { resolve, reject };
    });
    listeners.set(key, (record, at) => {
      if (record.type === "exit") settled.reject(new Error(`${mode} child exited (${record.how}): ${record.stderr}`));
      else if (record.type === "response") return;
      firstAt ??= at;
      if (record.type === "agent_settled") settled.resolve(record);
    });
    const { sentAt, response } = send({ type: "prompt", message, ...(sessionId === undefined ? {} : { sessionId }) });
    const answered = await response;
    if (!answered.record.success) throw new Error(`${mode} prompt refused: ${JSON.stringify(answered.record.error)}`);
    const end = await within(done, STEP_MS, `${mode} prompt settled`);
    listeners.delete(key);
    if (end.stopReason !== "stop") throw new Error(`${mode} prompt ended ${end.stopReason}: ${JSON.stringify(end)}`);
    return { firstEventMs: firstAt - sentAt, responseMs: answered.at - sentAt };
  };
  const close = async () => {
    child.stdin.end();
    try {
      await within(exited, STEP_MS, `${mode} child exit after EOF`);
    } catch (error) {
      child.kill("SIGKILL");
      await exited;
      throw error;
    }
    await rm(dir, { recursive: true, force: true });
  };
  return { pid: child.pid, request, prompt, close, exited };
}

/** Sum over `children` of `read(pid)`. */
const sum = (children, read) => children.reduce((total, child) => total + read(child.pid), 0);

/** Runs the prompts of `jobs` (each `{ child, sessionId, index }`) `lanes` sessions at a time. */
async function promptPhase(children, jobs, lanes, label, count) {
  const ticks0 = sum(children, cpuTicks);
  const run0 = sum(children, (pid) => mainSchedNs(pid).run);
  const wait0 = sum(children, (pid) => mainSchedNs(pid).wait);
  const t0 = performance.now();
  const timings = (
    await mapLimit(jobs, lanes, async ({ child, sessionId, index }) => {
      const out = [];
      for (let k = 0; k < count; k++) out.push(await child.prompt(sessionId, `session ${index} ${label} ${k}: answer`));
      return out;
    })
  ).flat();
  const wallMs = performance.now() - t0;
  const cpuMs = ((sum(children, cpuTicks) - ticks0) * 1000) / CLK_TCK;
  const mainWallNs = wallMs * 1e6 * children.length;
  return {
    prompts: timings.length,
    wallMs,
    cpuMs,
    cpuUsPerPrompt: (cpuMs * 1000) / timings.length,
    // Shares of the phase's wall time, averaged over the side's main threads.
    mainRunShare: (sum(children, (pid) => mainSchedNs(pid).run) - run0) / mainWallNs,
    mainWaitShare: (sum(children, (pid) => mainSchedNs(pid).wait) - wait0) / mainWallNs,
    firstEventMs: summarize(timings.map((t) => t.firstEventMs)),
    responseMs: summarize(timings.map((t) => t.responseMs)),
  };
}

async function runSide(side, port) {
  const loadBefore = loadavg();
  const t0 = performance.now();
  let children;
  let jobs;
  if (side === "host") {
    const child = await startChild("host", port);
    children = [child];
    const opened = await Promise.all(Array.from({ length: SESSIONS }, () => child.request({ type: "open_session" })));
    jobs = opened.map((record, index) => ({ child, sessionId: record.sessionId, index }));
  } else {
    // RPC mode opens its session at start; a get_state answer says it is open.
    children = await mapLimit(Array.from({ length: PROCESSES }), START_LANES, async () => {
      const child = await startChild("rpc", port);
      await child.request({ type: "get_state" });
      return child;
    });
    jobs = children.map((child, index) => ({ child, sessionId: undefined, index }));
  }
  const openMs = performance.now() - t0;
  const sessions = jobs.length;
  const lanes = side === "host" ? IN_FLIGHT : sessions;
  const rssOpen = sum(children, rssBytes);
  const openCpuMs = (sum(children, cpuTicks) * 1000) / CLK_TCK;
  const warm = await promptPhase(children, jobs, lanes, "warm-up", 1);
  const measured = await promptPhase(children, jobs, lanes, "prompt", PROMPTS);
  const rssEnd = sum(children, rssBytes);
  await Promise.all(children.map((child) => child.close()));
  return {
    side,
    processes: children.length,
    sessions,
    lanes,
    openMs,
    openCpuMsPerSession: openCpuMs / sessions,
    rssOpenBytesPerSession: rssOpen / sessions,
    rssEndBytesPerSession: rssEnd / sessions,
    warm,
    measured,
    loadavgBefore: loadBefore,
    loadavgAfter: loadavg(),
  };
}

const [side, port] = process.argv.slice(2);
if (side !== undefined) {
  try {
    report(await runSide(side, Number(port)));
  } finally {
    for (const child of live) child.kill("SIGKILL");
  }
} else {
  const mock = await startMockChild({
    reply: Array.from({ length: TOKENS }, (_, i) => `word${i}`).join(" "),
    tokenDelayMs: TOKEN_DELAY_MS,
  });
  try {
    const sides = {};
    for (const name of ["rpc", "host"]) {
      process.stderr.write(`  (t) ${name} side … (loadavg ${loadavg()[0].toFixed(2)})\n`);
      sides[name] = await runChild("./host-mode.mjs", [name, String(mock.port)]);
    }
    const { host, rpc } = sides;
    report({
      config: { SESSIONS, PROCESSES, IN_FLIGHT, PROMPTS, TOKENS, TOKEN_DELAY_MS, CLK_TCK },
      sides,
      ratios: {
        rssOpenPerSession: host.rssOpenBytesPerSession / rpc.rssOpenBytesPerSession,
        rssEndPerSession: host.rssEndBytesPerSession / rpc.rssEndBytesPerSession,
        cpuPerPrompt: host.measured.cpuUsPerPrompt / rpc.measured.cpuUsPerPrompt,
        cpuPerWarmUpPrompt: host.warm.cpuUsPerPrompt / rpc.warm.cpuUsPerPrompt,
        firstEventP50: host.measured.firstEventMs.p50 / rpc.measured.firstEventMs.p50,
        firstEventP99: host.measured.firstEventMs.p99 / rpc.measured.firstEventMs.p99,
      },
      loadavg: loadavg(),
    });
  } finally {
    await mock.stop();
  }
}
