import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectFleet, type FleetConnection } from "../../../src/main/redis/fleet-connection.js";
import { parseSettings } from "../../../src/shared/settings/settings.js";
import { freePort, startRedis, type TestRedis } from "../../fixtures/redis-server.js";

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.dispose();
});

function fleet(url: string, name = "t") {
  const settings = parseSettings({ fleet: { redis: url, name } }, "test").fleet;
  if (settings === undefined) throw new Error("no fleet settings");
  return settings;
}

describe("connecting to the fleet's Redis", () => {
  it("connects, prefixes its keys with the fleet name and reports up and down as Redis stops and returns", async () => {
    const connection: FleetConnection = await connectFleet(fleet(redis.url, "alpha"));
    try {
      expect(connection.key("gate", "x")).toBe("lifeline:alpha:gate:x");
      expect(connection.warnings).toEqual([]);
      expect(await connection.redis.ping()).toBe("PONG");
      const down = new Promise<void>((resolve) => connection.once("down", () => resolve()));
      await redis.stop();
      await down;
      expect(connection.available).toBe(false);
      // No offline queue: a command while Redis is away fails at once instead of waiting.
      const started = Date.now();
      await expect(connection.redis.ping()).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(1000);
      const up = new Promise<void>((resolve) => connection.once("up", () => resolve()));
      await redis.start();
      await up;
      expect(await connection.redis.ping()).toBe("PONG");
    } finally {
      await connection.close();
    }
  });

  it("refuses an unreachable Redis with ERR_FLEET_UNAVAILABLE naming the URL without its password, within the timeout", async () => {
    const port = await freePort();
    const started = Date.now();
    const error = await connectFleet(fleet(`redis://user:secret@127.0.0.1:${port}`), { timeoutMs: 500 }).catch(
      (e) => e,
    );
    expect(Date.now() - started).toBeLessThan(2000);
    expect(error.code).toBe("ERR_FLEET_UNAVAILABLE");
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(error.message).toContain("fleet.redis");
    expect(error.message).not.toContain("secret");
  });

  it("refuses a Redis that may evict keys with ERR_INVALID_SETTINGS naming fleet.redis and the fix", async () => {
    const evicting = await startRedis(["--maxmemory-policy", "allkeys-lru"]);
    try {
      const error = await connectFleet(fleet(evicting.url)).catch((e) => e);
      expect(error.code).toBe("ERR_INVALID_SETTINGS");
      expect(error.message).toContain("fleet.redis");
      expect(error.message).toContain("allkeys-lru");
      expect(error.message).toContain("noeviction");
    } finally {
      await evicting.dispose();
    }
  });

  it("warns when AOF is off: a Redis restart could lose queued prompts", async () => {
    const volatile = await startRedis(["--appendonly", "no"]);
    try {
      const connection = await connectFleet(fleet(volatile.url));
      expect(connection.warnings.join("\n")).toContain("AOF");
      await connection.close();
    } finally {
      await volatile.dispose();
    }
  });
});

describe("fleet settings", () => {
  it.each([
    [{ redis: "http://127.0.0.1:6379" }, "fleet.redis"],
    [{ redis: "not a url" }, "fleet.redis"],
    [{ redis: "redis://127.0.0.1:6379", name: "has space" }, "fleet.name"],
    [{ redis: "redis://127.0.0.1:6379", name: 7 }, "fleet.name"],
    [{ redis: "redis://127.0.0.1:6379", leaseMs: 10 }, "fleet.leaseMs"],
    [{ redis: "redis://127.0.0.1:6379", prefix: "x" }, "fleet"],
  ])("refuses %j with ERR_INVALID_SETTINGS naming %s", (value, key) => {
    let error: unknown;
    try {
      parseSettings({ fleet: value }, "test");
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: "ERR_INVALID_SETTINGS" });
    expect(String((error as Error).message)).toContain(`${key}:`);
  });

  it("takes the defaults: fleet name 'default', leases of 10 s, sessions kept 30 idle days", () => {
    expect(parseSettings({ fleet: { redis: "redis://127.0.0.1:6379" } }, "test").fleet).toEqual({
      redis: "redis://127.0.0.1:6379",
      name: "default",
      leaseMs: 10_000,
      sessionTtlMs: 30 * 86_400_000,
    });
  });
});
