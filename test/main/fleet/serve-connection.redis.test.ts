/**
 * A serving host holds one fleet connection, its host's: `serveFleet` shares the connection the
 * host makes for its sessions, coordination and session store instead of opening its own beside
 * it. Seen from outside: Redis's connection check runs once, so a Redis with AOF off is warned
 * about once (it was warned about twice when the server opened a second connection).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveFleet } from "../../../dist/main/fleet/index.js";
import { tempDir } from "../../fixtures/bounded.js";
import { startRedis, type TestRedis } from "../../fixtures/redis-server.js";

const cleanups: (() => Promise<void> | void)[] = [];
let redis: TestRedis;

beforeAll(async () => {
  // The fixture's Redis with AOF turned off again: the one check that warns.
  redis = await startRedis(["--appendonly", "no"]);
}, 30_000);
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await redis?.dispose();
}, 30_000);

describe("serveFleet's connection", () => {
  it("shares its host's fleet connection: the AOF-off warning is emitted once, and close() releases it", async () => {
    const dir = tempDir(cleanups, "lifeline-serve-connection-");
    const warnings: string[] = [];
    const onWarning = (warning: Error & { code?: string }) => {
      if (warning.code === "LIFELINE_FLEET") warnings.push(warning.message);
    };
    process.on("warning", onWarning);
    cleanups.push(() => {
      process.off("warning", onWarning);
    });
    const server = await serveFleet(
      { cwd: dir, lifelineDir: dir, settings: { fleet: { redis: redis.url, name: `conn${process.pid}` } } },
      { concurrency: 1 },
    );
    const connection = await server.host.fleetConnection();
    expect(connection).toBeDefined();
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.filter((warning) => warning.includes("AOF off"))).toHaveLength(1);
    await server.close();
    // The host closed the connection it shared: its commands fail now.
    await expect(connection?.redis.ping()).rejects.toThrow();
  }, 30_000);
});
