/**
 * SPEC B7 in fleet mode, through the host (in-process workers, a real redis-server): a host in a
 * fleet keeps its sessions (`sessions: {}`) in the fleet's Redis, where another host of the fleet
 * resumes and continues them; the stored entries have the shape the file store gives the same
 * run; a session open on one host is refused on another until it is closed there.
 */
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import type { SessionHostOptions } from "../../../src/main/host/session-host.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { inProcessHost } from "../../fixtures/in-process-host.js";
import { redisForFile } from "../../fixtures/redis-server.js";
import { type Step, scriptedModel } from "../../fixtures/scripted-provider.js";
import { parseLines, shape } from "../../fixtures/session-lines.js";

const file = redisForFile();
const { cleanups } = file;

function fleet(): { redis: string; name: string } {
  return { redis: file.redis.url, name: file.fleetName("hosts") };
}

function host(options: SessionHostOptions) {
  const cwd = tempDir(cleanups);
  const env = inProcessHost({ lifelineDir: cwd, cwd, sessions: {}, ...options });
  cleanups.push(() => env.host.close());
  return { ...env, cwd };
}

function script(steps: readonly Step[]) {
  const scripted = scriptedModel(steps);
  cleanups.push(() => scripted.unregister());
  return scripted;
}

const STEPS: Step[] = [{ error: "503 Service Unavailable" }, { text: "first answer" }, { text: "second answer" }];

/** Runs the two-host story on `settings`: host A prompts (one retry) and closes; host B resumes and prompts. */
async function twoHosts(settings: SessionHostOptions["settings"], shared: { lifelineDir?: string } = {}) {
  const scripted = script(STEPS);
  const options = { ...(settings === undefined ? {} : { settings }), ...shared };
  const a = host(options);
  const session = await a.host.createSession({ model: scripted.model });
  const first = session.prompt("first question");
  await a.clock.release();
  expect((await within(first, 10_000, "the first prompt")).stopReason).toBe("stop");
  const sessionFile = session.sessionFile;
  await a.host.close();
  const b = host(options);
  const resumed = await within(
    b.host.resumeSession(session.id.slice(0, 8), { model: scripted.model }),
    10_000,
    "the resume",
  );
  expect(resumed.id).toBe(session.id);
  expect(resumed.history.map((m) => m.role)).toEqual(["user", "assistant", "assistant"]);
  expect((await within(resumed.prompt("second question"), 10_000, "the second prompt")).stopReason).toBe("stop");
  await resumed.flushSession();
  const listed = await b.host.listSessions({ cwd: a.cwd });
  const { text } = await b.host.exportSession(session.id);
  await b.host.close();
  return { id: session.id, sessionFile, listed, text, aCwd: a.cwd };
}

describe("sessions in a fleet (B7 across hosts)", () => {
  it("B7: a session one host of the fleet wrote is resumed and continued by another, failed attempts kept, shaped as the file store's", async () => {
    const { name, redis: url } = fleet();
    const inFleet = await twoHosts({ fleet: { redis: url, name } });
    expect(inFleet.sessionFile).toBe(`lifeline:${name}:session:${inFleet.id}`);
    expect(inFleet.listed.map((info) => [info.id, info.messageCount, info.firstMessage])).toEqual([
      [inFleet.id, 5, "first question"],
    ]);
    const lines = parseLines(inFleet.text);
    expect(lines[0]).toMatchObject({ type: "session", version: 3, id: inFleet.id, cwd: inFleet.aCwd });
    // The export is what Redis holds, line for line.
    const client = new Redis(url);
    cleanups.push(() => client.disconnect());
    const stored = await client.lrange(`lifeline:${name}:session:${inFleet.id}:entries`, 0, -1);
    expect(stored.map((line) => `${line}\n`).join("")).toBe(inFleet.text);

    const onFiles = await twoHosts(undefined, { lifelineDir: tempDir(cleanups) });
    expect(onFiles.sessionFile?.endsWith(".jsonl")).toBe(true);
    expect(shape(lines)).toEqual(shape(parseLines(onFiles.text)));
    expect(shape(lines).map((entry) => (entry as { linked: boolean }).linked)).not.toContain(false);
  });

  it("keeps files in fleet mode when sessions name a dir", async () => {
    const scripted = script([{ text: "answer" }]);
    const dir = tempDir(cleanups);
    const a = host({ settings: { fleet: fleet() }, sessions: { dir } });
    const session = await a.host.createSession({ model: scripted.model });
    expect(session.sessionFile?.startsWith(dir)).toBe(true);
  });

  it("refuses a session open on another host with ERR_SESSION_LOCKED and the lease's time left, and opens it as soon as that host closes it", async () => {
    const settings = { fleet: { ...fleet(), leaseMs: 5000 } };
    const scripted = script([{ text: "answer" }]);
    const a = host({ settings });
    const session = await a.host.createSession({ model: scripted.model });
    await session.prompt("hello");
    const b = host({ settings });
    const refusal = (await b.host.resumeSession(session.id, { model: scripted.model }).catch((e: unknown) => e)) as {
      code: string;
      retryAfterMs: number;
    };
    expect(refusal.code).toBe("ERR_SESSION_LOCKED");
    expect(refusal.retryAfterMs).toBeGreaterThan(0);
    expect(refusal.retryAfterMs).toBeLessThanOrEqual(5000);
    await session.dispose();
    const resumed = await b.host.resumeSession(session.id, { model: scripted.model });
    expect(resumed.history.map((m) => m.role)).toEqual(["user", "assistant"]);
  });
});
