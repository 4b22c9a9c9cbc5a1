/**
 * `lifeline sessions delete` and `lifeline sessions prune` in fleet mode (real child processes of
 * the built CLI against a real redis-server, sessions made by print mode on the demo model, one
 * held open by a live `--mode rpc` child of the fleet): delete removes every key of the session
 * and it from every index, and refuses one open on a host (exit 1, keys intact); prune deletes
 * exactly the sessions last modified longer ago than `--older-than`, leaves an open one, and
 * `--dry-run` lists the same and deletes nothing.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../fixtures/bounded.js";
import { type CliAt, holdSessionOpen, idsOf, runLifeline } from "../../fixtures/lifeline-cli.js";
import { redisForFile } from "../../fixtures/redis-server.js";

const file = redisForFile();
const { cleanups } = file;

type At = CliAt;

const lifeline = (args: string[], at: At) => runLifeline(cleanups, args, at);
const holdOpen = (flags: string[], at: At, id: string) => holdSessionOpen(cleanups, flags, at, id);

/** One fleet of its own on the file's Redis: its flags, a client, and two working directories. */
function fleet() {
  const name = file.fleetName("prune");
  const home = tempDir(cleanups);
  writeFileSync(join(home, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 5 } }));
  const client = new Redis(file.redis.url);
  cleanups.push(() => client.disconnect());
  return {
    name,
    flags: ["--fleet", file.redis.url, "--fleet-name", name],
    client,
    a: { home, cwd: tempDir(cleanups) },
    b: { home, cwd: tempDir(cleanups) },
    /** Every key of session `id`, sorted. */
    keysOf: async (id: string) => (await scanAll(client, `lifeline:${name}:session:${id}:*`)).sort(),
  };
}

async function scanAll(client: Redis, match: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await client.scan(cursor, "MATCH", match, "COUNT", 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return keys;
}

/** Runs `lifeline -p <prompt>` in the fleet and answers the id of the session it stored in `at.cwd`'s index. */
async function makeSession(f: ReturnType<typeof fleet>, at: At, prompt: string): Promise<string> {
  const index = `lifeline:${f.name}:sessions:cwd:${at.cwd}`;
  const before = await f.client.zrange(index, "0", "-1");
  const run = await lifeline([...f.flags, "-p", prompt], at);
  expect(run.code, run.stderr).toBe(0);
  const made = (await f.client.zrange(index, "0", "-1")).filter((id) => !before.includes(id));
  expect(made).toHaveLength(1);
  return made[0] as string;
}

describe("lifeline sessions delete and prune in fleet mode", () => {
  it("delete removes every key and index entry of a session (by prefix, from another directory), exits 2 for an unknown id, and exits 1 leaving a session open on a host with its keys", async () => {
    const f = fleet();
    const gone = await makeSession(f, f.a, "to delete");
    const kept = await makeSession(f, f.b, "to keep");
    const open = await makeSession(f, f.a, "held open");
    expect(await f.keysOf(gone)).toEqual(
      ["entries", "fence", "info"].map((suffix) => `lifeline:${f.name}:session:${gone}:${suffix}`),
    );

    const deleted = await lifeline(["sessions", "delete", gone.slice(0, 8), ...f.flags], f.b);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toMatch(new RegExp(`^${gone}\\t.*\\t${f.a.cwd}\\tto delete\\n$`));
    expect(deleted.stderr).toContain(`Deleted session ${gone}.`);
    expect(await f.keysOf(gone)).toEqual([]);
    const prefix = `lifeline:${f.name}:sessions:`;
    for (const index of ["all", "ids", `cwd:${f.a.cwd}`]) {
      expect(await f.client.zscore(`${prefix}${index}`, gone), index).toBeNull();
    }
    expect(await f.client.zscore(`${prefix}expiry`, `${f.a.cwd}\n${gone}`)).toBeNull();
    const listed = await lifeline(["sessions", ...f.flags], f.a);
    expect(idsOf(listed.stdout)).toEqual([kept, open].sort());

    const unknown = await lifeline(["sessions", "delete", gone, ...f.flags], f.a);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("ERR_SESSION_NOT_FOUND");

    const keysOfOpen = await f.keysOf(open);
    const holder = await holdOpen(f.flags, f.a, open);
    const locked = await lifeline(["sessions", "delete", open, ...f.flags], f.b);
    expect(locked.code).toBe(1);
    expect(locked.stderr).toContain("ERR_SESSION_LOCKED");
    expect(locked.stdout).toBe("");
    expect(await f.keysOf(open)).toEqual([...keysOfOpen, `lifeline:${f.name}:session:${open}:lock`].sort());
    expect(await f.client.zscore(`${prefix}all`, open)).not.toBeNull();
    await holder.stop();
  }, 90_000);

  it("prune deletes exactly the sessions modified longer ago than --older-than, --here this directory's, leaves one open on a host, and --dry-run lists the same and deletes nothing", async () => {
    const f = fleet();
    const aOld = await makeSession(f, f.a, "old here");
    const bOld = await makeSession(f, f.b, "old there");
    const aNew = await makeSession(f, f.a, "new here");
    const bOpen = await makeSession(f, f.b, "old and open there");
    const holder = await holdOpen(f.flags, f.b, bOpen);
    const twoDaysAgo = Date.now() - 2 * 86_400_000;
    for (const [at, id] of [
      [f.a, aOld],
      [f.b, bOld],
      [f.b, bOpen],
    ] as const) {
      await f.client.hset(`lifeline:${f.name}:session:${id}:info`, "modified", twoDaysAgo);
      await f.client.zadd(`lifeline:${f.name}:sessions:all`, twoDaysAgo, id);
      await f.client.zadd(`lifeline:${f.name}:sessions:cwd:${at.cwd}`, twoDaysAgo, id);
    }
    const keys = async () =>
      Object.fromEntries(await Promise.all([aOld, bOld, aNew, bOpen].map(async (id) => [id, await f.keysOf(id)])));
    const before = await keys();

    const dryRun = await lifeline(["sessions", "prune", "--older-than", "1d", "--dry-run", ...f.flags], f.a);
    expect(dryRun.code, dryRun.stderr).toBe(0);
    expect(idsOf(dryRun.stdout)).toEqual([aOld, bOld].sort());
    expect(dryRun.stderr).toContain(`Left ${bOpen}: `);
    expect(dryRun.stderr).toContain("Would delete 2 sessions; left 1 open somewhere.");
    expect(await keys()).toEqual(before);

    const here = await lifeline(["sessions", "prune", "--older-than", "1d", "--here", ...f.flags], f.a);
    expect(here.code, here.stderr).toBe(0);
    expect(idsOf(here.stdout)).toEqual([aOld]);
    expect(await f.keysOf(aOld)).toEqual([]);
    expect(await f.keysOf(bOld)).toEqual(before[bOld]);

    const all = await lifeline(["sessions", "prune", "--older-than", "1d", ...f.flags], f.a);
    expect(all.code, all.stderr).toBe(0);
    expect(idsOf(all.stdout)).toEqual([bOld]);
    expect(all.stderr).toContain(`Left ${bOpen}: `);
    expect(all.stderr).toContain("Deleted 1 session; left 1 open somewhere.");
    expect(await keys()).toEqual({ ...before, [aOld]: [], [bOld]: [] });
    expect(`${here.stdout}${all.stdout}`.split("\n").sort()).toEqual(dryRun.stdout.split("\n").sort());
    const listed = await lifeline(["sessions", ...f.flags], f.a);
    expect(idsOf(listed.stdout)).toEqual([aNew, bOpen].sort());

    await holder.stop();
  }, 90_000);
});
