/**
 * `lifeline --mode host --socket <path>` (docs/rpc.md, "On a socket"), against real
 * child processes of the built CLI, the mock model server and real Unix-socket clients: the file's
 * mode is 0600 and another user's connect is refused by it; two clients at once each hold their own
 * sessions; a session open in one client cannot be resumed by the other until it is closed or its
 * client disconnects (mid-prompt, without disturbing the other client's prompts); SIGTERM ends the
 * process with 143 and removes the socket file. Run `npm run build` first.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir, within } from "../../../fixtures/bounded.js";
import { mockServerSuite } from "../../../fixtures/mock-server-suite.js";
import { mockModelsJson } from "../../../fixtures/models.mjs";
import { connectHost, eventsOf, type HostChild, listening, settled, spawnHost } from "./host-lines.js";

const suite = mockServerSuite({
  script: {
    reply: "Mock reply.",
    conversations: [
      // A's prompt: a few tokens, then silence, so that it is live when A disconnects.
      { match: "[stalls]", steps: [{ type: "stall", afterTokens: 2, tokenDelayMs: 20 }] },
      // B's prompts: slow enough to be running when A goes, and then to finish.
      { match: "[slow b1]", steps: [{ type: "ok", text: "b1 answer", tokens: 50, tokenDelayMs: 40 }] },
      { match: "[slow b2]", steps: [{ type: "ok", text: "b2 answer", tokens: 50, tokenDelayMs: 40 }] },
    ],
  },
});
const { cleanups } = suite;

interface Info {
  sessionId: string;
}

/** A host on a socket in a fresh directory that other users may traverse (so only the socket's own mode keeps them out). */
async function socketHost(): Promise<{ child: HostChild; path: string }> {
  const dir = tempDir(cleanups, "lifeline-host-socket-");
  chmodSync(dir, 0o755);
  const path = join(dir, "host.sock");
  const child = spawnHost(cleanups, {
    dir,
    args: ["--provider", "mock", "--model", "mock-1", "--socket", path],
    models: mockModelsJson(suite.server.url),
  });
  await listening(child);
  return { child, path };
}

/** What user `nobody` sees when it stats and then connects to `path` (printed by a child run through runuser). */
function connectAsNobody(path: string): string {
  const found = spawnSync("runuser", ["--help"], { encoding: "utf8" });
  if (found.error !== undefined) {
    throw new Error(
      `runuser is missing (${found.error.message}): install it with \`apt-get install -y util-linux\` to run this test.`,
    );
  }
  const script = `
    const fs = require("node:fs");
    const net = require("node:net");
    const path = ${JSON.stringify(path)};
    fs.statSync(path);
    process.stdout.write("stat ok\\n");
    const socket = net.connect(path);
    socket.on("connect", () => { process.stdout.write("connected\\n"); socket.destroy(); });
    socket.on("error", (error) => process.stdout.write(error.code + "\\n"));
  `;
  const run = spawnSync("runuser", ["-u", "nobody", "--", process.execPath, "-e", script], {
    encoding: "utf8",
    timeout: 15_000,
  });
  if (run.error !== undefined) throw run.error;
  return `${run.stdout}${run.stderr}`;
}

describe("--socket", () => {
  it("makes the socket file 0600, which keeps another user out (EACCES), while its owner connects", async () => {
    const { path } = await socketHost();
    const stat = statSync(path);
    expect(stat.isSocket()).toBe(true);
    expect((stat.mode & 0o777).toString(8)).toBe("600");
    // The directory is open to others, so the refusal comes from the socket's own mode.
    expect(connectAsNobody(path)).toBe("stat ok\nEACCES\n");
    const owner = await connectHost(cleanups, path);
    expect(await owner.ok<Info>({ type: "open_session" })).toMatchObject({ sessionId: expect.any(String) });
  }, 30_000);

  it("serves two clients at once, each with its own sessions; one's session is locked to it until it closes it or disconnects mid-prompt, and the other's prompts go on", async () => {
    const { child, path } = await socketHost();
    const a = await connectHost(cleanups, path);
    const b = await connectHost(cleanups, path);
    const [a1, a2] = [await a.ok<Info>({ type: "open_session" }), await a.ok<Info>({ type: "open_session" })];
    const [b1, b2] = [await b.ok<Info>({ type: "open_session" }), await b.ok<Info>({ type: "open_session" })];
    const ids = (list: { sessions: Info[] }) => list.sessions.map((s) => s.sessionId).sort();
    expect(ids(await a.ok({ type: "list_sessions" }))).toEqual([a1.sessionId, a2.sessionId].sort());
    expect(ids(await b.ok({ type: "list_sessions" }))).toEqual([b1.sessionId, b2.sessionId].sort());

    // B can neither use nor resume A's sessions, by id or by a prefix of it.
    const use = await b.request({ type: "get_state", sessionId: a1.sessionId });
    expect(use.success).toBe(false);
    expect(use.error).toMatch(/another connection/);
    for (const ref of [a1.sessionId, a1.sessionId.slice(0, 8)]) {
      const resume = await b.request({ type: "resume_session", ref });
      expect(resume.success, `resume_session ${ref} from B`).toBe(false);
      expect(resume.error).toMatch(new RegExp(`Session ${a1.sessionId} is open in another connection`));
      expect(resume.error).toMatch(/close_session/);
    }
    // Once A closes a2, B may resume it.
    await a.ok({ type: "close_session", sessionId: a2.sessionId });
    expect(await b.ok<Info>({ type: "resume_session", ref: a2.sessionId })).toMatchObject({ sessionId: a2.sessionId });
    const onA = await a.request({ type: "get_state", sessionId: a2.sessionId });
    expect(onA.error).toMatch(/another connection/);

    // A's prompt stalls; B's run slowly. A disconnects while all three are live.
    const fromB = b.records.length;
    await a.ok({ type: "prompt", sessionId: a1.sessionId, message: "[stalls] please" });
    await b.ok({ type: "prompt", sessionId: b1.sessionId, message: "[slow b1] please" });
    await b.ok({ type: "prompt", sessionId: b2.sessionId, message: "[slow b2] please" });
    await a.waitFor((r) => r.type === "message_update" && r.sessionId === a1.sessionId, "A's first delta");
    await b.waitFor((r) => r.type === "message_update" && r.sessionId === b1.sessionId, "B's first delta", fromB);
    a.socket.destroy();
    await within(a.ended, 5_000, "A's socket to close");

    // A's session is closed with A: B resumes it at once, while its own prompts still run. Until
    // the host has seen A go, the session is A's (that error, and only that one, is retried).
    const taken = await within(
      (async () => {
        for (;;) {
          const resumed = await b.request({ type: "resume_session", ref: a1.sessionId });
          if (resumed.success === true || !String(resumed.error).includes("open in another connection")) return resumed;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })(),
      5_000,
      "B resuming A's session after A disconnected",
    );
    expect(taken).toMatchObject({ success: true, sessionId: a1.sessionId });
    expect(
      b.records.some((r) => r.type === "agent_settled"),
      "B's prompts still running",
    ).toBe(false);

    for (const [session, text] of [
      [b1, "b1 answer"],
      [b2, "b2 answer"],
    ] as const) {
      const end = await settled(b, session.sessionId, fromB, 20_000);
      expect(end.stopReason, JSON.stringify(end)).toBe("stop");
      const own = eventsOf(b.records.slice(fromB), session.sessionId);
      // Each jump of seq is a coalesced delta's count: nothing else is missing.
      let last = 0;
      for (const event of own) {
        expect(Number(event.seq) - last, JSON.stringify(event)).toBe(Number(event.coalesced ?? 1));
        last = Number(event.seq);
      }
      const messages = await b.ok<{ messages: { role: string; content: { text?: string }[] }[] }>({
        type: "get_messages",
        sessionId: session.sessionId,
      });
      expect(messages.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      expect(messages.messages[1]?.content.map((part) => part.text ?? "").join("")).toContain(text);
    }

    // The prompt that was live when A went is in the transcript.
    const transcript = await b.ok<{ messages: { role: string; content: unknown }[] }>({
      type: "get_messages",
      sessionId: a1.sessionId,
    });
    expect(JSON.stringify(transcript.messages[0]?.content)).toContain("[stalls] please");
    expect(a.problems).toEqual([]);
    expect(b.problems).toEqual([]);
    expect(child.child.exitCode).toBe(null);
  }, 60_000);

  it("ends with 143 on SIGTERM and removes the socket file", async () => {
    const { child, path } = await socketHost();
    const client = await connectHost(cleanups, path);
    await client.ok({ type: "open_session" });
    expect(existsSync(path)).toBe(true);
    child.child.kill("SIGTERM");
    expect(await within(child.exited, 15_000, "exit after SIGTERM")).toBe(143);
    expect(existsSync(path)).toBe(false);
    await within(client.ended, 5_000, "the client's socket to close");
  }, 30_000);
});
