/**
 * A burst of prompts on the host's pacer (workers/turn-pacer.ts): a host that starts many
 * prompts in one synchronous loop gets its event loop back before every run is posted, and every
 * prompt still runs and settles, its retries included, each session's prompts in order; a prompt
 * aborted while it waits for its turn settles as aborted and sends nothing. The built package, a
 * real piscina worker and the mock model server on 127.0.0.1 (each conversation: a 503, then an
 * answer). Run `npm run build` first.
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

async function openSessions(tag: string, count: number): Promise<AgentSession[]> {
  const dir = tempDir(cleanups);
  const host = createSessionHost({ lifelineDir: dir, cwd: dir, threads: 1, settings: { retry: { baseDelayMs: 5 } } });
  cleanups.push(() => host.close());
  suite.server.setScript({ conversations: [{ match: tag, steps: [503, "ok"] }] });
  const model = mockModel(suite.server.port);
  const sessions: AgentSession[] = [];
  for (let i = 0; i < count; i++) sessions.push(await host.createSession({ model, apiKey: "dummy" }));
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
});
