/**
 * Section (g): what fleet mode adds to each model request's B8 decisions (docs/fleet.md): the
 * retry budget, the provider gate and the request permits decided in Redis instead of in memory.
 *
 * Starts its own redis-server (Debian's, as the tests do: a free loopback port, AOF with
 * `appendfsync everysec`, noeviction) and two "hosts" in this process, each a HostCoordination
 * joined to the fleet on its own connection. Measured, each as latency per decision after a
 * warm-up, against a baseline measured in the same run:
 *   - a raw PING round trip on loopback (the floor of any Redis decision);
 *   - the same decisions on a host without a fleet (in memory);
 *   - a first attempt's path: the budget deposit (sent, not awaited), the permit (gate check and
 *     lease, awaited), the release (sent, not awaited), with `retry.budget`, `retry.coordinate`
 *     and `retry.maxConcurrentRequests` all on;
 *   - a retry's path: the withdrawal (awaited) and then the same permit path;
 *   - a gate closed by host A, until host B's mirror knows (pub/sub).
 * Round trips per request attempt are counted by Redis itself (INFO commandstats, EVALSHA calls),
 * and so is the Redis CPU each script call costs (its usec_per_call).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { HostCoordination } from "../dist/main/coordination/host-coordination.js";
import { SessionCoordination } from "../dist/main/coordination/session-coordination.js";
import { connectFleet } from "../dist/main/redis/fleet-connection.js";
import { abortableSleep } from "../dist/main/retry/sleep.js";
import { DEFAULT_SETTINGS, parseSettings } from "../dist/shared/settings/settings.js";
import { pick, report, sleep } from "./lib.mjs";

const SAMPLES = pick(5000, 1000);
const WARMUP = pick(500, 100);
const GATE_SAMPLES = pick(500, 100);

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "lifeline-bench-redis-"));
  const child = spawn(
    "redis-server",
    [
      ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", ""],
      ...["--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction"],
    ],
    { stdio: "ignore" },
  );
  const probe = new Redis({ port, host: "127.0.0.1", lazyConnect: true, retryStrategy: () => 50 });
  probe.on("error", () => {});
  for (let i = 0; ; i++) {
    try {
      await probe.connect();
      break;
    } catch {
      if (i > 200) throw new Error("redis-server did not start");
      await sleep(25);
    }
  }
  const version = (await probe.info("server")).match(/redis_version:(\S+)/)?.[1];
  return {
    url: `redis://127.0.0.1:${port}`,
    probe,
    version,
    stop: async () => {
      probe.disconnect();
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function quantiles(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p99: at(0.99), n: sorted.length };
}

async function measure(n, fn) {
  for (let i = 0; i < WARMUP; i++) await fn(i);
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    samples.push(performance.now() - t0);
  }
  return quantiles(samples);
}

async function evalshaCalls(probe) {
  const stats = await probe.info("commandstats");
  return Number(stats.match(/cmdstat_evalsha:calls=(\d+)/)?.[1] ?? 0);
}

/** Redis's own CPU per script call (µs), averaged over every EVALSHA of the run. */
async function evalshaUsecPerCall(probe) {
  const stats = await probe.info("commandstats");
  return Number(stats.match(/cmdstat_evalsha:[^\r\n]*usec_per_call=([\d.]+)/)?.[1] ?? Number.NaN);
}

/** A host's coordination, joined to `name` on `url` when given, and one session's view of it. */
async function host(url, name) {
  const coordination = new HostCoordination({ now: () => performance.now(), sleep: abortableSleep });
  let connection;
  if (url !== undefined) {
    connection = await connectFleet(parseSettings({ fleet: { redis: url, name } }, "bench").fleet);
    await coordination.joinFleet(connection, () => {});
  }
  const retry = {
    ...DEFAULT_SETTINGS.retry,
    // A budget that never runs out in the run, so every withdrawal does the full work.
    budget: { ratio: 1, minPerSecond: 1e6, windowMs: 10_000 },
    coordinate: true,
    maxConcurrentRequests: 1000,
  };
  const session = new SessionCoordination(coordination, {
    provider: () => "bench",
    baseUrl: () => "http://127.0.0.1:1/v1",
    apiKey: () => "bench-key",
    settings: () => retry,
    emit: () => {},
  });
  const semaphore = coordination.semaphore("bench", retry.maxConcurrentRequests);
  const owner = {};
  let requestId = 0;
  /** A request attempt's decisions as the host makes them: `retry` adds the withdrawal. */
  const attempt = async (retried) => {
    if (retried) {
      if ((await session.withdrawRetry()) !== undefined) throw new Error("budget refused");
    } else session.depositFirstAttempt();
    if (session.gateClosed) throw new Error("gate closed");
    const id = ++requestId;
    if (!(await coordination.requestPermit(owner, id, semaphore, session.permitGateKey))) throw new Error("no permit");
    coordination.releasePermit(owner, id);
  };
  return {
    coordination,
    connection,
    session,
    attempt,
    close: async () => {
      coordination.leaveFleet();
      await connection?.close();
    },
  };
}

const redis = await startRedis();
try {
  const name = `bench${process.pid}`;
  const ping = await measure(SAMPLES, () => redis.probe.ping());
  const local = await host(undefined);
  const localFirst = await measure(SAMPLES, () => local.attempt(false));
  const localRetry = await measure(SAMPLES, () => local.attempt(true));
  const a = await host(redis.url, name);
  const b = await host(redis.url, name);
  const fleetFirst = await measure(SAMPLES, () => a.attempt(false));
  const fleetRetry = await measure(SAMPLES, () => a.attempt(true));
  // Let the last releases and deposits (not awaited) land before counting.
  await a.connection.redis.ping();

  const counted = pick(2000, 500);
  const before = await evalshaCalls(redis.probe);
  for (let i = 0; i < counted; i++) await a.attempt(false);
  await a.connection.redis.ping();
  const afterFirst = await evalshaCalls(redis.probe);
  for (let i = 0; i < counted; i++) await a.attempt(true);
  await a.connection.redis.ping();
  const afterRetry = await evalshaCalls(redis.probe);
  const redisUsecPerScript = await evalshaUsecPerCall(redis.probe);

  // Host A closes a gate; host B's mirror learns of it from the pub/sub message.
  const gatesChannel = b.connection.key("channel", "gates");
  const gateSamples = [];
  for (let i = 0; i < GATE_SAMPLES; i++) {
    const learned = new Promise((resolve) => {
      const onMessage = (channel) => {
        if (channel !== gatesChannel) return;
        b.connection.subscriber().off("message", onMessage);
        resolve(performance.now());
      };
      b.connection.subscriber().on("message", onMessage);
    });
    const t0 = performance.now();
    a.session.closeGate(1);
    gateSamples.push((await learned) - t0);
    await sleep(2);
  }
  await Promise.all([a.close(), b.close(), local.close()]);
  report({
    section: "g",
    config: { SAMPLES, WARMUP, GATE_SAMPLES, redis: redis.version, appendfsync: "everysec" },
    pingMs: ping,
    local: { first: localFirst, retry: localRetry },
    fleet: { first: fleetFirst, retry: fleetRetry },
    addedMs: {
      first: { p50: fleetFirst.p50 - localFirst.p50, p99: fleetFirst.p99 - localFirst.p99 },
      retry: { p50: fleetRetry.p50 - localRetry.p50, p99: fleetRetry.p99 - localRetry.p99 },
    },
    roundTripsPerAttempt: {
      first: (afterFirst - before) / counted,
      retry: (afterRetry - afterFirst) / counted,
    },
    gateLearnMs: quantiles(gateSamples),
    redisUsecPerScript,
  });
} finally {
  await redis.stop();
}
