/**
 * SPEC B7 in fleet mode: the Redis session store keeps the file store's guarantees on a real
 * redis-server: pi's v3 lines in append order (an export is the file store's file byte for byte),
 * appends acknowledged by Redis before they resolve, listing and lookup by id or prefix, damaged
 * records skipped, and one writer per session in the whole fleet (a lease with a fencing token).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { connectFleet, type FleetConnection } from "../../../src/main/redis/fleet-connection.js";
import { FileSessionStore } from "../../../src/main/session-files/file-session-store.js";
import { RedisSessionStore } from "../../../src/main/session-files/redis-session-store.js";
import {
  type SessionEntry,
  type SessionHeader,
  serializeLine,
} from "../../../src/main/session-files/session-format.js";
import { parseSettings } from "../../../src/shared/settings/settings.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { redisForFile } from "../../fixtures/redis-server.js";

const file = redisForFile();
const { cleanups } = file;

/** A fresh fleet name per test, so tests never see each other's sessions. */
function fleetName(): string {
  return file.fleetName("store");
}

async function connect(name: string, leaseMs = 10_000): Promise<FleetConnection> {
  const settings = parseSettings({ fleet: { redis: file.redis.url, name, leaseMs } }, "test").fleet;
  if (settings === undefined) throw new Error("no fleet settings");
  const connection = await connectFleet(settings);
  cleanups.push(() => connection.close());
  return connection;
}

function header(id: string, cwd = "/work/project"): SessionHeader {
  return { type: "session", version: 3, id, timestamp: "2026-12-01T03:31:18.296Z", cwd };
}

let entryCounter = 0;

/** An entry linked to `parent`. */
function message(parent: string | null, role: "user" | "assistant", text: string, extra: object = {}): SessionEntry {
  const id = (++entryCounter).toString(16).padStart(8, "0");
  return {
    type: "message",
    id,
    parentId: parent,
    timestamp: "2026-12-01T03:31:19.000Z",
    message: { role, content: [{ type: "text", text }], timestamp: 1, ...extra } as never,
  };
}

function turn(): SessionEntry[] {
  const model: SessionEntry = {
    type: "model_change",
    id: "m0000001",
    parentId: null,
    timestamp: "2026-12-01T03:31:18.300Z",
    provider: "demo",
    modelId: "demo-1",
  };
  const user = message(model.id, "user", "hello");
  const failed = message(user.id, "assistant", "", { stopReason: "error", errorMessage: "503 Service Unavailable" });
  const answer = message(failed.id, "assistant", "hi there", { stopReason: "stop" });
  return [model, user, failed, answer];
}

function code(error: unknown): unknown {
  return (error as { code?: unknown }).code;
}

describe("the Redis session store (B7 in a fleet)", () => {
  it("stores the header and entries in append order, so an export is the file store's file byte for byte", async () => {
    const connection = await connect(fleetName());
    const store = new RedisSessionStore(connection);
    const files = new FileSessionStore({ root: tempDir(cleanups) });
    const [model, user, failed, answer] = turn() as [SessionEntry, SessionEntry, SessionEntry, SessionEntry];

    for (const target of [store, files]) {
      const writer = await target.create(header("s-export"));
      const lazy = writer.append([model], { lazy: true });
      await writer.append([user]);
      await lazy;
      void writer.append([failed], { lazy: true });
      void writer.append([answer], { lazy: true });
      await writer.close();
    }

    const stored = await store.read("s-export", "/work/project");
    const exported = [stored.header, ...stored.entries].map(serializeLine).join("");
    const file = (await files.list(undefined))[0]?.path ?? "";
    expect(exported).toBe(readFileSync(file, "utf8"));
    const raw = await connection.redis.lrange(connection.key("session", "s-export", "entries"), 0, -1);
    expect(raw.map((line) => `${line}\n`).join("")).toBe(exported);
    expect(stored.warnings).toEqual([]);
  });

  it("resolves an append only once Redis holds it, and stores lazy appends with the next write-ahead, in call order", async () => {
    const connection = await connect(fleetName());
    const store = new RedisSessionStore(connection);
    const other = await connect(connection.settings.name);
    const key = connection.key("session", "s-ahead", "entries");
    const writer = await store.create(header("s-ahead"));
    cleanups.push(() => writer.close());
    const [model, user] = turn() as [SessionEntry, SessionEntry];
    const lazy = writer.append([model], { lazy: true });
    const ahead = writer.append([user]);
    await ahead;
    // Read through another connection: what the write-ahead's promise promised is in Redis.
    const lines = (await other.redis.lrange(key, 0, -1)).map((line) => JSON.parse(line) as { id: string });
    expect(lines.map((line) => line.id)).toEqual(["s-ahead", model.id, user.id]);
    await lazy;
  });

  it("keeps failed attempts and reports list fields as the file store does, most recent first", async () => {
    const connection = await connect(fleetName());
    const store = new RedisSessionStore(connection);
    const files = new FileSessionStore({ root: tempDir(cleanups) });
    const named: SessionEntry = {
      type: "session_info",
      id: "i0000001",
      parentId: null,
      timestamp: "t",
      name: "Refactor",
    };
    for (const target of [store, files]) {
      const first = await target.create(header("s-older"));
      await first.append(turn());
      await first.close();
      const second = await target.create(header("s-newer"));
      await second.append([...turn(), named]);
      await second.close();
      const elsewhere = await target.create(header("s-elsewhere", "/work/other"));
      await elsewhere.close();
    }
    const inRedis = await store.list("/work/project");
    const inFiles = await files.list("/work/project");
    const fields = ({ id, cwd, created, messageCount, firstMessage, name }: (typeof inRedis)[number]) => ({
      id,
      cwd,
      created,
      messageCount,
      firstMessage,
      name,
    });
    expect(inRedis.map((info) => info.id)).toEqual(["s-newer", "s-older"]);
    const inFilesById = new Map(inFiles.map((info) => [info.id, fields(info)]));
    expect(inRedis.map(fields)).toEqual(inRedis.map((info) => inFilesById.get(info.id)));
    expect(inRedis[0]).toMatchObject({ messageCount: 3, firstMessage: "hello", name: "Refactor" });
    expect(inRedis[0]?.modified.getTime()).toBeGreaterThanOrEqual(inRedis[1]?.modified.getTime() ?? Infinity);
    expect((await store.list(undefined)).map((info) => info.id).sort()).toEqual(["s-elsewhere", "s-newer", "s-older"]);
    const failed = (await store.read("s-older", "/work/project")).entries.filter(
      (entry) => entry.type === "message" && (entry.message as { stopReason?: string }).stopReason === "error",
    );
    expect(failed).toHaveLength(1);
  });

  it("opens by id, unique prefix (this cwd first) or its own path; refuses an ambiguous prefix and an unknown id", async () => {
    const connection = await connect(fleetName());
    const store = new RedisSessionStore(connection);
    for (const [id, cwd] of [
      ["abc-1", "/p"],
      ["abc-2", "/p"],
      ["abd-1", "/p"],
      ["abd-2", "/q"],
    ] as const) {
      await (await store.create(header(id, cwd))).close();
    }
    const byPrefix = await store.open("abd", "/p");
    expect(byPrefix.header.id).toBe("abd-1");
    expect(byPrefix.writer.path).toBe(connection.key("session", "abd-1"));
    await byPrefix.writer.close();
    const byPath = await store.open(connection.key("session", "abc-2"), "/elsewhere");
    expect(byPath.header.id).toBe("abc-2");
    await byPath.writer.close();
    expect(code(await store.open("abc", "/p").catch((e: unknown) => e))).toBe("ERR_INVALID_OPTIONS");
    expect(code(await store.open("abd", "/r").catch((e: unknown) => e))).toBe("ERR_INVALID_OPTIONS");
    expect(code(await store.open("zzz", "/p").catch((e: unknown) => e))).toBe("ERR_SESSION_NOT_FOUND");
    expect(code(await store.open("some/file.jsonl", "/p").catch((e: unknown) => e))).toBe("ERR_SESSION_NOT_FOUND");
  });

  it("skips a damaged record with a warning and goes on appending after it", async () => {
    const connection = await connect(fleetName());
    const store = new RedisSessionStore(connection);
    const writer = await store.create(header("s-damaged"));
    const [model, user, failed, answer] = turn() as [SessionEntry, SessionEntry, SessionEntry, SessionEntry];
    await writer.append([model, user]);
    await writer.close();
    await connection.redis.rpush(connection.key("session", "s-damaged", "entries"), '{"type":"message","id":');
    const opened = await store.open("s-damaged", "/work/project");
    expect(opened.entries.map((entry) => entry.id)).toEqual([model.id, user.id]);
    expect(opened.warnings).toHaveLength(1);
    expect(opened.warnings[0]).toContain(":4: skipped a line that is not a JSON object");
    await opened.writer.append([failed, answer]);
    await opened.writer.close();
    const again = await store.read("s-damaged", "/work/project");
    expect(again.entries.map((entry) => entry.id)).toEqual([model.id, user.id, failed.id, answer.id]);
  });

  it("refuses a record that is not a session header with ERR_SESSION_FILE, and leaves the session unlocked", async () => {
    const connection = await connect(fleetName());
    const store = new RedisSessionStore(connection);
    await (await store.create(header("s-headless"))).close();
    await connection.redis.lset(connection.key("session", "s-headless", "entries"), 0, '{"type":"message"}');
    expect(code(await store.open("s-headless", "/work/project").catch((e: unknown) => e))).toBe("ERR_SESSION_FILE");
    expect(await connection.redis.exists(connection.key("session", "s-headless", "lock"))).toBe(0);
  });
});

describe("the fleet-wide session lock", () => {
  it("refuses a second writer while the lease is held, saying how long it has left", async () => {
    const connection = await connect(fleetName(), 5000);
    const store = new RedisSessionStore(connection);
    const other = new RedisSessionStore(await connect(connection.settings.name, 5000));
    const writer = await store.create(header("s-held"));
    cleanups.push(() => writer.close());
    const refusal = (await other.open("s-held", "/work/project").catch((e: unknown) => e)) as {
      code: string;
      retryAfterMs: number;
    };
    expect(refusal.code).toBe("ERR_SESSION_LOCKED");
    expect(refusal.retryAfterMs).toBeGreaterThan(0);
    expect(refusal.retryAfterMs).toBeLessThanOrEqual(5000);
    expect(code(await other.create(header("s-held")).catch((e: unknown) => e))).toBe("ERR_SESSION_LOCKED");
    expect(code(await store.create(header("s-held")).catch((e: unknown) => e))).toBe("ERR_SESSION_LOCKED");
  });

  it("releases the lock at once on close: another host opens the session right away", async () => {
    const connection = await connect(fleetName());
    const store = new RedisSessionStore(connection);
    const other = new RedisSessionStore(await connect(connection.settings.name));
    const writer = await store.create(header("s-closed"));
    await writer.append(turn());
    await writer.close();
    const opened = await other.open("s-closed", "/work/project");
    expect(opened.entries).toHaveLength(4);
    await opened.writer.close();
  });

  it("fences a writer once another host took the session: its appends reject with ERR_SESSION_LOCKED and nothing of it lands after the takeover", async () => {
    const connection = await connect(fleetName(), 600);
    const store = new RedisSessionStore(connection);
    const other = new RedisSessionStore(await connect(connection.settings.name, 600));
    const writer = await store.create(header("s-fenced"));
    const [model, user, failed, answer] = turn() as [SessionEntry, SessionEntry, SessionEntry, SessionEntry];
    await writer.append([model, user]);
    // The lease lapsing, as when the holder stalls past it (the SIGSTOP test does it for real).
    await connection.redis.del(connection.key("session", "s-fenced", "lock"));
    const taken = await other.open("s-fenced", "/work/project");
    const late = writer.append([failed]);
    await expect(late).rejects.toMatchObject({ code: "ERR_SESSION_LOCKED" });
    await expect(writer.append([answer])).rejects.toMatchObject({ code: "ERR_SESSION_LOCKED" });
    const next = message(user.id, "assistant", "from the new owner", { stopReason: "stop" });
    await taken.writer.append([next]);
    await writer.close();
    // The fenced writer's close does not release the new owner's lock.
    expect(code(await store.open("s-fenced", "/work/project").catch((e: unknown) => e))).toBe("ERR_SESSION_LOCKED");
    await taken.writer.close();
    const stored = await other.read("s-fenced", "/work/project");
    expect(stored.entries.map((entry) => entry.id)).toEqual([model.id, user.id, next.id]);
  });

  it("lets a writer whose lease lapsed go on while nobody took the session (its token is still the latest)", async () => {
    const connection = await connect(fleetName());
    const store = new RedisSessionStore(connection);
    const writer = await store.create(header("s-lapsed"));
    const [model, user] = turn() as [SessionEntry, SessionEntry];
    await connection.redis.del(connection.key("session", "s-lapsed", "lock"));
    await writer.append([model, user]);
    // The append took the lease again: another host is refused.
    const other = new RedisSessionStore(await connect(connection.settings.name));
    expect(code(await other.open("s-lapsed", "/work/project").catch((e: unknown) => e))).toBe("ERR_SESSION_LOCKED");
    await writer.close();
    expect((await other.read("s-lapsed", "/work/project")).entries).toHaveLength(2);
  });
});

describe("appends while Redis is away (B7 in a fleet)", () => {
  it("holds an append while Redis restarts, then stores it once", async () => {
    const connection = await connect(fleetName());
    const store = new RedisSessionStore(connection);
    const writer = await store.create(header("s-restart"));
    const [model, user, failed] = turn() as [SessionEntry, SessionEntry, SessionEntry];
    await writer.append([model]);
    const down = new Promise<void>((resolve) => connection.once("down", () => resolve()));
    await file.redis.stop();
    await within(down, 5000, "the connection to notice Redis stopped");
    let settled = false;
    const pending = writer.append([user]).finally(() => {
      settled = true;
    });
    // Refused at once by the connection while Redis is away; held and tried again by the writer.
    await expect(connection.redis.ping()).rejects.toThrow();
    expect(settled).toBe(false);
    await file.redis.start();
    await within(pending, 9000, "the held append");
    await writer.append([failed]);
    await writer.close();
    const stored = await store.read("s-restart", "/work/project");
    expect(stored.entries.map((entry) => entry.id)).toEqual([model.id, user.id, failed.id]);
  });
});
