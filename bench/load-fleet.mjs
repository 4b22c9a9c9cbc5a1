/**
 * Section (j): a distributed `lifeline load` run on this machine, with 1, 2 and 3 generators
 * (`lifeline load-agent --once`, the built CLI) and one coordinator (`lifeline load --fleet …
 * --generators K`) on one redis-server: what a generator costs the coordinator and Redis.
 *
 * Each size runs on a fresh Redis database (FLUSHALL, CONFIG RESETSTAT) with the same load per
 * generator: SESSIONS_PER sessions prompting for WINDOW_S seconds against each generator's
 * built-in mock (32 tokens, 5 ms apart), `--threads 1`. Measured: the coordinator's CPU over the
 * run (report.json `fleet.coordinatorCpuMs`: its own `process.cpuUsage`), the snapshot bytes each
 * generator streamed (`fleet.snapshotBytesPerSecondPerGenerator`), and Redis's side from `INFO`
 * before and after: bytes received (`total_net_input_bytes`) and commands by name, split into the
 * distributed run's own (XADD, XREAD, SET, MGET, BLPOP, LPUSH, SCAN, …) and those of the fleet-wide
 * limiter the generators' hosts run per request (EVALSHA and what runs inside the scripts).
 * Needs `redis-server` on the PATH. Every process shares this machine's cores.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { pick, report } from "./lib.mjs";

const CLI = fileURLToPath(new URL("../dist/main/cli.js", import.meta.url));
const GENERATORS = pick([1, 2, 3], [1, 2]);
const SESSIONS_PER = pick(16, 4);
const WINDOW_S = pick(20, 6);
/** Commands of the distributed run itself (the rest is the fleet-wide limiter's). */
const RUN_COMMANDS = new Set([
  "xadd",
  "xread",
  "set",
  "get",
  "mget",
  "blpop",
  "lpush",
  "pexpire",
  "scan",
  "time",
  "del",
  "multi",
  "exec",
  "info",
]);

function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function exited(child) {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise((resolve) => child.once("exit", resolve));
}

/** Command counts by name, and the bytes Redis has received. */
async function redisCounts(redis) {
  const calls = {};
  for (const match of (await redis.info("commandstats")).matchAll(/cmdstat_([\w|]+):calls=(\d+)/g)) {
    calls[match[1]] = Number(match[2]);
  }
  const input = /total_net_input_bytes:(\d+)/.exec(await redis.info("stats"));
  return { calls, inputBytes: Number(input?.[1] ?? 0) };
}

function startAgent(url, dir) {
  const child = spawn(process.execPath, [CLI, "load-agent", "--once", "--fleet", url, "--fleet-name", "bench"], {
    cwd: dir,
    env: { ...process.env, LIFELINE_DIR: dir },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let text = "";
    child.stderr.on("data", (chunk) => {
      text += chunk;
      if (text.includes("waiting for runs")) resolve(child);
    });
    child.once("exit", () => reject(new Error(`load-agent exited: ${text}`)));
  });
}

async function size(k, url, redis, dir) {
  await redis.flushall();
  await redis.config("RESETSTAT");
  const agents = [];
  for (let i = 0; i < k; i++) agents.push(await startAgent(url, dir));
  const before = await redisCounts(redis);
  const out = join(dir, `out-${k}`);
  const coordinator = spawn(
    process.execPath,
    [
      ...[CLI, "load", "--fleet", url, "--fleet-name", "bench", "--generators", String(k)],
      ...["--sessions", String(SESSIONS_PER * k), "--duration", `${WINDOW_S}s`, "--threads", "1", "--out", out],
    ],
    { cwd: dir, env: { ...process.env, LIFELINE_DIR: dir }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  coordinator.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const code = await exited(coordinator);
  if (code !== 0) throw new Error(`coordinator exited ${code}: ${stderr}`);
  const after = await redisCounts(redis);
  await Promise.all(agents.map(exited));
  const r = JSON.parse(readFileSync(join(out, "report.json"), "utf8"));
  const seconds = r.durationMs / 1000;
  const perGenS = (n) => n / k / seconds;
  let runCalls = 0;
  let limiterCalls = 0;
  const byCommand = [];
  for (const [command, calls] of Object.entries(after.calls)) {
    const delta = calls - (before.calls[command] ?? 0);
    if (delta <= 0) continue;
    byCommand.push([command, perGenS(delta)]);
    if (RUN_COMMANDS.has(command.split("|")[0])) runCalls += delta;
    else limiterCalls += delta;
  }
  byCommand.sort((a, b) => b[1] - a[1]);
  return {
    generators: k,
    sessions: r.config.sessions,
    seconds,
    requests: r.totals.requests.sent,
    requestsPerS: r.throughput.requestsPerSecond,
    coordinatorCpuMs: r.fleet.coordinatorCpuMs,
    coordinatorCpuPercent: r.fleet.coordinatorCpuPercent,
    snapshotBytesPerS: r.fleet.snapshotBytesPerSecondPerGenerator,
    finalBytesPerGenerator: r.generators.reduce((t, g) => t + g.traffic.finalBytes, 0) / k,
    redisInputBytesPerGenS: perGenS(after.inputBytes - before.inputBytes),
    runCommandsPerGenS: perGenS(runCalls),
    limiterCommandsPerGenS: perGenS(limiterCalls),
    byCommand: byCommand.slice(0, 14),
  };
}

const dir = mkdtempSync(join(tmpdir(), "lifeline-bench-load-fleet-"));
writeFileSync(join(dir, "settings.json"), JSON.stringify({}));
const port = await freePort();
const server = spawn(
  "redis-server",
  ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "yes"],
  { stdio: ["ignore", "pipe", "ignore"] },
);
await new Promise((resolve, reject) => {
  let text = "";
  server.stdout.on("data", (chunk) => {
    text += chunk;
    if (text.includes("Ready to accept connections")) resolve();
  });
  server.once("exit", () => reject(new Error(`redis-server exited: ${text}`)));
});
server.stdout.resume();
const url = `redis://127.0.0.1:${port}`;
const redis = new Redis(url);
try {
  const runs = [];
  for (const k of GENERATORS) {
    process.stderr.write(`  (k) distributed load: ${k} generator(s), ${SESSIONS_PER} sessions each, ${WINDOW_S} s …\n`);
    runs.push(await size(k, url, redis, dir));
  }
  report({ section: "j", config: { GENERATORS, SESSIONS_PER, WINDOW_S }, runs });
} finally {
  redis.disconnect();
  server.kill("SIGTERM");
  await exited(server);
  rmSync(dir, { recursive: true, force: true });
}
