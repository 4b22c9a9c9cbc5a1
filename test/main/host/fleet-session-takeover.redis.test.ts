/**
 * SPEC B7 in fleet mode with real lifeline host processes (`lifeline --mode rpc`, the built CLI)
 * on a real redis-server: a session one host wrote is continued by another host process, and
 * `lifeline export` gives what the file store writes for the same run; a host stopped (SIGSTOP)
 * past its lease loses the session to the next owner at once and, when it wakes, stores nothing
 * more, so the two never interleave.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { connectFleet } from "../../../src/main/redis/fleet-connection.js";
import { RedisSessionStore } from "../../../src/main/session-files/redis-session-store.js";
import type { SessionEntry } from "../../../src/main/session-files/session-format.js";
import { parseSettings } from "../../../src/shared/settings/settings.js";
import { within } from "../../fixtures/bounded.js";
import { startRedis, type TestRedis } from "../../fixtures/redis-server.js";
import { type RpcChild, type RpcRecord, spawnRpc } from "../../fixtures/rpc-child.js";
import { parseLines, shape } from "../../fixtures/session-lines.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));

let redis: TestRedis;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
});
afterAll(async () => {
  client?.disconnect();
  await redis?.dispose();
});
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let fleetCounter = 0;
const isSettled = (record: RpcRecord) => record.type === "agent_settled";

function fleetSettings(leaseMs: number) {
  return { retry: { baseDelayMs: 5 }, fleet: { redis: redis.url, name: `procs${++fleetCounter}`, leaseMs } };
}

async function sessionOf(rpc: RpcChild): Promise<{ sessionId: string; sessionFile: string }> {
  const state = await rpc.request({ type: "get_state" });
  return state.data as { sessionId: string; sessionFile: string };
}

/** Sends a prompt and waits for its agent_settled. */
async function prompt(rpc: RpcChild, message: string): Promise<void> {
  const from = rpc.records.length;
  expect(await rpc.request({ type: "prompt", message })).toMatchObject({ success: true });
  await rpc.waitFor(isSettled, `the agent_settled of "${message}"`, from);
}

/** Ends the child by closing its stdin (an orderly exit: its session is flushed and released). */
async function quit(rpc: RpcChild): Promise<void> {
  rpc.child.stdin.end();
  expect(await within(rpc.exited, 15_000, "the RPC child's exit")).toBe(0);
}

function lifeline(args: string[], home: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: home,
    env: { ...process.env, LIFELINE_DIR: home, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  cleanups.push(() => void child.kill("SIGKILL"));
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return within(
    new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr }))),
    15_000,
    `lifeline ${args.join(" ")}`,
  );
}

/** Resolves once the Redis list `key` has `length` lines: checked on each of its keyspace events. */
async function whenLength(key: string, length: number): Promise<void> {
  const subscriber = new Redis(redis.url);
  cleanups.push(() => subscriber.disconnect());
  await client.config("SET", "notify-keyspace-events", "Kl");
  const reached = new Promise<void>((resolve) => {
    const check = () =>
      void client.llen(key).then((now) => {
        if (now >= length) resolve();
      });
    subscriber.on("message", check);
    void subscriber.subscribe(`__keyspace@0__:${key}`).then(check);
  });
  await within(reached, 10_000, `${length} lines in ${key}`);
}

/** Resolves once `rpc`'s stderr contains `text`. */
function stderrShows(rpc: RpcChild, text: string): Promise<void> {
  return within(
    new Promise<void>((resolve) => {
      const check = () => {
        if (rpc.stderr().includes(text)) resolve();
      };
      rpc.child.stderr.on("data", check);
      check();
    }),
    10_000,
    `"${text}" on the child's stderr`,
  );
}

describe("sessions across lifeline host processes (B7 in a fleet)", () => {
  it("B7: a session one host process wrote is continued by another, lifeline sessions lists it, and lifeline export gives the file store's file for the same run", async () => {
    const settings = fleetSettings(1000);
    const a = spawnRpc(cleanups, { settings });
    const { sessionId, sessionFile } = await sessionOf(a);
    expect(sessionFile).toBe(`lifeline:${settings.fleet.name}:session:${sessionId}`);
    await prompt(a, "first question");
    await quit(a);
    const b = spawnRpc(cleanups, { settings, args: ["--session", sessionId.slice(0, 8)] });
    expect((await sessionOf(b)).sessionId).toBe(sessionId);
    const history = await b.request({ type: "get_messages" });
    expect((history.data as { messages: { role: string }[] }).messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
    ]);
    await prompt(b, "second question");
    await quit(b);
    const exported = await lifeline(["export", sessionId.slice(0, 8)], a.dir);
    expect(exported.code).toBe(0);
    const listed = await lifeline(["sessions"], a.dir);
    expect(listed.stdout.split("\t").slice(0, 1)).toEqual([sessionId]);
    // In fleet mode every directory's sessions are listed, each naming its directory.
    expect(listed.stdout).toContain(`8 messages\t${a.dir}\tfirst question`);

    // The same run on the file store: one process, then another resuming its file.
    const c = spawnRpc(cleanups);
    const file = (await sessionOf(c)).sessionFile;
    await prompt(c, "first question");
    await quit(c);
    const d = spawnRpc(cleanups, { args: ["--session", file] });
    await prompt(d, "second question");
    await quit(d);
    const lines = parseLines(exported.stdout);
    expect(lines[0]).toMatchObject({ type: "session", version: 3, id: sessionId });
    expect(shape(lines)).toEqual(shape(parseLines(readFileSync(file, "utf8"))));
    expect(lines.filter((line) => line.type === "message")).toHaveLength(8);
    // Four CLI children and two commands one after another: about 9 s on a quiet machine, over 20
    // on a loaded one. Each step has its own bound (15 s), so a hang still fails here.
  }, 60_000);

  it("B7: a host stopped past its lease loses the session at once to the next owner, and stores nothing more when it wakes", async () => {
    const settings = fleetSettings(1000);
    const a = spawnRpc(cleanups, { settings });
    const { sessionId } = await sessionOf(a);
    const key = `lifeline:${settings.fleet.name}:session:${sessionId}:entries`;
    await prompt(a, "before the stall");
    // header, model_change, thinking_level_change, the prompt, two failed attempts and the answer.
    // All seven before the stop: the answer is stored lazily (up to 50 ms after agent_settled), and
    // stopping before it landed made what the host had stored depend on the machine's load.
    await whenLength(key, 7);
    a.child.kill("SIGSTOP");
    cleanups.push(() => void a.child.kill("SIGCONT"));

    const fleet = parseSettings(settings, "test").fleet;
    if (fleet === undefined) throw new Error("no fleet settings");
    const connection = await connectFleet(fleet);
    cleanups.push(() => connection.close());
    const store = new RedisSessionStore(connection);
    const refusal = (await store.open(sessionId, "/elsewhere").catch((e: unknown) => e)) as {
      code: string;
      retryAfterMs: number;
    };
    expect(refusal.code).toBe("ERR_SESSION_LOCKED");
    expect(refusal.retryAfterMs).toBeLessThanOrEqual(1000);
    // Wait out the lease the refusal named (the stopped host cannot renew it); then it is free.
    await new Promise((resolve) => setTimeout(resolve, refusal.retryAfterMs + 10));
    const taken = await store.open(sessionId, "/elsewhere");
    const last = taken.entries.at(-1);
    const next: SessionEntry = {
      type: "message",
      id: "b0000001",
      parentId: last?.id ?? null,
      timestamp: new Date().toISOString(),
      message: { role: "user", content: [{ type: "text", text: "from the next owner" }], timestamp: Date.now() },
    };
    await taken.writer.append([next]);

    a.child.kill("SIGCONT");
    expect(await a.request({ type: "prompt", message: "after the stall" })).toMatchObject({ success: true });
    await stderrShows(a, "was taken over by another writer");
    await quit(a);
    // The woken host's close left the new owner's lock alone.
    const other = new RedisSessionStore(connection);
    expect(await other.open(sessionId, "/elsewhere").catch((e: unknown) => (e as { code: string }).code)).toBe(
      "ERR_SESSION_LOCKED",
    );
    await taken.writer.close();
    const stored = (await client.lrange(key, 0, -1)).map((line) => JSON.parse(line) as { id: string; type: string });
    expect(stored).toHaveLength(8);
    expect(stored.map((line) => line.id).slice(0, 7)).toEqual([sessionId, ...taken.entries.map((entry) => entry.id)]);
    expect(stored.at(-1)?.id).toBe(next.id);
  });
});
