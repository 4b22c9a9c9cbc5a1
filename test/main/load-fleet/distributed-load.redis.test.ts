/**
 * Distributed load runs end to end, as docs/load.md ("Distributed runs") describes them: a real redis-server (test/fixtures/redis-server.ts),
 * three `lifeline load-agent --once` generators and the coordinator `lifeline load --fleet …
 * --generators 3`, all child processes of the built CLI (run `npm run build` first), against one
 * mock server this test runs (`--model mock/mock-1` through models.json), so that one independent
 * server counts every request of every generator.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import type { RequestRecord } from "../../../dist/main/load/index.js";
import type { FleetLoadReport } from "../../../dist/main/load-fleet/index.js";
import { type MockServer, startMockServer } from "../../../dist/mock-server/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { type AgentChild, agentLifelineDir, startAgent, waitForEntries } from "../../fixtures/load-agents.js";
import { type LoadRun, runLoadChild, startLoadChild } from "../../fixtures/load-child.js";
import { freePort, redisForFile } from "../../fixtures/redis-server.js";

const file = redisForFile();
const { cleanups } = file;

/** The mock every generator sends to, and the models.json that names it. */
async function sharedMock(tokenDelayMs: number): Promise<{ server: MockServer; models: object }> {
  const server = await startMockServer({
    script: { reply: "one two three four five six", tokenDelayMs, faults: [{ probability: 0.1, step: 503 }], seed: 7 },
  });
  cleanups.push(() => server.close());
  const models = {
    providers: {
      mock: { baseUrl: `${server.url}/v1`, api: "openai-completions", apiKey: "dummy", models: [{ id: "mock-1" }] },
    },
  };
  return { server, models };
}

async function startAgents(count: number, name: string, models?: object): Promise<AgentChild[]> {
  const lifelineDir = agentLifelineDir(cleanups, models);
  const agents: AgentChild[] = [];
  for (let i = 0; i < count; i++)
    agents.push(await startAgent(cleanups, { redisUrl: file.redis.url, name, lifelineDir }));
  return agents;
}

function fleetArgs(name: string, generators: number): string[] {
  return ["--fleet", file.redis.url, "--fleet-name", name, "--generators", String(generators)];
}

function reportOf(run: LoadRun): FleetLoadReport {
  return JSON.parse(readFileSync(join(run.cwd, "out", "report.json"), "utf8")) as FleetLoadReport;
}

function recordsOf(run: LoadRun): (RequestRecord & { generator: string })[] {
  return readFileSync(join(run.cwd, "out", "records.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as (RequestRecord | { type: "prompt" }) & { generator: string })
    .filter((r): r is RequestRecord & { generator: string } => r.type === "request");
}

/** The nearest-rank percentile of ascending `sorted`. */
function nearestRank(sorted: readonly number[], p: number): number {
  return sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1] ?? Number.NaN;
}

describe("a distributed run over three generators", () => {
  it("merges to the mock's request count and the union's percentiles, and a threshold on the merged figures exits 99", async () => {
    const name = file.fleetName("merge");
    const { server, models } = await sharedMock(1);
    const agents = await startAgents(3, name, models);
    const run = await runLoadChild(
      cleanups,
      [
        ...["--model", "mock/mock-1", "--sessions", "7", "--prompts", "6", "--threads", "1", "--out", "out"],
        ...["--threshold", "p50_latency_ms<0.001", "--threshold", "failure_rate<=1"],
        ...fleetArgs(name, 3),
      ],
      { timeoutMs: 90_000 },
    );
    expect(run.code, run.stderr).toBe(99);
    const report = reportOf(run);
    expect(report.status).toBe("completed");
    // Every request any generator sent reached the one mock, and the merge counted each once.
    expect(report.totals.requests.sent).toBe(server.stats().total);
    expect(report.totals.prompts.sent).toBe(42);
    expect(report.generators.map((g) => g.sessions)).toEqual([3, 2, 2]);
    expect(report.generators.map((g) => g.seed)).toEqual([0, 1, 2]);
    expect(new Set(report.generators.map((g) => g.id))).toEqual(new Set(agents.map((a) => a.id)));
    expect(report.generators.every((g) => g.status === "finished" && g.figures.source === "final")).toBe(true);
    const records = recordsOf(run);
    expect(records).toHaveLength(server.stats().total);
    for (const g of report.generators) {
      expect(records.filter((r) => r.generator === g.id)).toHaveLength(g.figures.requests);
    }
    // The merged percentiles are the union's, within the sketch's 1 % (and the report's 0.001 rounding).
    const union = records
      .filter((r) => r.failure === undefined)
      .map((r) => r.e2eMs)
      .sort((a, b) => a - b);
    expect(report.latency.e2eMs.count).toBe(union.length);
    for (const p of [50, 90, 99] as const) {
      const exact = nearestRank(union, p);
      const merged = report.latency.e2eMs[`p${p}`] ?? Number.NaN;
      expect(Math.abs(merged - exact), `p${p}: merged ${merged}, union ${exact}`).toBeLessThanOrEqual(
        exact * 0.01 + 0.001,
      );
    }
    // The thresholds were evaluated on the merged figures.
    expect(report.thresholds.map((t) => [t.expression, t.passed, t.actual])).toEqual([
      ["p50_latency_ms<0.001", false, report.latency.e2eMs.p50],
      ["failure_rate<=1", true, report.totals.failureRate],
    ]);
    expect(run.stdout).toMatch(/Generators \(run /);
    for (const agent of agents) expect(await within(agent.exited, 30_000, "a generator's exit")).toBe(0);
  }, 150_000);

  it("regression: the generators get --prompts-file conversations, each its own, and --slo", async () => {
    const name = file.fleetName("convs");
    const server = await startMockServer({ script: { reply: "one two three", tokenDelayMs: 1 } });
    cleanups.push(() => server.close());
    const models = {
      providers: {
        mock: { baseUrl: `${server.url}/v1`, api: "openai-completions", apiKey: "dummy", models: [{ id: "mock-1" }] },
      },
    };
    await startAgents(2, name, models);
    const dir = tempDir(cleanups, "lifeline-convs-");
    const conversations = [0, 1, 2, 3].map((i) => JSON.stringify({ turns: [`conv${i} first`, `conv${i} second`] }));
    writeFileSync(join(dir, "convs.jsonl"), `${conversations.join("\n")}\n`);
    const run = await runLoadChild(
      cleanups,
      [
        ...["--model", "mock/mock-1", "--sessions", "4", "--prompts", "2", "--threads", "1", "--out", "out"],
        ...["--prompts-file", join(dir, "convs.jsonl"), "--slo", "e2e<=60s"],
        ...fleetArgs(name, 2),
      ],
      { timeoutMs: 90_000 },
    );
    expect(run.code, run.stderr).toBe(0);
    // Four sessions over two generators play the four conversations once each, both turns:
    // generator 2 starts after generator 1's two sessions, not at the first conversation again.
    expect([0, 1, 2, 3].map((i) => server.requests(`conv${i} first`))).toEqual([2, 2, 2, 2]);
    expect(server.stats().total).toBe(8);
    const report = reportOf(run);
    expect(report.slo).toMatchObject({ spec: "e2e<=60s" });
    expect(report.slo?.requests.total).toBe(8);
  }, 150_000);

  it("regression: the load tool's flags reach the generators: each tool call waits --tool-latency", async () => {
    const name = file.fleetName("tools");
    await startAgents(2, name);
    const run = await runLoadChild(
      cleanups,
      [
        ...["--sessions", "2", "--prompts", "1", "--threads", "1", "--out", "out"],
        ...["--tool-calls", "1", "--tool-latency", "400ms", "--mock-tokens", "3", "--mock-token-delay", "1ms"],
        ...fleetArgs(name, 2),
      ],
      { timeoutMs: 90_000 },
    );
    expect(run.code, run.stderr).toBe(0);
    const report = reportOf(run);
    expect(report.agentic.toolCalls).toBe(2);
    expect(report.agentic.toolLatencyMs.min).toBeGreaterThanOrEqual(400);
  }, 150_000);

  it("the open model: the arrival rate and the cap are split, and together the generators offer the undivided schedule", async () => {
    const name = file.fleetName("rate");
    const { server, models } = await sharedMock(1);
    await startAgents(3, name, models);
    // 6 arrivals/s, evenly spaced, for 3 s: 18 arrivals at 0, 167, 333, … ms; each generator
    // plays 2 per second at its phase (0, 167 and 333 ms in), so 6 each, interleaved.
    const run = await runLoadChild(
      cleanups,
      [
        ...["--model", "mock/mock-1", "--rate", "6/s", "--duration", "3s", "--sessions", "30", "--threads", "1"],
        ...["--out", "out"],
        ...fleetArgs(name, 3),
      ],
      { timeoutMs: 90_000 },
    );
    expect(run.code, run.stderr).toBe(0);
    const report = reportOf(run);
    expect(report.status).toBe("completed");
    expect(report.generators.map((g) => g.sessions)).toEqual([10, 10, 10]);
    const arrivals = report.totals.arrivals;
    expect(arrivals?.offered).toBe(18);
    expect((arrivals?.started ?? 0) + (arrivals?.dropped ?? 0) + (arrivals?.unstarted ?? 0)).toBe(18);
    // The report describes the whole run, not a generator's share.
    expect(report.config.arrival).toMatchObject({
      model: "open",
      stages: [{ durationMs: 3000, rate: 6 }],
      maxInFlight: 30,
    });
    expect(report.totals.requests.sent).toBe(server.stats().total);
    // Each generator played its third of the rate at its own phase: interleaved, not stacked
    // (split-load.test.ts checks that such shares together are exactly the undivided schedule).
    // The prompts' start times cannot show it on a busy machine: each waits for its session to
    // be created on the worker, tens to hundreds of ms.
    expect(report.generators.map((g) => g.arrival)).toEqual([0, 1, 2].map((i) => ({ rate: 2, phase: i / 3 })));
  }, 150_000);

  it("the limiter is the fleet's: --max-concurrent 2 holds all three generators to 2 requests in flight at the target", async () => {
    const name = file.fleetName("permits");
    const { server, models } = await sharedMock(20);
    await startAgents(3, name, models);
    // Six sessions, two per generator, each generator allowed 2 requests: on their own they
    // could have all six in flight; with the fleet's permits, at most 2 are, fleet-wide.
    const run = await runLoadChild(
      cleanups,
      [
        ...["--model", "mock/mock-1", "--sessions", "6", "--prompts", "3", "--threads", "1", "--out", "out"],
        ...["--max-concurrent", "2"],
        ...fleetArgs(name, 3),
      ],
      { timeoutMs: 90_000 },
    );
    expect(run.code, run.stderr).toBe(0);
    const report = reportOf(run);
    expect(report.totals.prompts.sent).toBe(18);
    expect(report.totals.requests.sent).toBe(server.stats().total);
    expect(server.stats().maxInFlight).toBe(2);
  }, 150_000);

  it("a generator killed mid-run is reported lost, the run goes on, and the report is degraded with the others' figures intact", async () => {
    const name = file.fleetName("kill");
    const { server, models } = await sharedMock(25);
    const agents = await startAgents(3, name, models);
    const run = startLoadChild(
      cleanups,
      [
        ...["--model", "mock/mock-1", "--sessions", "6", "--duration", "8s", "--threads", "1", "--out", "out"],
        ...fleetArgs(name, 3),
      ],
      { timeoutMs: 90_000 },
    );
    const victim = agents[1] as AgentChild;
    await waitForEntries(file.redis.url, name, [victim.id], (e) => e.type === "snapshot");
    const redis = new Redis(file.redis.url);
    cleanups.push(() => redis.disconnect());
    const [seconds, micros] = await redis.time();
    const killedAtMs = Number(seconds) * 1000 + Number(micros) / 1000;
    victim.child.kill("SIGKILL");
    const done = await within(run.done, 90_000, "the coordinator");
    expect(done.code, done.stderr).toBe(0);
    const notice = new RegExp(
      `generator ${victim.id} \\(host [^)]*\\) lost at (\\S+Z) \\(Redis's clock\\) with \\d+ prompts in flight`,
    );
    const noticedAt = notice.exec(done.stderr)?.[1];
    expect(noticedAt, done.stderr).toBeDefined();
    const report = reportOf(done);
    expect(report.status).toBe("degraded");
    const lost = report.generators.find((g) => g.id === victim.id);
    expect(lost).toMatchObject({ status: "lost", figures: { source: "last_snapshot" } });
    expect(lost?.inFlightPrompts).toBeGreaterThanOrEqual(0);
    expect(lost?.figures.promptsSent).toBeGreaterThan(0);
    // Declared lost within the lease (3 s) and a lease check (0.5 s) of the kill, with slack for a busy machine.
    const lostAtMs = Date.parse(report.startedAt) + (lost?.lostAtMs ?? Number.NaN);
    expect(lostAtMs - killedAtMs).toBeGreaterThan(0);
    expect(lostAtMs - killedAtMs).toBeLessThan(3000 + 500 + 3000);
    // One starting point: the coordinator's notice names the instant the report counts from its startedAt.
    expect(Date.parse(noticedAt ?? "")).toBe(lostAtMs);
    const others = report.generators.filter((g) => g.id !== victim.id);
    expect(others.map((g) => [g.status, g.figures.source])).toEqual([
      ["finished", "final"],
      ["finished", "final"],
    ]);
    const records = recordsOf(done);
    expect(records.some((r) => r.generator === victim.id)).toBe(false);
    for (const g of others) expect(records.filter((r) => r.generator === g.id)).toHaveLength(g.figures.requests);
    expect(report.totals.requests.sent).toBe(others.reduce((t, g) => t + g.figures.requests, 0));
    // The mock also saw the victim's requests, which the merged figures leave out. The others'
    // requests that their runs' end aborted on the way may not have reached it (as in any run that
    // ends by time), so the mock's count is compared with those the others surely delivered.
    const { sent, failuresByKind } = report.totals.requests;
    expect(server.stats().total).toBeGreaterThan(sent - (failuresByKind.aborted ?? 0));
  }, 150_000);

  it("Ctrl+C on the coordinator stops every generator and writes the partial merged report (exit 130)", async () => {
    const name = file.fleetName("sigint");
    const { server, models } = await sharedMock(25);
    const agents = await startAgents(3, name, models);
    const run = startLoadChild(
      cleanups,
      [
        ...["--model", "mock/mock-1", "--sessions", "6", "--duration", "60s", "--threads", "1", "--out", "out"],
        ...fleetArgs(name, 3),
      ],
      { timeoutMs: 90_000 },
    );
    await waitForEntries(
      file.redis.url,
      name,
      agents.map((a) => a.id),
      (e) => e.type === "snapshot",
    );
    run.child.kill("SIGINT");
    const done = await within(run.done, 40_000, "the coordinator after Ctrl+C");
    expect(done.code, done.stderr).toBe(130);
    const receivedAtExit = server.stats().total;
    // Every generator acknowledged the stop: each sent its partial final, then exited.
    for (const agent of agents) expect(await within(agent.exited, 20_000, "a generator's exit")).toBe(0);
    expect(server.stats().total).toBe(receivedAtExit);
    const report = reportOf(done);
    expect(report.status).toBe("interrupted");
    expect(report.durationMs).toBeLessThan(60_000);
    expect(report.generators.map((g) => g.status)).toEqual(["finished", "finished", "finished"]);
    // Every request the mock received is counted; the only ones counted that it may not have
    // received are those the stop aborted on their way (as in any interrupted run).
    const { sent, failuresByKind } = report.totals.requests;
    expect(receivedAtExit).toBeLessThanOrEqual(sent);
    expect(receivedAtExit).toBeGreaterThanOrEqual(sent - (failuresByKind.aborted ?? 0));
    expect(report.totals.prompts.cancelled).toBeGreaterThan(0);
  }, 150_000);
});

describe("a coordinator that dies", () => {
  it("leaves its generators to abort their runs once its run lock lapses", async () => {
    const name = file.fleetName("orphan");
    const { server, models } = await sharedMock(25);
    const [agent] = await startAgents(1, name, models);
    if (agent === undefined) throw new Error("no agent");
    const run = startLoadChild(
      cleanups,
      [
        ...["--model", "mock/mock-1", "--sessions", "2", "--duration", "120s", "--threads", "1", "--out", "out"],
        ...fleetArgs(name, 1),
      ],
      { timeoutMs: 90_000 },
    );
    await waitForEntries(file.redis.url, name, [agent.id], (e) => e.type === "snapshot");
    run.child.kill("SIGKILL");
    await within(run.done, 10_000, "the coordinator's death");
    // The lock lapses 10 s after its last renewal; the generator checks it every 2 s.
    expect(await within(agent.exited, 40_000, "the orphaned generator's exit")).toBe(0);
    expect(agent.stderr()).toMatch(/its coordinator is gone/);
    const received = server.stats().total;
    expect(received).toBeGreaterThan(0);
  }, 120_000);
});

describe("refusals before anything starts exit 2", () => {
  const coordinator = (name: string, extra: string[] = [], url = file.redis.url) =>
    runLoadChild(
      cleanups,
      ["--sessions", "2", "--prompts", "1", "--fleet", url, "--fleet-name", name, "--generators", "2", ...extra],
      { timeoutMs: 30_000 },
    );

  it("too few generators within --generator-timeout: names how many joined", async () => {
    const run = await coordinator(file.fleetName("few"), ["--generator-timeout", "1s"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/Only 0 of 2 generators joined the fleet "few\d+x\d+" within 1 s/);
  });

  it("another run holding the fleet name's lock: names its holder", async () => {
    const name = file.fleetName("busy");
    const redis = new Redis(file.redis.url);
    cleanups.push(() => redis.disconnect());
    const holder = { runId: "r-other", host: "elsewhere", pid: 4242, startedAt: "2026-12-01T20:00:00.000Z" };
    await redis.set(`lifeline:${name}:load:lock`, JSON.stringify(holder), "PX", 60_000);
    const run = await coordinator(name);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("run r-other of elsewhere (pid 4242), started 2026-12-01T20:00:00.000Z");
    expect(await redis.get(`lifeline:${name}:load:lock`)).toBe(JSON.stringify(holder));
  });

  it("a generator of another lifeline version: names it", async () => {
    const name = file.fleetName("version");
    const redis = new Redis(file.redis.url);
    cleanups.push(() => redis.disconnect());
    const fake = {
      id: "old-host-1-abcd",
      host: "old-host",
      pid: 1,
      version: "0.0.1-old",
      schema: "lifeline-load-report/1",
      protocol: 1,
      state: "idle",
      runId: null,
      joinedAtMs: Date.now(),
      clockOffsetMs: 0,
      clockErrorMs: 0,
    };
    await redis.set(`lifeline:${name}:load:agent:${fake.id}`, JSON.stringify(fake), "PX", 60_000);
    const run = await coordinator(name, ["--generator-timeout", "20s"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/old-host-1-abcd \(host old-host, pid 1: lifeline 0\.0\.1-old/);
    // The lock was released on the way out: the next coordinator is refused for the version only.
    expect(await redis.get(`lifeline:${name}:load:lock`)).toBeNull();
  });

  it("a sweep: its steps are chosen by one process, so it is refused, naming what to run instead", async () => {
    const run = await coordinator(file.fleetName("sweep"), ["--sweep", "3"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--sweep is not available with --generators: .*--rate/);
  });

  it("no Redis at the URL", async () => {
    const port = await freePort();
    const run = await coordinator(file.fleetName("noredis"), [], `redis://127.0.0.1:${port}`);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/Cannot reach the fleet's Redis at redis:\/\/127\.0\.0\.1:\d+/);
  });
});
