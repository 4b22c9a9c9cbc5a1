/**
 * A `--mode rpc` client works unchanged against `lifeline --mode host` (docs/rpc.md,
 * "Many sessions in one process"): the repository's own `RpcClient` (src/main/rpc/rpc-client.ts)
 * drives one child of the built CLI in each mode through the same exchange, and the two agree on
 * everything but the host's extra envelope fields (`sessionId`, `seq`). The client always runs
 * `cli.js --mode rpc <args>`; `args: ["--mode", "host"]` makes the later flag choose host mode.
 * Run `npm run build` first.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { RpcClient } from "../../../../src/main/rpc/rpc-client.js";
import type { RpcEvent } from "../../../../src/main/rpc/rpc-protocol.js";
import { tempDir } from "../../../fixtures/bounded.js";
import { mockServerSuite } from "../../../fixtures/mock-server-suite.js";
import { mockModelsJson } from "../../../fixtures/models.mjs";
import { CLI } from "./host-lines.js";

// Every request gets the same answer, so that the two modes' runs can be compared.
const suite = mockServerSuite({ script: { reply: "compat answer one two" } });
const { cleanups } = suite;

interface Run {
  events: RpcEvent[];
  stateKeys: string[];
  messages: string[];
  lastText: string | null;
  stats: { userMessages: number; assistantMessages: number; sessionId: string };
  afterNew: number;
  sessionId: string;
}

/** The same exchange in `--mode rpc` (`extra` empty) or host mode (`extra` = ["--mode", "host"]). */
async function exchange(extra: string[]): Promise<Run> {
  const dir = tempDir(cleanups, "lifeline-host-compat-");
  writeFileSync(join(dir, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 5 } }));
  writeFileSync(join(dir, "models.json"), mockModelsJson(suite.server.url));
  const client = new RpcClient({
    cliPath: CLI,
    cwd: dir,
    env: { LIFELINE_DIR: dir },
    provider: "mock",
    model: "mock-1",
    args: extra,
  });
  cleanups.push(() => client.stop());
  await client.start();
  const events: RpcEvent[] = [];
  client.onEvent((event) => events.push(event));
  await client.prompt("[compat] hello");
  const done = await client.waitForIdle(15_000);
  expect(done?.type).toBe("agent_settled");
  const state = await client.getState();
  const messages = (await client.getMessages()).map((message) => {
    const content = (message as { content: unknown }).content;
    const text =
      typeof content === "string" ? content : (content as { text?: string }[]).map((part) => part.text ?? "").join("");
    return `${(message as { role: string }).role}: ${text}`;
  });
  const lastText = await client.getLastAssistantText();
  const stats = await client.getSessionStats();
  await client.setSessionName("compat");
  expect((await client.newSession()).cancelled).toBe(false);
  const afterNew = (await client.getMessages()).length;
  await client.stop();
  return {
    events,
    stateKeys: Object.keys(state).sort(),
    messages,
    lastText,
    stats: { userMessages: stats.userMessages, assistantMessages: stats.assistantMessages, sessionId: stats.sessionId },
    afterNew,
    sessionId: state.sessionId,
  };
}

describe("an RPC client against --mode host", () => {
  it("gets what it gets from --mode rpc: the same events in the same order, state, messages, stats and new_session", async () => {
    const [rpc, host] = await Promise.all([exchange([]), exchange(["--mode", "host"])]);
    expect(host.events.map((event) => event.type)).toEqual(rpc.events.map((event) => event.type));
    // The host's events carry the envelope: the session's id and its sequence number from 1.
    for (const [i, event] of host.events.entries()) {
      expect(event).toMatchObject({ sessionId: host.sessionId, seq: i + 1 });
    }
    for (const event of rpc.events) expect(event).not.toHaveProperty("seq");
    expect(host.stateKeys).toEqual(rpc.stateKeys);
    expect(host.messages).toEqual(["user: [compat] hello", "assistant: compat answer one two"]);
    expect(host.messages).toEqual(rpc.messages);
    expect(host.lastText).toBe(rpc.lastText);
    expect(host.stats).toEqual({ ...rpc.stats, sessionId: host.sessionId });
    expect(host.afterNew).toBe(0);
    expect(rpc.afterNew).toBe(0);
  }, 40_000);
});
