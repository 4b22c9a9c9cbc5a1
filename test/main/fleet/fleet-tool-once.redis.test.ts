/**
 * SPEC X7 across hosts, at its narrowest point: a tool that starts the moment the model's reply
 * arrives, and whose host dies inside it. In a fleet a session's worker holds each tool call until
 * the reply that asked for it is stored (`tool_calls_ready`), so the host that takes the job over
 * finds the call in the transcript, gives it a result saying it was interrupted, and never runs it
 * again. The tool (test/fixtures/fleet-tools.mjs, a `die-` tag) writes its side effect, then
 * SIGKILLs its own host, the first time only: a second run would show as a second line.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FleetClient } from "../../../dist/main/fleet/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { fleetTranscript, type ServeChild, startServe, writeFleetSettings } from "../../fixtures/fleet-hosts.js";
import { workerApiModel } from "../../fixtures/models.mjs";
import { startRedis, type TestRedis } from "../../fixtures/redis-server.js";

const TOOLS = fileURLToPath(new URL("../../fixtures/fleet-tools.mjs", import.meta.url));
const MODEL = workerApiModel("lifeline-test-fleet", "fleet-1");
const NAME = "tool-once";
const LEASE_MS = 1000;

const cleanups: (() => Promise<void> | void)[] = [];
const hosts: ServeChild[] = [];
let redis: TestRedis;
let lifelineDir: string;
let toolLog: string;

beforeAll(async () => {
  redis = await startRedis();
  lifelineDir = tempDir(cleanups, "lifeline-fleet-tool-once-");
  toolLog = join(lifelineDir, "tool.log");
  writeFileSync(toolLog, "");
  writeFleetSettings(lifelineDir, { redisUrl: redis.url, leaseMs: LEASE_MS });
}, 30_000);
afterAll(async () => {
  for (const host of hosts) host.child.kill("SIGKILL");
  await Promise.all(hosts.map((host) => host.exited));
  for (const cleanup of cleanups.reverse()) await cleanup();
  await redis?.dispose();
}, 60_000);

function serve(): ServeChild {
  const host = startServe({
    redisUrl: redis.url,
    name: NAME,
    lifelineDir,
    cwd: lifelineDir,
    extra: ["--worker-module", TOOLS],
    env: { LIFELINE_TEST_TOOL_LOG: toolLog },
  });
  hosts.push(host);
  return host;
}

describe("a host that dies inside a tool", () => {
  it("X7: the next host gives the tool call an 'interrupted' result and never runs the tool again", async () => {
    const first = serve();
    await first.ready;
    const client = await FleetClient.connect({ fleet: { redis: redis.url, name: NAME, leaseMs: LEASE_MS } });
    cleanups.push(() => client.close());
    const handle = await client.submit("note this [tool=die-once] [words=5]", {
      sessionId: "dies-in-tool",
      jobId: "job-die-once",
      model: MODEL,
    });
    // The first host kills itself inside the tool; only then does a second host start.
    await within(first.exited, 20_000, "the first host to die in its tool");
    await serve().ready;
    const result = await within(handle.result({ timeoutMs: 30_000 }), 40_000, "the prompt's result");
    expect(result).toMatchObject({ jobId: "job-die-once", stopReason: "stop" });

    const runs = readFileSync(toolLog, "utf8")
      .split("\n")
      .filter((line) => line === "die-once");
    expect(runs).toHaveLength(1);
    const transcript = await fleetTranscript(redis.url, NAME, lifelineDir, "dies-in-tool");
    expect(transcript.filter((line) => line.startsWith("assistant(toolUse)"))).toHaveLength(1);
    const toolResults = transcript.filter((line) => line.startsWith("toolResult"));
    expect(toolResults).toHaveLength(1);
    expect(toolResults[0]).toMatch(/interrupted/i);
    expect(transcript.at(-1)).toMatch(/^assistant\(stop\):after the tool/);
  }, 90_000);
});
