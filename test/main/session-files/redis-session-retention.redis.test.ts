/**
 * Sessions do not pile up in the fleet's Redis (docs/fleet.md, "Retention"), on a real
 * redis-server: with `fleet.sessionTtlMs`, an idle session's keys expire and nothing of it is left
 * (SCAN), Redis's `used_memory` comes back to what it was before; an open session does not expire
 * while its lease is renewed; expired sessions leave the listing indexes (swept when sessions are
 * created); a session made again under an expired id does not let a
 * stalled writer of the old one in; `delete` removes every key of a session and refuses a held one.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { connectFleet, type FleetConnection } from "../../../src/main/redis/fleet-connection.js";
import { RedisSessionStore } from "../../../src/main/session-files/redis-session-store.js";
import type { SessionEntry, SessionHeader } from "../../../src/main/session-files/session-format.js";
import { parseSettings } from "../../../src/shared/settings/settings.js";
import { redisForFile } from "../../fixtures/redis-server.js";

const file = redisForFile();
const { cleanups } = file;

async function connect(
  name: string,
  fleet: { leaseMs?: number; sessionTtlMs?: number } = {},
): Promise<FleetConnection> {
  const settings = parseSettings({ fleet: { redis: file.redis.url, name, ...fleet } }, "test").fleet;
  if (settings === undefined) throw new Error("no fleet settings");
  const connection = await connectFleet(settings);
  cleanups.push(() => connection.close());
  return connection;
}

function header(id: string, cwd = "/work/project"): SessionHeader {
  return { type: "session", version: 3, id, timestamp: "2026-12-07T03:31:18.296Z", cwd };
}

/** A user message and its answer, `size` characters each. */
function exchange(n: number, size: number): SessionEntry[] {
  const text = "x".repeat(size);
  return (["user", "assistant"] as const).map((role, index) => ({
    type: "message",
    id: `${n.toString(16).padStart(6, "0")}0${index}`,
    parentId: null,
    timestamp: "2026-12-07T03:31:19.000Z",
    message: { role, content: [{ type: "text", text }], timestamp: 1 } as never,
  }));
}

/** Every key under `pattern`, by SCAN (which also lets Redis expire the keys it visits). */
async function scan(connection: FleetConnection, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await connection.redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return keys;
}

async function usedMemory(connection: FleetConnection): Promise<number> {
  const info = await connection.redis.info("memory");
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
}

/** Polls `check` every 100 ms until it holds, for at most `ms`; answers whether it did. */
async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
}

function code(error: unknown): unknown {
  return (error as { code?: unknown }).code;
}

describe("fleet.sessionTtlMs: idle sessions expire", () => {
  it("leaves no key of 400 expired sessions and gives back their memory (used_memory within 10 %)", async () => {
    const name = file.fleetName("ttl");
    // A TTL that outlasts making the sessions on a loaded machine, so all 400 are there at once.
    const connection = await connect(name, { leaseMs: 500, sessionTtlMs: 4000 });
    const store = new RedisSessionStore(connection);
    // Load the scripts and settle the connection's buffers before measuring.
    const warm = await store.create(header("warm-up"));
    await warm.append(exchange(0, 10));
    await warm.close();
    await store.delete("warm-up", "/work/project");
    const before = await usedMemory(connection);

    for (let n = 0; n < 400; n += 20) {
      await Promise.all(
        Array.from({ length: 20 }, async (_, k) => {
          const writer = await store.create(header(`s-${n + k}`, `/work/dir-${(n + k) % 7}`));
          await writer.append([...exchange(1, 400), ...exchange(2, 400)]);
          await writer.close();
        }),
      );
    }
    const during = await usedMemory(connection);
    expect(await scan(connection, `${connection.prefix}session:*`)).toHaveLength(1200);
    expect(during - before, "the sessions took memory").toBeGreaterThan(400 * 1600);
    expect((await store.list(undefined)).length).toBeGreaterThan(0);

    const gone = await eventually(async () => (await scan(connection, `${connection.prefix}*`)).length === 0, 15_000);
    expect(gone, `keys left: ${(await scan(connection, `${connection.prefix}*`)).slice(0, 10).join(", ")}`).toBe(true);
    expect(await store.list(undefined)).toEqual([]);
    const after = await usedMemory(connection);
    expect(
      Math.abs(after - before) / before,
      `used_memory ${before} before, ${during} with the sessions, ${after} after`,
    ).toBeLessThan(0.1);
  });

  it("keeps a session open past its TTL while its lease is renewed, and lets it expire once closed", async () => {
    const connection = await connect(file.fleetName("ttl"), { leaseMs: 500, sessionTtlMs: 1000 });
    const store = new RedisSessionStore(connection);
    const writer = await store.create(header("s-open"));
    cleanups.push(() => writer.close());
    await writer.append(exchange(1, 20));
    await sleep(2500);
    const entries = connection.key("session", "s-open", "entries");
    expect(await connection.redis.exists(entries)).toBe(1);
    await writer.append(exchange(2, 20));
    expect((await store.list(undefined)).map((info) => info.id)).toEqual(["s-open"]);
    await writer.close();
    expect(await eventually(async () => (await scan(connection, `${connection.prefix}*`)).length === 0, 5000)).toBe(
      true,
    );
  });

  it("sweeps expired sessions out of the listing indexes while the fleet stays busy", async () => {
    const ttl = 3000;
    const connection = await connect(file.fleetName("ttl"), { leaseMs: 500, sessionTtlMs: ttl });
    const store = new RedisSessionStore(connection);
    await Promise.all(
      Array.from({ length: 150 }, async (_, n) =>
        (await store.create(header(`old-${n}`, `/work/dir-${n % 3}`))).close(),
      ),
    );
    // One session stays open (renewed), which keeps the index keys alive past the others' deadline.
    const busy = await store.create(header("busy", "/work/dir-0"));
    cleanups.push(() => busy.close());
    await sleep(ttl + 500);
    const all = connection.key("sessions", "all");
    expect(await connection.redis.zcard(all)).toBe(151);
    // Creating a session sweeps a hundred expired ones at a time.
    for (const id of ["new-1", "new-2"]) await (await store.create(header(id, "/work/dir-1"))).close();
    expect(await connection.redis.zrange(all, "0", "-1")).toEqual(expect.arrayContaining(["busy", "new-1", "new-2"]));
    expect(await connection.redis.zcard(all)).toBe(3);
    expect(await connection.redis.zcard(connection.key("sessions", "ids"))).toBe(3);
    expect(await connection.redis.zrange(connection.key("sessions", "cwd", "/work/dir-2"), "0", "-1")).toEqual([]);
    expect(await scan(connection, `${connection.prefix}session:old-*`)).toEqual([]);
    expect((await store.list("/work/dir-1")).map((info) => info.id).sort()).toEqual(["new-1", "new-2"]);
  });

  it("starts a session made again under an expired id above its old fencing tokens, so a stalled writer of the old one stays out", async () => {
    const connection = await connect(file.fleetName("ttl"));
    const store = new RedisSessionStore(connection);
    const stalled = await store.create(header("s-again"));
    // What Redis does at the deadline of a session whose writer stalled past its lease and TTL.
    await connection.redis.del(
      ...["entries", "info", "fence", "lock"].map((part) => connection.key("session", "s-again", part)),
    );
    await sleep(5);
    const again = await store.create(header("s-again"));
    await expect(stalled.append(exchange(1, 20))).rejects.toMatchObject({ code: "ERR_SESSION_LOCKED" });
    await again.append(exchange(2, 20));
    await again.close();
    await stalled.close();
    const stored = await store.read("s-again", "/work/project");
    expect(stored.entries.map((entry) => entry.id)).toEqual(exchange(2, 20).map((entry) => entry.id));
  });

  it("sets no TTL with sessionTtlMs 0, and takes away the one a session had when written again", async () => {
    const name = file.fleetName("ttl");
    const expiring = new RedisSessionStore(await connect(name, { leaseMs: 500, sessionTtlMs: 60_000 }));
    const keeping = await connect(name, { sessionTtlMs: 0 });
    const kept = new RedisSessionStore(keeping);
    await (await expiring.create(header("s-was-expiring"))).close();
    await (await kept.create(header("s-kept"))).close();
    const ttl = (id: string, part: string) => keeping.redis.pttl(keeping.key("session", id, part));
    expect(await ttl("s-kept", "entries")).toBe(-1);
    expect(await ttl("s-was-expiring", "entries")).toBeGreaterThan(0);
    await (await kept.open("s-was-expiring", "/work/project")).writer.close();
    for (const part of ["entries", "info", "fence"]) expect(await ttl("s-was-expiring", part)).toBe(-1);
    expect(await keeping.redis.pttl(keeping.key("sessions", "all"))).toBe(-1);
    expect(await keeping.redis.zcard(keeping.key("sessions", "expiry"))).toBe(0);
  });

  it("refuses a TTL shorter than the lease when joining", async () => {
    const settings = parseSettings(
      { fleet: { redis: file.redis.url, name: "short", leaseMs: 5000, sessionTtlMs: 2000 } },
      "test",
    ).fleet;
    if (settings === undefined) throw new Error("no fleet settings");
    const refused = await connectFleet(settings).catch((error: unknown) => error);
    expect(refused).toMatchObject({
      code: "ERR_INVALID_SETTINGS",
      message: expect.stringContaining("fleet.sessionTtlMs"),
    });
  });
});

describe("deleting a session in the fleet", () => {
  it("removes every key of it and it from every index; refuses one whose lease is held", async () => {
    const connection = await connect(file.fleetName("del"));
    const store = new RedisSessionStore(connection);
    const writer = await store.create(header("s-gone", "/work/a"));
    await writer.append(exchange(1, 20));
    const held = await store.create(header("s-held", "/work/a"));
    cleanups.push(() => held.close());
    expect(code(await store.delete("s-held", "/work/a").catch((e: unknown) => e))).toBe("ERR_SESSION_LOCKED");
    await writer.close();
    const info = await store.delete("s-go", "/work/a");
    expect(info).toMatchObject({ id: "s-gone", cwd: "/work/a", messageCount: 2 });
    expect(await scan(connection, `${connection.prefix}session:s-gone:*`)).toEqual([]);
    for (const index of [["all"], ["ids"], ["cwd", "/work/a"], ["expiry"]]) {
      const members = await connection.redis.zrange(connection.key("sessions", ...index), "0", "-1");
      expect(
        members.some((member) => member.endsWith("s-gone")),
        index.join(":"),
      ).toBe(false);
    }
    expect(code(await store.delete("s-gone", "/work/a").catch((e: unknown) => e))).toBe("ERR_SESSION_NOT_FOUND");
    expect((await store.list(undefined)).map((each) => each.id)).toEqual(["s-held"]);
    expect(await scan(connection, `${connection.prefix}session:s-held:*`)).toHaveLength(4);
  });
});
