/**
 * A host that dies mid-prompt loses nothing (SPEC X7 across hosts): three real `lifeline serve`
 * processes on a real redis-server, sessions that stream and sessions whose prompts call a tool
 * with a side effect the test counts (test/fixtures/fleet-tools.mjs), and 20 SIGKILLs of the host
 * running a prompt, each at a moment drawn from a seeded PRNG (the n-th streamed update of a
 * prompt, or the start of its tool; the end of its reply if that moment never comes). A killed host
 * is replaced at once, so three keep serving.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FleetClient, type PromptJobResult } from "../../../dist/main/fleet/index.js";
import { mulberry32 } from "../../../src/shared/prng.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { fleetTranscript, type ServeChild, startServe, writeFleetSettings } from "../../fixtures/fleet-hosts.js";
import { workerApiModel } from "../../fixtures/models.mjs";
import { startRedis, type TestRedis } from "../../fixtures/redis-server.js";

const TOOLS = fileURLToPath(new URL("../../fixtures/fleet-tools.mjs", import.meta.url));
const MODEL = workerApiModel("lifeline-test-fleet", "fleet-1");
const NAME = "takeover";
const LEASE_MS = 1000;
const KILLS = 20;
const SESSIONS = 8;
const PROMPTS_PER_SESSION = 3;

const cleanups: (() => Promise<void> | void)[] = [];
let redis: TestRedis;
let lifelineDir: string;
let toolLog: string;
const hosts = new Map<number, ServeChild>();

beforeAll(async () => {
  redis = await startRedis();
  lifelineDir = tempDir(cleanups, "lifeline-fleet-takeover-");
  toolLog = join(lifelineDir, "tool.log");
  writeFileSync(toolLog, "");
  writeFleetSettings(lifelineDir, { redisUrl: redis.url, leaseMs: LEASE_MS });
}, 30_000);
afterAll(async () => {
  for (const host of hosts.values()) host.child.kill("SIGKILL");
  await Promise.all([...hosts.values()].map((host) => host.exited));
  for (const cleanup of cleanups.reverse()) await cleanup();
  await redis?.dispose();
}, 60_000);

function serve(): ServeChild {
  const host = startServe({
    redisUrl: redis.url,
    name: NAME,
    lifelineDir,
    cwd: lifelineDir,
    extra: ["--worker-module", TOOLS, "--concurrency", "4"],
    env: { LIFELINE_TEST_TOOL_LOG: toolLog },
  });
  hosts.set(host.pid, host);
  return host;
}

describe("hosts killed mid-prompt", () => {
  it(`X7: ${KILLS} SIGKILLs at seeded moments: every prompt resolves once, no turn is missing or doubled, no tool runs twice`, async () => {
    for (let i = 0; i < 3; i++) serve();
    await Promise.all([...hosts.values()].map((host) => host.ready));
    const client = await FleetClient.connect({ fleet: { redis: redis.url, name: NAME, leaseMs: LEASE_MS } });
    cleanups.push(() => client.close());
    // The seeded PRNG of the kill moments.
    const random = mulberry32(20_261_201);
    let kills = 0;

    // Kill plans: the first KILLS prompts to reach their moment kill the host running them (a
    // plan whose host is gone already waits for the prompt's next host).
    const kill = (hostPid: number): boolean => {
      const host = hosts.get(hostPid);
      if (host === undefined || kills >= KILLS) return false;
      kills++;
      host.child.kill("SIGKILL");
      hosts.delete(hostPid);
      serve();
      return true;
    };

    const results = new Map<string, PromptJobResult[]>();
    const expected = new Map<string, string[]>();
    const tags: string[] = [];
    const converse = async (session: number) => {
      const sessionId = `talk-${session}`;
      expected.set(sessionId, []);
      for (let turn = 0; turn < PROMPTS_PER_SESSION; turn++) {
        const tool = (session + turn) % 2 === 0;
        const tag = `s${session}t${turn}`;
        const text = tool ? `note this [tool=${tag}] [words=40]` : `tell me ${tag} [words=80]`;
        if (tool) tags.push(tag);
        expected.get(sessionId)?.push(text);
        const handle = await client.submit(text, { sessionId, jobId: `job-${tag}`, model: MODEL });
        const killAt = tool && random() < 0.5 ? "tool" : 1 + Math.floor(random() * 30);
        let updates = 0;
        let runningOn = 0;
        let planned = true;
        const following = (async () => {
          for await (const event of handle.events()) {
            if (event.type === "job_taken") runningOn = Number(event.host.split("/").at(-1));
            if (!planned) continue;
            if (event.type === "message_update") updates++;
            // A plan whose moment never comes (fewer batched updates than killAt, or a tool that
            // already ran on a host another plan killed) fires at the end of the reply instead,
            // so exactly KILLS hosts die whatever the batching.
            const replyEnd =
              event.type === "message_end" && event.message.role === "assistant" && event.message.stopReason === "stop";
            const moment = killAt === "tool" ? event.type === "tool_execution_start" : updates >= killAt;
            const now = moment || replyEnd;
            if (now && kill(runningOn)) planned = false;
          }
        })();
        const result = await within(handle.result({ timeoutMs: 150_000 }), 160_000, `the result of ${tag}`);
        await within(following, 30_000, `the events of ${tag}`);
        results.set(tag, [...(results.get(tag) ?? []), result]);
        expect(result).toMatchObject({ jobId: `job-${tag}`, sessionId, stopReason: "stop" });
      }
    };
    await within(
      Promise.all(Array.from({ length: SESSIONS }, (_, session) => converse(session))),
      170_000,
      "every conversation",
    );
    expect(kills).toBe(KILLS);
    expect([...results.values()].every((list) => list.length === 1)).toBe(true);
    expect(results.size).toBe(SESSIONS * PROMPTS_PER_SESSION);

    const ran = readFileSync(toolLog, "utf8")
      .split("\n")
      .filter((line) => line !== "");
    for (const [sessionId, texts] of expected) {
      const transcript = await fleetTranscript(redis.url, NAME, lifelineDir, sessionId);
      // Each prompt once, in order; each turn ends in exactly one answer, after at most one tool call.
      expect(transcript.filter((line) => line.startsWith("user:"))).toEqual(texts.map((text) => `user:${text}`));
      const turns: string[][] = [];
      for (const line of transcript) {
        if (line.startsWith("user:")) turns.push([]);
        turns.at(-1)?.push(line);
      }
      for (const turn of turns) {
        expect(
          turn.filter((line) => line.startsWith("assistant(stop)")),
          turn.join("\n"),
        ).toHaveLength(1);
        expect(turn.at(-1)?.startsWith("assistant(stop)"), turn.join("\n")).toBe(true);
        expect(
          turn.filter((line) => line.startsWith("assistant(toolUse)")).length,
          turn.join("\n"),
        ).toBeLessThanOrEqual(1);
        const toolResults = turn.filter((line) => line.startsWith("toolResult"));
        const tag = /\[tool=([\w-]+)\]/.exec(turn[0] ?? "")?.[1];
        if (tag === undefined) continue;
        // The tool ran at most once; exactly once unless the run was cut off inside it.
        const runs = ran.filter((line) => line === tag).length;
        expect(runs, `${tag} ran ${runs} times`).toBeLessThanOrEqual(1);
        if (toolResults.some((line) => line.includes(`noted ${tag}`))) expect(runs).toBe(1);
      }
    }
    expect(new Set(ran).size).toBe(ran.length);
  }, 180_000);
});
