/**
 * pi's session commands in `lifeline --mode rpc` (docs/rpc.md), against real child processes of
 * the built CLI and the mock model server: `get_session_stats` in pi's `SessionStats` shape, with
 * failed attempts' usage counted. pi's own declaration files are read to check the shapes (pi is
 * installed outside the repository by the suite's global setup; see test/fixtures/pi-package.ts).
 * Run `npm run build` first.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { RpcClient } from "../../../src/main/rpc/rpc-client.js";
import { tempDir } from "../../fixtures/bounded.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { piPackage, piSessionManager } from "../../fixtures/pi-package.js";
import { type RpcRecord, spawnRpc } from "../../fixtures/rpc-child.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));
const suite = mockServerSuite({ script: { reply: "Mock reply." } });
const { cleanups } = suite;

/** Prices per million tokens of the Anthropic-format mock model, so that cost is checked too. */
const PRICE = { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 };
const CONTEXT_WINDOW = 200_000;

/** models.json: provider "mocka", Anthropic messages against the suite's mock server. */
function anthropicModels(): string {
  return JSON.stringify({
    providers: {
      mocka: {
        baseUrl: suite.server.url,
        api: "anthropic-messages",
        apiKey: "mock-key",
        models: [{ id: "mock-a", cost: PRICE, contextWindow: CONTEXT_WINDOW }],
      },
    },
  });
}

const scripts: { match: string; steps: unknown[] }[] = [];
let counter = 0;
/** A prompt text whose conversation gets `steps`. */
function scripted(name: string, steps: unknown[]): string {
  const text = `session commands ${++counter} ${name}`;
  scripts.push({ match: text, steps });
  suite.server.setScript({ reply: "Mock reply.", conversations: scripts });
  return text;
}

/** A client of the built CLI with its own LIFELINE_DIR and cwd; stopped after the test. */
async function startClient(args: string[] = ["--provider", "mocka", "--model", "mock-a"]): Promise<RpcClient> {
  const dir = tempDir(cleanups, "lifeline-rpc-session-");
  writeFileSync(join(dir, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 5 } }));
  writeFileSync(join(dir, "models.json"), anthropicModels());
  const client = new RpcClient({ cliPath: CLI, cwd: dir, env: { LIFELINE_DIR: dir }, args });
  cleanups.push(() => client.stop());
  await client.start();
  return client;
}

/** The field names of `interface <name> { … }` in one of pi's declaration files, nested blocks skipped. */
function piFields(file: string, name: string): string[] {
  const text = readFileSync(join(piPackage(), "dist", file), "utf8");
  const start = text.indexOf(`export interface ${name} {`);
  expect(start, `pi declares ${name} in ${file}`).toBeGreaterThanOrEqual(0);
  const fields: string[] = [];
  let depth = 0;
  for (const line of text.slice(start).split("\n").slice(1)) {
    if (depth === 0 && line.trim() === "}") break;
    const field = /^\s*(\w+)\??:/.exec(line);
    if (depth === 0 && field?.[1] !== undefined) fields.push(field[1]);
    depth += (line.match(/{/g) ?? []).length - (line.match(/}/g) ?? []).length;
  }
  return fields;
}

describe("get_session_stats", () => {
  it("sums the usage the mock server reported over every attempt, the failed ones included, in pi's SessionStats shape", async () => {
    const client = await startClient();
    // A stream that fails after Anthropic's message_start reported usage, a 429 that reports
    // none, then the answer.
    const text = scripted("stats", [{ type: "stream_error", afterTokens: 2 }, 429, { type: "ok", tokens: 6 }]);
    const { settled } = await client.promptAndWait(text, 20_000);
    expect(settled).toMatchObject({ stopReason: "stop", retries: 2 });

    const records = suite.server.log.filter((record) => record.conversation.includes(text));
    expect(records.map((record) => record.step)).toEqual(["stream_error", "error", "ok"]);
    const failedUsage = records[0]?.usage;
    expect(failedUsage?.input).toBeGreaterThan(0);
    expect(records[1]?.usage).toBeUndefined();
    const input = records.reduce((sum, record) => sum + (record.usage?.input ?? 0), 0);
    const output = records.reduce((sum, record) => sum + (record.usage?.output ?? 0), 0);

    const stats = await client.getSessionStats();
    const state = await client.getState();
    expect(stats).toEqual({
      sessionFile: state.sessionFile,
      sessionId: state.sessionId,
      userMessages: 1,
      assistantMessages: 3,
      toolCalls: 0,
      toolResults: 0,
      totalMessages: 4,
      tokens: { input, output, cacheRead: 0, cacheWrite: 0, total: input + output },
      cost: expect.closeTo((input * PRICE.input + output * PRICE.output) / 1_000_000, 12),
      contextUsage: {
        tokens: (records[2]?.usage?.input ?? 0) + (records[2]?.usage?.output ?? 0),
        contextWindow: CONTEXT_WINDOW,
        percent: expect.any(Number),
      },
    });
    // The failed attempt counts: the successful reply alone reported less.
    expect(input).toBeGreaterThan(records[2]?.usage?.input ?? 0);

    // Field by field against pi 0.73.1's declarations.
    expect(Object.keys(stats).sort()).toEqual(piFields("core/agent-session.d.ts", "SessionStats").sort());
    expect(Object.keys(stats.tokens).sort()).toEqual(["cacheRead", "cacheWrite", "input", "output", "total"]);
    expect(Object.keys(stats.contextUsage ?? {}).sort()).toEqual(
      piFields("core/extensions/types.d.ts", "ContextUsage").sort(),
    );
  });

  it("leaves sessionFile out of the JSON with --no-session, as pi's JSON.stringify does", async () => {
    const rpc = spawnRpc(cleanups, { args: ["--no-session"] });
    const response = await rpc.request({ type: "get_session_stats" });
    expect(response).toMatchObject({ type: "response", command: "get_session_stats", success: true });
    const data = response.data as Record<string, unknown>;
    expect("sessionFile" in data).toBe(false);
    expect(data).toMatchObject({ userMessages: 0, totalMessages: 0, cost: 0 });
  });
});

/** models.json: provider "mock" (OpenAI format, the suite's server) with two models. */
function twoMockModels(): string {
  return JSON.stringify({
    providers: {
      mock: {
        baseUrl: `${suite.server.url}/v1`,
        api: "openai-completions",
        apiKey: "mock-key",
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: "mock-1" }, { id: "mock-2" }],
      },
    },
  });
}

const isSettled = (record: RpcRecord) => record.type === "agent_settled";

describe("cycle_model", () => {
  it("steps through the models get_available_models lists, wrapping around, and the next request uses the new one", async () => {
    const rpc = spawnRpc(cleanups, { models: twoMockModels(), args: ["--provider", "mock", "--model", "mock-1"] });
    const listed = (await rpc.request({ type: "get_available_models" })).data as {
      models: { provider: string; id: string }[];
    };
    const names = listed.models.map((model) => `${model.provider}/${model.id}`);
    const start = names.indexOf("mock/mock-1");
    expect(start).toBeGreaterThanOrEqual(0);
    const seen: string[] = [];
    for (let i = 1; i <= names.length; i++) {
      const response = await rpc.request({ type: "cycle_model" });
      expect(response).toMatchObject({ success: true, data: { thinkingLevel: "off", isScoped: false } });
      const model = (response.data as { model: { provider: string; id: string } }).model;
      seen.push(`${model.provider}/${model.id}`);
      const state = (await rpc.request({ type: "get_state" })).data as { model: { provider: string; id: string } };
      expect(`${state.model.provider}/${state.model.id}`).toBe(seen.at(-1));
      if (i === 1) {
        // mock-2 follows mock-1 in models.json: the next prompt is sent to it.
        expect(seen[0]).toBe("mock/mock-2");
        const text = scripted("cycled", ["ok"]);
        await rpc.request({ type: "prompt", message: text });
        await rpc.waitFor(isSettled, "agent_settled");
        expect(suite.server.log.filter((record) => record.conversation.includes(text)).map((r) => r.model)).toEqual([
          "mock-2",
        ]);
      }
    }
    expect(seen).toEqual(names.map((_, i) => names[(start + 1 + i) % names.length]));
    expect(seen.at(-1)).toBe("mock/mock-1");
  });
});

describe("set_steering_mode, set_follow_up_mode", () => {
  it("set the modes get_state reports, and refuse another mode naming the field", async () => {
    const client = await startClient();
    expect(await client.getState()).toMatchObject({ steeringMode: "one-at-a-time", followUpMode: "one-at-a-time" });
    await client.setSteeringMode("all");
    expect(await client.getState()).toMatchObject({ steeringMode: "all", followUpMode: "one-at-a-time" });
    await client.setFollowUpMode("all");
    await client.setSteeringMode("one-at-a-time");
    expect(await client.getState()).toMatchObject({ steeringMode: "one-at-a-time", followUpMode: "all" });
    await expect(client.setFollowUpMode("each" as "all")).rejects.toMatchObject({
      code: "ERR_RPC_FAILED",
      message: expect.stringContaining("Invalid set_follow_up_mode: mode:"),
    });
  });
});

describe("set_session_name", () => {
  it("stores pi's session_info entry, which pi and a resume read back, announces session_info_changed, and refuses a blank name", async () => {
    const rpc = spawnRpc(cleanups, { args: ["--model", "demo/demo-fast"] });
    const named = await rpc.request({ type: "set_session_name", name: "  Release notes  " });
    expect(named).toMatchObject({ success: true, command: "set_session_name" });
    expect(named.data).toBeUndefined();
    expect(await rpc.waitFor((r) => r.type === "session_info_changed", "session_info_changed")).toEqual({
      type: "session_info_changed",
      name: "Release notes",
    });
    const state = (await rpc.request({ type: "get_state" })).data as { sessionName?: string; sessionFile: string };
    expect(state.sessionName).toBe("Release notes");

    const blank = await rpc.request({ type: "set_session_name", name: "   " });
    expect(blank).toMatchObject({ success: false, error: expect.stringContaining("Session name cannot be empty") });

    // Stored: a resume of the file (switch_session) reads the name back, and so does pi.
    await rpc.request({ type: "prompt", message: "remember me" });
    await rpc.waitFor(isSettled, "agent_settled");
    await rpc.request({ type: "new_session" });
    expect(((await rpc.request({ type: "get_state" })).data as { sessionName?: string }).sessionName).toBeUndefined();
    expect(await rpc.request({ type: "switch_session", sessionPath: state.sessionFile })).toMatchObject({
      success: true,
    });
    expect(((await rpc.request({ type: "get_state" })).data as { sessionName?: string }).sessionName).toBe(
      "Release notes",
    );
    const SessionManager = await piSessionManager();
    const pi = SessionManager.open(state.sessionFile) as unknown as { getSessionName(): string | undefined };
    expect(pi.getSessionName()).toBe("Release notes");
  });
});

describe("get_commands", () => {
  it("answers pi's shape with no commands: lifeline has no extension commands, prompt templates or skills", async () => {
    const client = await startClient(["--model", "demo/demo-fast", "--no-session"]);
    expect(await client.getCommands()).toEqual([]);
  });
});

/** A session file's header and entries. */
function readSession(file: string): { header: Record<string, unknown>; entries: { id: string; type: string }[] } {
  const [header, ...entries] = readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { id: string; type: string });
  return { header: header as unknown as Record<string, unknown>, entries };
}

describe("fork, clone, get_fork_messages", () => {
  it("fork writes a new file with the path before the chosen user message, its parent named as pi names it, which pi opens to the same messages", async () => {
    const rpc = spawnRpc(cleanups, { args: ["--model", "demo/demo-fast"] });
    for (const message of ["first question", "second question"]) {
      const from = rpc.records.length;
      await rpc.request({ type: "prompt", message });
      await rpc.waitFor(isSettled, `agent_settled of ${message}`, from);
    }
    const before = (await rpc.request({ type: "get_state" })).data as { sessionFile: string; sessionId: string };
    const listed = (await rpc.request({ type: "get_fork_messages" })).data as {
      messages: { entryId: string; text: string }[];
    };
    expect(listed.messages.map((m) => m.text)).toEqual(["first question", "second question"]);
    const second = listed.messages[1] as { entryId: string };

    const forked = await rpc.request({ type: "fork", entryId: second.entryId });
    expect(forked).toMatchObject({ success: true, data: { text: "second question", cancelled: false } });
    // The original session was flushed and closed by the fork.
    const original = readSession(before.sessionFile);
    expect(original.entries.some((entry) => entry.id === second.entryId)).toBe(true);
    const after = (await rpc.request({ type: "get_state" })).data as { sessionFile: string; sessionId: string };
    expect(after.sessionFile).not.toBe(before.sessionFile);
    expect(after.sessionId).not.toBe(before.sessionId);
    const messages = ((await rpc.request({ type: "get_messages" })).data as { messages: { role: string }[] }).messages;
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);

    const fork = readSession(after.sessionFile);
    expect(fork.header).toMatchObject({
      type: "session",
      version: 3,
      id: after.sessionId,
      parentSession: before.sessionFile,
    });
    const cut = original.entries.findIndex((entry) => entry.id === second.entryId);
    expect(fork.entries.map((entry) => entry.id)).toEqual(original.entries.slice(0, cut).map((entry) => entry.id));

    const SessionManager = await piSessionManager();
    const pi = SessionManager.open(after.sessionFile);
    expect(pi.buildSessionContext().messages).toEqual(messages);
    expect((pi as unknown as { getHeader(): { parentSession?: string } }).getHeader().parentSession).toBe(
      before.sessionFile,
    );

    // The fork is the live session: the next prompt goes to its file, the original is left as it was.
    const from = rpc.records.length;
    await rpc.request({ type: "prompt", message: "third question" });
    await rpc.waitFor(isSettled, "agent_settled of the fork's prompt", from);
    expect(readSession(before.sessionFile).entries).toEqual(original.entries);
    expect(readSession(after.sessionFile).entries.length).toBeGreaterThan(fork.entries.length);
  });

  it("clone copies the whole path into a new file whose parent is the current one; bad entry ids and unpersisted sessions are refused", async () => {
    const rpc = spawnRpc(cleanups, { args: ["--model", "demo/demo-fast"] });
    await rpc.request({ type: "prompt", message: "only question" });
    await rpc.waitFor(isSettled, "agent_settled");
    const before = (await rpc.request({ type: "get_state" })).data as { sessionFile: string };
    const messages = (await rpc.request({ type: "get_messages" })).data;

    expect(await rpc.request({ type: "clone" })).toMatchObject({ success: true, data: { cancelled: false } });
    const original = readSession(before.sessionFile);
    const after = (await rpc.request({ type: "get_state" })).data as { sessionFile: string };
    expect(after.sessionFile).not.toBe(before.sessionFile);
    expect((await rpc.request({ type: "get_messages" })).data).toEqual(messages);
    const clone = readSession(after.sessionFile);
    expect(clone.header.parentSession).toBe(before.sessionFile);
    expect(clone.entries).toEqual(original.entries);

    const assistantEntry = clone.entries.find(
      (entry) =>
        entry.type === "message" && (entry as unknown as { message: { role: string } }).message.role === "assistant",
    );
    for (const entryId of ["nope", assistantEntry?.id ?? ""]) {
      const refused = await rpc.request({ type: "fork", entryId });
      expect(refused).toMatchObject({ success: false, error: expect.stringContaining("Invalid entry ID for forking") });
    }
    expect(((await rpc.request({ type: "get_state" })).data as { sessionFile: string }).sessionFile).toBe(
      after.sessionFile,
    );

    const unpersisted = spawnRpc(cleanups, { args: ["--model", "demo/demo-fast", "--no-session"] });
    const noFile = await unpersisted.request({ type: "get_fork_messages" });
    expect(noFile).toMatchObject({ success: false, error: expect.stringContaining("needs a persisted session") });
  });
});
