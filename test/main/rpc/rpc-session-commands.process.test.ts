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
import { piPackage } from "../../fixtures/pi-package.js";
import { spawnRpc } from "../../fixtures/rpc-child.js";

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
