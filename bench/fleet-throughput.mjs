/**
 * Section (h): a fleet's queue of prompts on this machine: prompts per second with 1, 2 and 3
 * `lifeline serve` processes (the built CLI) against one redis-server, and Redis commands per
 * prompt (from `INFO commandstats` before and after), Redis's main-thread CPU per prompt (`INFO
 * cpu`), and the Redis memory a stored session, a finished prompt and a queued prompt take
 * (`MEMORY USAGE`, `used_memory`).
 *
 * Each size runs on a fresh Redis database (FLUSHALL, CONFIG RESETSTAT): SESSIONS conversations of
 * PROMPTS prompts each on the demo model `demo/demo-fast` (no delay, no network), each prompt
 * submitted when the previous one of its session has its result (as a chat client does), from
 * one FleetClient in this process. Throughput is prompts over the wall time from the first submit
 * to the last result. Needs `redis-server` on the PATH.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { pick, report } from "./lib.mjs";

const CLI = fileURLToPath(new URL("../dist/main/cli.js", import.meta.url));
const HOSTS = pick([1, 2, 3], [1, 2]);
const SESSIONS = pick(64, 16);
const PROMPTS = pick(8, 4);
const QUEUED = pick(1000, 200);

function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function exited(child) {
  return new Promise((resolve) => child.once("exit", resolve));
}

/** Redis's command counts by command name (`INFO commandstats`; commands inside scripts count too). */
async function commandCalls(redis) {
  const info = await redis.info("commandstats");
  const calls = {};
  for (const match of info.matchAll(/cmdstat_([\w|]+):calls=(\d+)/g)) calls[match[1]] = Number(match[2]);
  return calls;
}

/** Redis's main-thread CPU so far, in µs (`INFO cpu`: user + sys of the main thread). */
async function mainThreadCpuUs(redis) {
  const info = await redis.info("cpu");
  const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? Number.NaN);
  return (field("used_cpu_user_main_thread") + field("used_cpu_sys_main_thread")) * 1e6;
}

/** Bytes of every key matching `pattern` (`MEMORY USAGE … SAMPLES 0`: exact) and how many keys. */
async function keyBytes(redis, pattern) {
  let cursor = "0";
  let bytes = 0;
  let keys = 0;
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    for (const key of batch) {
      bytes += (await redis.call("MEMORY", "USAGE", key, "SAMPLES", "0")) ?? 0;
      keys++;
    }
  } while (cursor !== "0");
  return { bytes, keys };
}

async function usedMemory(redis) {
  return Number(/^used_memory:(\d+)/m.exec(await redis.info("memory"))?.[1]);
}

/** Calls per prompt by command, between two `commandCalls`, most first. */
function callsPerPrompt(before, after, prompts) {
  return Object.entries(after)
    .map(([command, calls]) => [command, (calls - (before[command] ?? 0)) / prompts])
    .filter(([, perPrompt]) => perPrompt > 0)
    .sort((a, b) => b[1] - a[1]);
}

async function startServe(url, dir) {
  const child = spawn(
    process.execPath,
    [CLI, "serve", "--fleet", url, "--fleet-name", "bench", "--concurrency", "32"],
    {
      cwd: dir,
      env: { ...process.env, LIFELINE_DIR: dir },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  await new Promise((resolve, reject) => {
    let text = "";
    child.stderr.on("data", (chunk) => {
      text += chunk;
      if (text.includes("serving fleet")) resolve();
    });
    child.once("exit", () => reject(new Error(`serve exited: ${text}`)));
  });
  return child;
}

async function size(hosts, url, redis, dir) {
  const { FleetClient } = await import("../dist/main/fleet/index.js");
  await redis.flushall();
  await redis.config("RESETSTAT");
  const children = await Promise.all(Array.from({ length: hosts }, () => startServe(url, dir)));
  const client = await FleetClient.connect({ fleet: { redis: url, name: "bench" } });
  const before = await commandCalls(redis);
  const cpuBefore = await mainThreadCpuUs(redis);
  const started = performance.now();
  let failed = 0;
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      for (let p = 0; p < PROMPTS; p++) {
        const handle = await client.submit(`prompt ${p} of session ${s}`, {
          sessionId: `bench-${s}`,
          model: "demo/demo-fast",
        });
        const result = await handle.result({ timeoutMs: 120_000 });
        if (result.stopReason !== "stop") failed++;
      }
    }),
  );
  const wallMs = performance.now() - started;
  // INFO itself and this client's own result checks are included: they are part of serving a prompt.
  const byCommand = callsPerPrompt(before, await commandCalls(redis), SESSIONS * PROMPTS);
  const redisCpuUs = (await mainThreadCpuUs(redis)) - cpuBefore;
  // What the run left in Redis: the sessions (kept for fleet.sessionTtlMs) and the finished jobs
  // with their event streams (kept an hour).
  const stored =
    hosts === 1
      ? {
          session: await keyBytes(redis, "lifeline:bench:session:*"),
          indexes: await keyBytes(redis, "lifeline:bench:sessions:*"),
          events: await keyBytes(redis, "lifeline:bench:job:*"),
          queue: await keyBytes(redis, "lifeline:bench:prompts:*"),
        }
      : undefined;
  await client.close();
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(children.map(exited));
  const prompts = SESSIONS * PROMPTS;
  return {
    hosts,
    prompts,
    failed,
    wallMs,
    promptsPerS: prompts / (wallMs / 1000),
    redisCallsPerPrompt: byCommand.reduce((sum, [, perPrompt]) => sum + perPrompt, 0),
    /** Scripts (EVALSHA, EVAL, FCALL) per prompt: each one round trip whatever it runs inside. */
    scriptCallsPerPrompt: byCommand
      .filter(([command]) => /^(evalsha|eval|fcall)/.test(command))
      .reduce((sum, [, perPrompt]) => sum + perPrompt, 0),
    byCommand: byCommand.slice(0, 12),
    /** Redis's main-thread CPU per prompt, µs: what one Redis core spends to serve a prompt. */
    redisCpuUsPerPrompt: redisCpuUs / prompts,
    stored,
  };
}

/**
 * Where a prompt's Redis commands come from: MONITOR over `count` prompts (5 sessions, one
 * serve process, after a warm-up), each command (those run inside a script included, which
 * MONITOR shows after the script) counted for the origin of the round trip it belongs to:
 * BullMQ's scripts and commands (keys under `prompts`), the session store's (`session`), the
 * job's event stream (`job:`), and the rest (the client's blocking reads, transactions).
 */
async function origins(url, redis, dir, count) {
  const { FleetClient } = await import("../dist/main/fleet/index.js");
  await redis.flushall();
  const child = await startServe(url, dir);
  const client = await FleetClient.connect({ fleet: { redis: url, name: "bench" } });
  const run = (prompts, tag) =>
    Promise.all(
      Array.from({ length: 5 }, async (_, s) => {
        for (let p = 0; p < prompts; p++) {
          const handle = await client.submit(`${tag} ${p} of ${s}`, {
            sessionId: `origin-${s}`,
            model: "demo/demo-fast",
          });
          await handle.result({ timeoutMs: 60_000 });
        }
      }),
    );
  await run(2, "warm-up");
  const watcher = new Redis(url);
  const monitor = await watcher.monitor();
  const seen = [];
  monitor.on("monitor", (_time, args, source) => seen.push({ args, nested: source === "lua" }));
  await new Promise((resolve) => setTimeout(resolve, 200));
  await run(count / 5, "measured");
  await new Promise((resolve) => setTimeout(resolve, 500));
  monitor.disconnect();
  watcher.disconnect();
  await client.close();
  child.kill("SIGTERM");
  await exited(child);
  const origin = (args) => {
    const command = String(args[0]).toLowerCase();
    const scripted = command === "evalsha" || command === "eval";
    const key = String((scripted ? args[3] : args[1]) ?? "");
    const kind = scripted ? "scripts" : command;
    if (key.includes(":prompts")) return `BullMQ ${scripted ? "scripts" : "commands"}`;
    if (key.includes(":session")) return `session store ${scripted ? "scripts" : "commands"}`;
    if (key.includes(":job:") || command === "multi" || command === "exec") return "job event stream";
    if (/^(budget|permits|gates)/.test(key.slice(key.indexOf(":", 9) + 1))) return "coordination";
    return `other (${kind})`;
  };
  const rows = new Map();
  let current = "other";
  for (const { args, nested } of seen) {
    if (!nested) current = origin(args);
    const row = rows.get(current) ?? { commands: 0, roundTrips: 0 };
    row.commands += 1;
    if (!nested) row.roundTrips += 1;
    rows.set(current, row);
  }
  return [...rows.entries()]
    .map(([name, row]) => ({ name, commands: row.commands / count, roundTrips: row.roundTrips / count }))
    .sort((a, b) => b.commands - a.commands);
}

/**
 * Redis memory of prompts waiting in the queue: `count` prompts submitted with no host serving,
 * `used_memory` before and after (the queue's own keys included), per prompt.
 */
async function queuedMemory(url, redis, count) {
  const { FleetClient } = await import("../dist/main/fleet/index.js");
  await redis.flushall();
  const client = await FleetClient.connect({ fleet: { redis: url, name: "bench" } });
  // One first, so the queue's fixed keys (meta, id counter, events stream) exist before measuring.
  await client.submit("warm-up", { sessionId: "queued-warm", model: "demo/demo-fast" });
  const before = await usedMemory(redis);
  for (let i = 0; i < count; i++) {
    await client.submit(`queued prompt ${i}, a line of text a user might send`, {
      sessionId: `queued-${i % 50}`,
      model: "demo/demo-fast",
    });
  }
  const after = await usedMemory(redis);
  await client.close();
  return { count, bytesPerPrompt: (after - before) / count };
}

const dir = mkdtempSync(join(tmpdir(), "lifeline-bench-fleet-"));
writeFileSync(join(dir, "settings.json"), JSON.stringify({ sessions: { fsync: "never" } }));
const port = await freePort();
const server = spawn(
  "redis-server",
  [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--save",
    "",
    "--appendonly",
    "yes",
    "--appendfsync",
    "everysec",
    "--maxmemory-policy",
    "noeviction",
  ],
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
  for (const hosts of HOSTS) {
    process.stderr.write(`  (h) fleet: ${hosts} serve process(es), ${SESSIONS} × ${PROMPTS} prompts …\n`);
    runs.push(await size(hosts, url, redis, dir));
  }
  const queued = await queuedMemory(url, redis, QUEUED);
  const byOrigin = await origins(url, redis, dir, 20);
  report({ section: "h", config: { HOSTS, SESSIONS, PROMPTS }, runs, queued, byOrigin });
} finally {
  redis.disconnect();
  server.kill("SIGTERM");
  await exited(server);
  rmSync(dir, { recursive: true, force: true });
}
