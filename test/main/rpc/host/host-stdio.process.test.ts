/**
 * `lifeline --mode host` on stdio (docs/rpc.md, "Many sessions in one process"), against
 * real child processes of the built CLI and the mock model server: many sessions in one process,
 * each event and response naming its session, per-session sequence numbers without gaps, and the
 * host-only commands (open, list, close, resume) and pi's replacing commands (fork, clone,
 * new_session, switch_session) with and without a `sessionId`. Run `npm run build` first.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { within } from "../../../fixtures/bounded.js";
import { mockServerSuite } from "../../../fixtures/mock-server-suite.js";
import { mockModelsJson } from "../../../fixtures/models.mjs";
import { CLI, eventsOf, type HostChild, settled, spawnHost } from "./host-lines.js";

const suite = mockServerSuite({ script: { reply: "Mock reply." } });
const { cleanups } = suite;

const MOCK = ["--provider", "mock", "--model", "mock-1"];

const scripts: { match: string; steps: unknown[] }[] = [];
/** Makes the mock answer a prompt containing `match` with `text`, one streamed token a word. */
function answer(match: string, text: string): void {
  scripts.push({ match, steps: [{ type: "ok", text }] });
  suite.server.setScript({ reply: "Mock reply.", conversations: scripts });
}

function host(): HostChild {
  return spawnHost(cleanups, { args: MOCK, models: mockModelsJson(suite.server.url) });
}

interface Info {
  sessionId: string;
  sessionFile?: string;
  isDefault: boolean;
  model: string;
}

/** The texts of a get_messages answer's messages, role first. */
function texts(data: unknown): string[] {
  const messages = (data as { messages: { role: string; content: unknown }[] }).messages;
  return messages.map((message) => {
    const content = message.content;
    const parts =
      typeof content === "string"
        ? [content]
        : (content as { type: string; text?: string }[]).map((part) => part.text ?? "");
    return `${message.role}: ${parts.join("")}`;
  });
}

/** The ids `lifeline sessions` lists for the child's directory (run as a child on the same LIFELINE_DIR). */
async function storedIds(dir: string): Promise<string[]> {
  const child = spawn(process.execPath, [CLI, "sessions"], {
    cwd: dir,
    env: { ...process.env, LIFELINE_DIR: dir, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await within(
    new Promise<number | null>((resolve) => child.on("exit", resolve)),
    15_000,
    "lifeline sessions",
  );
  expect(code, stderr).toBe(0);
  return stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => line.split("\t")[0] ?? "");
}

describe("many sessions on stdio", () => {
  it("runs prompts to 24 sessions at once: every record names its session, each session's events count 1, 2, 3… and its responses keep input order", async () => {
    const child = host();
    const count = 24;
    const ids: string[] = [];
    for (let k = 0; k < count; k++) {
      const info = await child.ok<Info>({ type: "open_session", name: `s${k}` });
      expect(info.isDefault).toBe(false);
      ids.push(info.sessionId);
    }
    expect(new Set(ids).size).toBe(count);
    // Each session gets its own scripted answer, so that a model request routed to the wrong
    // session would show in that session's transcript.
    for (let k = 0; k < count; k++) answer(`[prompt ${k}]`, `answer ${k} alpha beta gamma delta`);

    const from = child.records.length;
    const sent: { id: string; sessionId: string; type: string }[] = [];
    // All prompts first, so that they run at the same time; then three more commands per session.
    const tail = ["get_state", "get_session_stats", "get_messages"] as const;
    for (const [k, sessionId] of ids.entries()) {
      const id = `p${k}`;
      sent.push({ id, sessionId, type: "prompt" });
      child.send({ id, type: "prompt", sessionId, message: `[prompt ${k}] go` });
    }
    for (const [k, sessionId] of ids.entries()) {
      for (const type of tail) {
        const id = `${type}-${k}`;
        sent.push({ id, sessionId, type });
        child.send({ id, type, sessionId });
      }
    }
    await Promise.all(ids.map((sessionId) => settled(child, sessionId, from, 30_000)));
    await child.waitFor((r) => r.id === `get_messages-${count - 1}`, "the last response", from);

    const records = child.records.slice(from);
    const responses = records.filter((record) => record.type === "response");
    expect(responses).toHaveLength(sent.length);
    for (const response of responses) {
      const command = sent.find((entry) => entry.id === response.id);
      expect(command, JSON.stringify(response)).toBeDefined();
      expect(response.success, JSON.stringify(response)).toBe(true);
      expect(response.sessionId).toBe(command?.sessionId);
      expect(response.command).toBe(command?.type);
    }
    for (const [k, sessionId] of ids.entries()) {
      const order = responses.filter((r) => r.sessionId === sessionId).map((r) => r.id);
      expect(order).toEqual([`p${k}`, ...tail.map((type) => `${type}-${k}`)]);
    }

    const events = records.filter((record) => record.type !== "response");
    for (const event of events) expect(ids, JSON.stringify(event)).toContain(event.sessionId);
    for (const [k, sessionId] of ids.entries()) {
      const own = eventsOf(records, sessionId);
      expect(own.length).toBeGreaterThan(5);
      // Nothing here is slow, so nothing is coalesced: each session's events count from 1 without a gap.
      expect(own.map((event) => event.seq)).toEqual(own.map((_, i) => i + 1));
      expect(own.some((event) => event.coalesced !== undefined)).toBe(false);
      const deltas = own
        .filter((event) => event.type === "message_update")
        .map((event) => (event.assistantMessageEvent as { type: string; delta?: string }).delta ?? "")
        .join("");
      expect(deltas).toContain(`answer ${k} alpha`);
      const transcript = texts(await child.ok({ type: "get_messages", sessionId }));
      expect(transcript).toEqual([`user: [prompt ${k}] go`, `assistant: answer ${k} alpha beta gamma delta`]);
    }
    expect(child.problems).toEqual([]);
  }, 60_000);

  it("lists, closes and resumes sessions by id and by prefix; the ids are the stored ids `lifeline sessions` lists; unknown and closed ids get an error naming them", async () => {
    const child = host();
    answer("[keep me]", "kept answer");
    const a = await child.ok<Info>({ type: "open_session", name: "first" });
    const b = await child.ok<Info>({ type: "open_session" });
    const from = child.records.length;
    await child.ok({ type: "prompt", sessionId: a.sessionId, message: "[keep me] please" });
    await settled(child, a.sessionId, from);
    // The default session opens on first use of a command without a sessionId.
    const state = await child.ok<{ sessionId: string }>({ type: "get_state" });

    const listed = await child.ok<{ sessions: Info[] }>({ type: "list_sessions" });
    expect(listed.sessions.map((s) => [s.sessionId, s.isDefault])).toEqual([
      [state.sessionId, true],
      [a.sessionId, false],
      [b.sessionId, false],
    ]);
    const stored = await storedIds(child.dir);
    expect(stored.sort()).toEqual([a.sessionId, b.sessionId, state.sessionId].sort());

    const unknown = await child.request({ type: "get_state", sessionId: "no-such-session" });
    expect(unknown).toMatchObject({ success: false, command: "get_state" });
    expect(unknown.error).toMatch(/no-such-session/);
    expect(unknown.error).toMatch(/resume_session|list_sessions/);

    const closed = await child.request({ type: "close_session", sessionId: a.sessionId });
    expect(closed).toMatchObject({ success: true, sessionId: a.sessionId });
    const after = await child.request({ type: "get_messages", sessionId: a.sessionId });
    expect(after.success).toBe(false);
    expect(after.error).toMatch(new RegExp(`No session ${a.sessionId}`));
    const again = await child.request({ type: "close_session", sessionId: a.sessionId });
    expect(again.success).toBe(false);
    expect(again.error).toMatch(a.sessionId);
    const listedAfter = await child.ok<{ sessions: Info[] }>({ type: "list_sessions" });
    expect(listedAfter.sessions.map((s) => s.sessionId)).toEqual([state.sessionId, b.sessionId]);

    const resumed = await child.request({ type: "resume_session", ref: a.sessionId });
    expect(resumed).toMatchObject({ success: true, sessionId: a.sessionId, data: { sessionId: a.sessionId } });
    expect(texts(await child.ok({ type: "get_messages", sessionId: a.sessionId }))).toEqual([
      "user: [keep me] please",
      "assistant: kept answer",
    ]);
    // A resumed session takes prompts again, and its sequence numbers on this connection start afresh.
    answer("[and again]", "second answer");
    const before = child.records.length;
    await child.ok({ type: "prompt", sessionId: a.sessionId, message: "[and again] now" });
    await settled(child, a.sessionId, before);
    const own = eventsOf(child.records.slice(before), a.sessionId);
    expect(own.map((event) => event.seq)).toEqual(own.map((_, i) => i + 1));

    await child.ok({ type: "close_session", sessionId: a.sessionId });
    const prefix = a.sessionId.slice(0, 8);
    const byPrefix = await child.request({ type: "resume_session", ref: prefix });
    expect(byPrefix).toMatchObject({ success: true, sessionId: a.sessionId });
    expect(texts(await child.ok({ type: "get_messages", sessionId: a.sessionId }))).toHaveLength(4);
    const twice = await child.request({ type: "resume_session", ref: a.sessionId });
    expect(twice.success, "resuming a session this connection already holds").toBe(false);
    expect(twice.error).toMatch(new RegExp(`${a.sessionId} is already open in this connection`));

    // close_session of a session with a live prompt: the prompt is aborted, nothing of that session
    // follows the response, and the deliberate close is no failure to report on stderr.
    scripts.push({ match: "[stalls]", steps: [{ type: "stall", afterTokens: 2 }] });
    suite.server.setScript({ reply: "Mock reply.", conversations: scripts });
    const live = child.records.length;
    await child.ok({ type: "prompt", sessionId: b.sessionId, message: "[stalls] now" });
    await child.waitFor((r) => r.type === "message_update" && r.sessionId === b.sessionId, "b's first delta", live);
    const closing = await child.request({ type: "close_session", sessionId: b.sessionId });
    expect(closing).toMatchObject({ success: true, sessionId: b.sessionId });
    const at = child.records.indexOf(closing);
    await child.ok({ type: "list_sessions" });
    expect(eventsOf(child.records.slice(at), b.sessionId)).toEqual([]);
    expect(
      texts(
        await child.ok({
          type: "get_messages",
          sessionId: (await child.ok<Info>({ type: "resume_session", ref: b.sessionId })).sessionId,
        }),
      )[0],
    ).toBe("user: [stalls] now");

    child.child.stdin.end();
    expect(await within(child.exited, 15_000, "exit after EOF")).toBe(0);
    expect(child.stderr()).not.toMatch(/without settling/);
    expect(child.problems).toEqual([]);
  }, 60_000);
});

describe("pi's replacing commands", () => {
  it("fork and clone with a sessionId make a new session beside the source, which stays open", async () => {
    const child = host();
    answer("[fork source]", "source answer");
    const source = await child.ok<Info>({ type: "open_session" });
    const from = child.records.length;
    await child.ok({ type: "prompt", sessionId: source.sessionId, message: "[fork source] one" });
    await settled(child, source.sessionId, from);
    const forkable = await child.ok<{ messages: { entryId: string; text: string }[] }>({
      type: "get_fork_messages",
      sessionId: source.sessionId,
    });
    expect(forkable.messages.map((m) => m.text)).toEqual(["[fork source] one"]);

    const fork = await child.request({
      type: "fork",
      sessionId: source.sessionId,
      entryId: forkable.messages[0]?.entryId,
    });
    expect(fork).toMatchObject({
      success: true,
      sessionId: source.sessionId,
      data: { text: "[fork source] one", cancelled: false },
    });
    const forkId = (fork.data as { sessionId: string }).sessionId;
    expect(forkId).not.toBe(source.sessionId);

    const clone = await child.request({ type: "clone", sessionId: source.sessionId });
    expect(clone).toMatchObject({ success: true, sessionId: source.sessionId, data: { cancelled: false } });
    const cloneId = (clone.data as { sessionId: string }).sessionId;
    expect([source.sessionId, forkId]).not.toContain(cloneId);

    const listed = await child.ok<{ sessions: Info[] }>({ type: "list_sessions" });
    expect(listed.sessions.map((s) => s.sessionId).sort()).toEqual([source.sessionId, forkId, cloneId].sort());
    // The source is untouched; the fork stops before the chosen user message; the clone copies all.
    expect(texts(await child.ok({ type: "get_messages", sessionId: source.sessionId }))).toHaveLength(2);
    expect(texts(await child.ok({ type: "get_messages", sessionId: forkId }))).toEqual([]);
    expect(texts(await child.ok({ type: "get_messages", sessionId: cloneId }))).toEqual([
      "user: [fork source] one",
      "assistant: source answer",
    ]);
    const stored = await storedIds(child.dir);
    expect(stored).toEqual(expect.arrayContaining([source.sessionId, cloneId]));
    expect(child.problems).toEqual([]);
  }, 30_000);

  it("fork, clone, new_session and switch_session without a sessionId replace the default session as in pi; new_session naming another session is refused", async () => {
    const child = host();
    answer("[default]", "default answer");
    const other = await child.ok<Info>({ type: "open_session" });
    const from = child.records.length;
    const prompt = await child.request({ type: "prompt", message: "[default] hello" });
    const first = String(prompt.sessionId);
    await settled(child, first, from);

    const defaultId = async () => {
      const listed = await child.ok<{ sessions: Info[] }>({ type: "list_sessions" });
      expect(listed.sessions.filter((s) => s.isDefault)).toHaveLength(1);
      expect(listed.sessions.map((s) => s.sessionId)).toContain(other.sessionId);
      return listed.sessions[0]?.sessionId;
    };
    expect(await defaultId()).toBe(first);

    const clone = await child.request({ type: "clone" });
    const cloned = (clone.data as { sessionId: string }).sessionId;
    expect(clone).toMatchObject({ success: true, sessionId: cloned, data: { cancelled: false } });
    expect(cloned).not.toBe(first);
    expect(await defaultId()).toBe(cloned);
    expect(texts(await child.ok({ type: "get_messages" }))).toEqual([
      "user: [default] hello",
      "assistant: default answer",
    ]);
    // The replaced default is closed: no longer this connection's.
    expect((await child.request({ type: "get_state", sessionId: first })).success).toBe(false);

    const entry = (await child.ok<{ messages: { entryId: string }[] }>({ type: "get_fork_messages" })).messages[0]
      ?.entryId;
    const fork = await child.request({ type: "fork", entryId: entry });
    const forked = (fork.data as { sessionId: string }).sessionId;
    expect(fork).toMatchObject({ success: true, sessionId: forked, data: { text: "[default] hello" } });
    expect(await defaultId()).toBe(forked);
    expect(texts(await child.ok({ type: "get_messages" }))).toEqual([]);

    const fresh = await child.request({ type: "new_session" });
    const made = (fresh.data as { sessionId: string }).sessionId;
    expect(fresh).toMatchObject({ success: true, sessionId: made, data: { cancelled: false } });
    expect([first, cloned, forked]).not.toContain(made);
    expect(await defaultId()).toBe(made);

    const { sessionFile } = await child.ok<{ sessionFile: string }>({ type: "get_state", sessionId: other.sessionId });
    await child.ok({ type: "close_session", sessionId: other.sessionId });
    const clonedFile = (await storedFiles(child, cloned)) ?? "";
    const switched = await child.request({ type: "switch_session", sessionPath: clonedFile });
    expect(switched).toMatchObject({ success: true, sessionId: cloned, data: { cancelled: false, sessionId: cloned } });
    expect(texts(await child.ok({ type: "get_messages" }))).toHaveLength(2);

    const back = await child.ok<Info>({ type: "resume_session", ref: sessionFile });
    for (const type of ["new_session", "switch_session"] as const) {
      const refused = await child.request({
        type,
        sessionId: back.sessionId,
        ...(type === "switch_session" ? { sessionPath: clonedFile } : {}),
      });
      expect(refused).toMatchObject({ success: false, command: type, sessionId: back.sessionId });
      expect(refused.error).toMatch(/default session/);
      expect(refused.error).toMatch(type === "new_session" ? /open_session/ : /resume_session/);
    }
    // With the default's own id they act as without one.
    const own = await child.request({ type: "new_session", sessionId: cloned });
    expect(own.success, String(own.error)).toBe(true);
    expect(child.problems).toEqual([]);
  }, 30_000);
});

/** The session file of `sessionId`, resumed for a moment to read it (then closed again). */
async function storedFiles(child: HostChild, sessionId: string): Promise<string | undefined> {
  const info = await child.ok<Info>({ type: "resume_session", ref: sessionId });
  await child.ok({ type: "close_session", sessionId });
  return info.sessionFile;
}
