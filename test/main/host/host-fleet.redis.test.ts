/**
 * A host in a fleet connects to the fleet's Redis with its first session and keeps its persisted
 * sessions there, and an unreachable Redis fails that session's open with ERR_FLEET_UNAVAILABLE at
 * once instead of hanging; a host with no fleet settings never connects. The built package on a real worker pool.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionHost } from "../../../dist/main/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { freePort, startRedis, type TestRedis } from "../../fixtures/redis-server.js";

const cleanups: (() => Promise<void> | void)[] = [];
let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await redis?.dispose();
});

/** Every session file (`*.jsonl`) under `dir`, however deep. */
async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith(".jsonl")).map((e) => join(e.parentPath, e.name));
}

function fleetHost(url: string, dir = tempDir(cleanups, "lifeline-host-fleet-")) {
  const host = createSessionHost({
    lifelineDir: dir,
    cwd: dir,
    // Persisted without a place of its own: in a fleet, kept in the fleet's Redis (docs/fleet.md).
    sessions: {},
    settings: { fleet: { redis: url, name: "hostfleet" } },
  });
  cleanups.push(() => host.close());
  return host;
}

describe("a host in a fleet", () => {
  it("opens sessions once its Redis answers, runs them, and keeps them in the fleet's Redis, not in files", async () => {
    const dir = tempDir(cleanups, "lifeline-host-fleet-");
    const host = fleetHost(redis.url, dir);
    const session = await within(host.createSession({ model: "demo/demo-fast" }), 10_000, "the session");
    const result = await within(session.prompt("hello"), 10_000, "the prompt");
    expect(result.message?.stopReason).toBe("stop");
    await session.flushSession();
    // What the fleet changed: the session lives under the fleet's prefix in its Redis, where any
    // host of the fleet finds it, with the prompt and its answer; the host wrote no session file.
    expect(session.sessionFile).toBe(`lifeline:hostfleet:session:${session.id}`);
    const client = new Redis(redis.url);
    cleanups.push(() => client.disconnect());
    expect(await client.zscore("lifeline:hostfleet:sessions:all", session.id)).not.toBeNull();
    const entries = (await client.lrange(`lifeline:hostfleet:session:${session.id}:entries`, 0, -1)).map(
      (line) => JSON.parse(line) as { type: string; message?: { role: string } },
    );
    expect(entries[0]).toMatchObject({ type: "session", id: session.id });
    expect(entries.flatMap((entry) => (entry.type === "message" ? [entry.message?.role] : []))).toEqual([
      "user",
      "assistant",
    ]);
    expect(await listFiles(dir)).toEqual([]);
    // Another host of the fleet, with a folder of its own, finds it.
    const other = fleetHost(redis.url);
    expect((await other.listSessions({ cwd: dir })).map((info) => info.id)).toContain(session.id);
  });

  it("fails the first session with ERR_FLEET_UNAVAILABLE when Redis does not answer, and stays usable", async () => {
    const host = fleetHost(`redis://127.0.0.1:${await freePort()}`);
    const error = await within(
      host.createSession().catch((e: unknown) => e),
      10_000,
      "the refusal",
    );
    expect(error).toMatchObject({ code: "ERR_FLEET_UNAVAILABLE" });
    await expect(within(host.createSession(), 10_000, "the second refusal")).rejects.toMatchObject({
      code: "ERR_FLEET_UNAVAILABLE",
    });
  });
});
