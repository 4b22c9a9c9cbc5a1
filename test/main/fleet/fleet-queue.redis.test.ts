/**
 * The fleet's queue of prompts with real parts: a real redis-server (AOF, noeviction), real
 * `lifeline serve` child processes of the built CLI, the mock model server in this process, and
 * `FleetClient` from the built package. Each test uses its own fleet name, so no test sees
 * another's jobs or sessions.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FleetClient, type FleetEvent } from "../../../dist/main/fleet/index.js";
import { startMockServer } from "../../../dist/mock-server/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { fleetTranscript, type ServeChild, startServe, writeFleetSettings } from "../../fixtures/fleet-hosts.js";
import { mockModel } from "../../fixtures/models.mjs";
import { freePort, startRedis, type TestRedis } from "../../fixtures/redis-server.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));
const LEASE_MS = 1000;

const cleanups: (() => Promise<void> | void)[] = [];
let redis: TestRedis;
let mock: Awaited<ReturnType<typeof startMockServer>>;
let lifelineDir: string;

beforeAll(async () => {
  redis = await startRedis();
  mock = await startMockServer({ script: { tokenDelayMs: 5 } });
  lifelineDir = tempDir(cleanups, "lifeline-fleet-queue-");
  const model = mockModel(mock.port);
  writeFleetSettings(lifelineDir, {
    redisUrl: redis.url,
    leaseMs: LEASE_MS,
    models: {
      providers: {
        mock: {
          baseUrl: model.baseUrl,
          api: "openai-completions",
          apiKey: "dummy",
          compat: model.compat,
          models: [{ id: "mock-1" }],
        },
      },
    },
  });
}, 30_000);
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await mock?.close();
  await redis?.dispose();
}, 60_000);

function serve(name: string): ServeChild {
  const host = startServe({ redisUrl: redis.url, name, lifelineDir, cwd: lifelineDir });
  cleanups.push(async () => {
    if (host.child.exitCode === null && host.child.signalCode === null) host.child.kill("SIGKILL");
    await host.exited;
  });
  return host;
}

async function client(name: string): Promise<FleetClient> {
  const connected = await FleetClient.connect({ fleet: { redis: redis.url, name, leaseMs: LEASE_MS } });
  cleanups.push(() => connected.close());
  return connected;
}

/** The pids of the hosts that took a job, from its events. */
async function takenBy(events: AsyncGenerator<FleetEvent>): Promise<number[]> {
  const pids: number[] = [];
  for await (const event of events) {
    if (event.type === "job_taken") pids.push(Number(event.host.split("/").at(-1)));
  }
  return pids;
}

describe("a fleet's queue of prompts", () => {
  it("a session continued on another host has the transcript one host produces, turn by turn", async () => {
    const fleet = await client("continued");
    const first = serve("continued");
    await first.ready;
    const ask = async (text: string, sessionId: string, c = fleet) => {
      const handle = await c.submit(text, { sessionId, model: "mock/mock-1" });
      const pids = takenBy(handle.events());
      const result = await within(handle.result(), 30_000, `the result of "${text}"`);
      expect(result.stopReason).toBe("stop");
      return { result, pids: await within(pids, 30_000, "the events") };
    };
    expect((await ask("first question", "moved")).pids).toEqual([first.pid]);
    expect((await ask("second question", "moved")).pids).toEqual([first.pid]);
    first.child.kill("SIGTERM");
    expect(await within(first.exited, 30_000, "host A to stop")).toBe(0);
    const second = serve("continued");
    await second.ready;
    expect((await ask("third question", "moved")).pids).toEqual([second.pid]);

    // The same three prompts to one session of a single host, in a fleet of its own.
    const alone = await client("alone");
    serve("alone");
    for (const text of ["first question", "second question", "third question"]) {
      await ask(text, "still", alone);
    }
    const moved = await fleetTranscript(redis.url, "continued", lifelineDir, "moved");
    const still = await fleetTranscript(redis.url, "alone", lifelineDir, "still");
    expect(moved).toHaveLength(6);
    expect(moved).toEqual(still);
  }, 120_000);

  it("two fleets on one Redis never see each other's jobs", async () => {
    const blue = await client("blue");
    const green = await client("green");
    const blueHost = serve("blue");
    await blueHost.ready;
    const greenJob = await green.submit("for green", { model: "mock/mock-1" });
    const blueJob = await blue.submit("for blue", { model: "mock/mock-1" });
    const bluePids = takenBy(blueJob.events());
    await within(blueJob.result(), 30_000, "blue's result");
    expect(await bluePids).toEqual([blueHost.pid]);
    // Blue's host is idle and green's job still waits: no host of green is running.
    await expect(green.result(greenJob.jobId, { timeoutMs: 1000 })).rejects.toMatchObject({
      code: "ERR_FLEET_TIMEOUT",
    });
    const greenHost = serve("green");
    const greenPids = takenBy(greenJob.events());
    expect((await within(greenJob.result(), 30_000, "green's result")).stopReason).toBe("stop");
    expect(await greenPids).toEqual([greenHost.pid]);
  }, 120_000);

  it("a re-submit with the same job id adds nothing and resolves to the first result", async () => {
    const fleet = await client("again");
    serve("again");
    const first = await fleet.submit("only once", { sessionId: "once", jobId: "job-once", model: "mock/mock-1" });
    const result = await within(first.result(), 30_000, "the first result");
    const again = await fleet.submit("only once", { sessionId: "once", jobId: "job-once", model: "mock/mock-1" });
    expect(await within(again.result(), 30_000, "the second result")).toEqual(result);
    const transcript = await fleetTranscript(redis.url, "again", lifelineDir, "once");
    expect(transcript.filter((line) => line.startsWith("user:"))).toEqual(["user:only once"]);
  }, 60_000);

  it.each([
    ["stopped (SIGTERM) and restarted at once", "stop", 0],
    ["killed (SIGKILL) and away for twice the lease", "kill", 2 * LEASE_MS],
  ] as const)(
    "Redis %s mid-run: no job is lost and every prompt resolves once",
    async (_how, end, awayMs) => {
      const name = `restart-${end}`;
      const fleet = await client(name);
      serve(name);
      serve(name);
      const sessions = ["r1", "r2", "r3"];
      const handles = [];
      for (const round of [1, 2]) {
        for (const sessionId of sessions) {
          handles.push(await fleet.submit(`round ${round} of ${sessionId}`, { sessionId, model: "mock/mock-1" }));
        }
      }
      const results = handles.map((handle) => handle.result({ timeoutMs: 90_000 }));
      // Once the first prompt is in flight somewhere, Redis goes away, then comes back. The fixture's
      // AOF is `appendfsync always`, so even a kill loses nothing Redis acknowledged. Away for longer
      // than the lease, session leases and job locks lapse meanwhile and are taken again.
      await within(
        mock.waitForRequestEnd(() => true, 30_000),
        30_000,
        "a first model request",
      );
      await (end === "kill" ? redis.kill() : redis.stop());
      if (awayMs > 0) await new Promise((resolve) => setTimeout(resolve, awayMs));
      await redis.start();
      const outcomes = await within(Promise.all(results), 90_000, "every result");
      expect(outcomes.map((outcome) => outcome.stopReason)).toEqual(handles.map(() => "stop"));
      for (const sessionId of sessions) {
        const transcript = await fleetTranscript(redis.url, name, lifelineDir, sessionId);
        const users = transcript.filter((line) => line.startsWith("user:"));
        expect(users.sort()).toEqual([`user:round 1 of ${sessionId}`, `user:round 2 of ${sessionId}`]);
        // Each prompt's last reply is its answer: no turn missing, none doubled.
        expect(transcript.filter((line) => line.startsWith("assistant(stop)")).length, transcript.join("\n")).toBe(2);
      }
    },
    180_000,
  );

  it("a submit while Redis is down fails fast with ERR_FLEET_UNAVAILABLE, or waits up to waitMs and goes through", async () => {
    const fleet = await client("down");
    serve("down");
    await redis.stop();
    try {
      const error = await within(
        fleet.submit("nobody hears", { model: "mock/mock-1" }).catch((e: unknown) => e),
        5000,
        "the refusal",
      );
      expect(error).toMatchObject({ code: "ERR_FLEET_UNAVAILABLE" });
      const waiting = fleet.submit("heard later", { model: "mock/mock-1", waitMs: 30_000 });
      await redis.start();
      const handle = await within(waiting, 30_000, "the waiting submit");
      expect((await within(handle.result(), 60_000, "its result")).stopReason).toBe("stop");
    } finally {
      await redis.start().catch(() => {});
    }
  }, 120_000);

  it("lifeline submit against a Redis nobody runs exits 1 with ERR_FLEET_UNAVAILABLE as a JSON line", async () => {
    const port = await freePort();
    const run = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI, "submit", "--fleet", `redis://127.0.0.1:${port}`, "hello"], {
        cwd: lifelineDir,
        env: { ...process.env, LIFELINE_DIR: lifelineDir },
        stdio: ["ignore", "pipe", "ignore"],
      });
      let stdout = "";
      child.stdout?.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout });
      });
    });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout.trim())).toMatchObject({ type: "error", code: "ERR_FLEET_UNAVAILABLE" });
  }, 30_000);
});
