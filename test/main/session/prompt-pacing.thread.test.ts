/**
 * A burst of prompts on the host's pacer (workers/turn-pacer.ts): a host that starts many
 * prompts in one synchronous loop gets its event loop back before every run is posted, and every
 * prompt still runs and settles, its retries included, each session's prompts in order; a prompt
 * aborted while it waits for its turn settles as aborted and sends nothing; the sessions of a
 * worker that dies are restored on turns too (X7), not all in the task that saw the death. The
 * built package, real piscina workers and the mock model server on 127.0.0.1. Run `npm run build`
 * first.
 */
import { describe, expect, it } from "vitest";
import { type AgentSession, createSessionHost } from "../../../dist/main/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { mockModel } from "../../fixtures/models.mjs";

const suite = mockServerSuite();
const { cleanups } = suite;

/** More sessions than the pacer's first slice runs (32 turns), so that a burst of them is paced. */
const SESSIONS = 120;

const EXIT_MODULE = new URL("../../fixtures/exit-on-flag.mjs", import.meta.url);

/** `count` sessions on one worker; each conversation of `tag` gets `steps` (default: a 503, then an answer). */
async function openSessions(
  tag: string,
  count: number,
  steps: (number | string)[] = [503, "ok"],
  exit?: SharedArrayBuffer,
): Promise<AgentSession[]> {
  const dir = tempDir(cleanups);
  const host = createSessionHost({ lifelineDir: dir, cwd: dir, threads: 1, settings: { retry: { baseDelayMs: 5 } } });
  cleanups.push(() => host.close());
  suite.server.setScript({ conversations: [{ match: tag, steps }] });
  const model = mockModel(suite.server.port);
  const module = exit === undefined ? {} : { workerModule: EXIT_MODULE, workerModuleOptions: { exit } };
  const sessions: AgentSession[] = [];
  for (let i = 0; i < count; i++) sessions.push(await host.createSession({ model, apiKey: "dummy", ...module }));
  return sessions;
}

function userTexts(session: AgentSession): string[] {
  return session.messages.flatMap((message) =>
    message.role === "user" && Array.isArray(message.content)
      ? message.content.flatMap((part) => (part.type === "text" ? [part.text] : []))
      : [],
  );
}

describe("a burst of prompts started in one loop", () => {
  it("yields the loop before every run is posted; every prompt runs, retries and settles, in order per session", async () => {
    const tag = "paced burst";
    const sessions = await openSessions(tag, SESSIONS);
    const firsts = sessions.map((session, i) => session.prompt(`${tag} ${i} first`));
    const seconds = sessions.map((session, i) => session.prompt(`${tag} ${i} second`, { queue: true }));
    // The host's loop turns before the burst is over: on the next check phase, some prompts
    // have not posted their run yet. Without the pacer every run is posted inside the loop above.
    const postedByNextTurn = await new Promise<number>((resolve) =>
      setImmediate(() => resolve(sessions.filter((session) => session.isStreaming).length)),
    );
    expect(postedByNextTurn).toBeGreaterThan(0);
    expect(postedByNextTurn).toBeLessThan(SESSIONS);

    const results = await within(Promise.all([...firsts, ...seconds]), 60_000, "the burst's prompts");
    for (const result of results) expect(result.stopReason).toBe("stop");
    // Each first prompt went through its retry (the 503); the queued second ones were answered at once.
    expect(results.slice(0, SESSIONS).every((result) => result.retries === 1)).toBe(true);
    for (const [i, session] of sessions.entries()) {
      expect(userTexts(session)).toEqual([`${tag} ${i} first`, `${tag} ${i} second`]);
      // The conversation is keyed by its first user message: the 503, its retry, the second prompt.
      expect(suite.server.requests(`${tag} ${i} first`)).toBe(3);
    }
  });

  it("an abort while the prompt waits for its turn settles it as aborted, with no request sent", async () => {
    const tag = "paced abort";
    const sessions = await openSessions(tag, SESSIONS);
    const prompts = sessions.map((session, i) => session.prompt(`${tag} ${i}`));
    const last = sessions.length - 1;
    const lastSession = sessions[last] as AgentSession;
    // Still waiting for its turn: the pacer's first slice ran the first sessions only.
    expect(lastSession.isStreaming).toBe(false);
    await lastSession.abort();
    const aborted = await within(prompts[last] as Promise<unknown>, 10_000, "the aborted prompt");
    expect(aborted).toMatchObject({ stopReason: "aborted", retries: 0 });
    const results = await within(Promise.all(prompts.slice(0, last)), 60_000, "the other prompts");
    for (const result of results) expect(result.stopReason).toBe("stop");
    expect(suite.server.requests(`${tag} ${last}`)).toBe(0);
    // The session goes on: its next prompt runs as usual.
    const next = await within(lastSession.prompt(`${tag} ${last} again`), 20_000, "the next prompt");
    expect(next.stopReason).toBe("stop");
  });

  it("X7: the sessions of a worker that dies end their runs on turns, not all in the task that saw the death", async () => {
    const tag = "paced restore";
    const exit = new SharedArrayBuffer(4);
    const sessions = await openSessions(tag, SESSIONS, ["stall", "ok"], exit);
    let started = 0;
    const allStarted = new Promise<void>((resolve) => {
      const off = suite.server.on("request_start", (record) => {
        if (!record.conversation.startsWith(tag) || ++started < SESSIONS) return;
        off();
        resolve();
      });
    });
    // How many sessions ended their dead run (agent_end) in the same task as the first one did.
    let inFirstTask = 0;
    let firstTaskOpen: boolean | undefined;
    let restored = 0;
    for (const session of sessions) {
      let ended = false;
      session.subscribe((event) => {
        if (event.type === "session_restored") restored++;
        if (event.type !== "agent_end" || ended) return;
        ended = true;
        if (firstTaskOpen === undefined) {
          firstTaskOpen = true;
          setImmediate(() => (firstTaskOpen = false));
        }
        if (firstTaskOpen) inFirstTask++;
      });
    }
    const prompts = sessions.map((session, i) => session.prompt(`${tag} ${i}`));
    await within(allStarted, 30_000, "every stalled request at the mock");
    const flag = new Int32Array(exit);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    const results = await within(Promise.all(prompts), 60_000, "the prompts after the restore");
    for (const result of results) expect(result).toMatchObject({ stopReason: "stop", retries: 1 });
    expect(restored).toBe(SESSIONS);
    expect(inFirstTask).toBeGreaterThan(0);
    expect(inFirstTask).toBeLessThan(SESSIONS);
  });
});
