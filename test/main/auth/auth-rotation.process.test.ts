/**
 * Credentials on the real stack (R4, docs/auth.md): the built package, real piscina workers, pi-ai's
 * OpenAI provider, and the mock model server on 127.0.0.1, which records the key each request
 * carried. Keys come from `auth.json` in a temporary LIFELINE_DIR; the providers are models.json
 * providers without an `apiKey` of their own.
 *
 * SPEC rules: R4 (the usage-limit step: rotation, waiting, fallback), R14 (auto_retry_start).
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import {
  type AgentSession,
  createSessionHost,
  type SessionEvent,
  type SessionHost,
  type SettingsInput,
} from "../../../dist/main/index.js";
import type { MockStep } from "../../../dist/mock-server/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { spawnRpc } from "../../fixtures/rpc-child.js";

const KEY_A = "sk-lifeline-key-a-5d41402abc4b2a76";
const KEY_B = "sk-lifeline-key-b-7d793037a0760186";
const KEY_C = "sk-lifeline-key-c-9e107d9d372bb682";

const suite = mockServerSuite();
const { cleanups } = suite;

function modelsJson(): string {
  const compat = { supportsDeveloperRole: false, supportsReasoningEffort: false };
  const provider = (id: string) => ({
    baseUrl: `${suite.server.url}/v1`,
    api: "openai-completions",
    compat,
    models: [{ id }],
  });
  return JSON.stringify({ providers: { "mock-main": provider("main-1"), "mock-backup": provider("backup-1") } });
}

const AUTH = {
  "mock-main": [
    { type: "api_key", key: KEY_A },
    { type: "api_key", key: KEY_B },
  ],
  "mock-backup": { type: "api_key", key: KEY_C },
};

/** A host on the real pool whose LIFELINE_DIR holds models.json and auth.json; sessions persisted. */
function hostWith(settings: SettingsInput = {}): { host: SessionHost; dir: string } {
  const dir = tempDir(cleanups);
  writeFileSync(join(dir, "models.json"), modelsJson());
  writeFileSync(join(dir, "auth.json"), JSON.stringify(AUTH), { mode: 0o600 });
  const host = createSessionHost({
    lifelineDir: dir,
    cwd: dir,
    threads: 1,
    // A large backoff: a retry that ran with it would not finish within the test's bound.
    settings: { retry: { baseDelayMs: 600_000, ...settings.retry } },
    sessions: { dir: join(dir, "sessions") },
  });
  cleanups.push(() => host.close());
  return { host, dir };
}

let conversationCounter = 0;
const scripts: { match: string; steps: unknown[] }[] = [];
/** A prompt text unique to this run, scripted with `steps` on the mock suite.server. */
function scripted(name: string, steps: readonly (MockStep | number | string)[]): string {
  const text = `auth case ${++conversationCounter} ${name}`;
  scripts.push({ match: text, steps: [...steps] });
  suite.server.setScript({ reply: "The mock answers.", conversations: scripts });
  return text;
}

function collect(session: AgentSession): SessionEvent[] {
  const events: SessionEvent[] = [];
  session.subscribe((event) => events.push(event));
  return events;
}

/** What the mock server saw for the conversation of `text`: model and key per request. */
function requestsOf(text: string) {
  return suite.server.log
    .filter((record) => text.includes(record.conversation) && record.conversation !== "")
    .map((record) => ({ model: record.model, key: record.apiKey }));
}

describe("credentials from auth.json, rotated on limits", () => {
  it("R4: a usage-limit 429 on key A is retried on key B with no delay, and the request carries B", async () => {
    const { host } = hostWith();
    const session = await host.createSession({ model: "mock-main/main-1" });
    const events = collect(session);
    const text = scripted("rotate", [{ type: "usage_limit" }, "ok"]);
    const result = await within(session.prompt(text), 15_000, "the rotated retry");
    expect(result.stopReason).toBe("stop");
    expect(requestsOf(text)).toEqual([
      { model: "main-1", key: KEY_A },
      { model: "main-1", key: KEY_B },
    ]);
    const start = events.find((event) => event.type === "auto_retry_start");
    expect(start).toMatchObject({ type: "auto_retry_start", attempt: 1, delayMs: 0, credentialRotated: true });
    expect(start).not.toHaveProperty("model");
    // Sticky: the session's next prompt (same conversation, its steps used up) stays on B.
    const seen = suite.server.log.length;
    await within(session.prompt("and again"), 15_000, "the next prompt");
    expect(suite.server.log.slice(seen).map((record) => record.apiKey)).toEqual([KEY_B]);
  });

  it("R4: a plain 429 rate limit rotates to the sibling key as well", async () => {
    const { host } = hostWith();
    const session = await host.createSession({ model: "mock-main/main-1" });
    const text = scripted("rate limit", [429, "ok"]);
    const result = await within(session.prompt(text), 15_000, "the rotated retry");
    expect(result.stopReason).toBe("stop");
    expect(requestsOf(text).map((request) => request.key)).toEqual([KEY_A, KEY_B]);
  });

  it("R4: new sessions spread over the provider's keys", async () => {
    const { host } = hostWith();
    const first = await host.createSession({ model: "mock-main/main-1" });
    const second = await host.createSession({ model: "mock-main/main-1" });
    const one = scripted("spread one", ["ok"]);
    const two = scripted("spread two", ["ok"]);
    await within(Promise.all([first.prompt(one), second.prompt(two)]), 15_000, "both prompts");
    expect([requestsOf(one)[0]?.key, requestsOf(two)[0]?.key]).toEqual([KEY_A, KEY_B]);
  });

  it("R4: both keys blocked, the fallback model answers, auto_retry_start names it and the session file records the switch", async () => {
    const { host } = hostWith({ retry: { fallbackModels: ["mock-backup/backup-1"] } });
    const session = await host.createSession({ model: "mock-main/main-1" });
    const events = collect(session);
    const text = scripted("fallback", [{ type: "usage_limit" }, { type: "usage_limit" }, "ok"]);
    const result = await within(session.prompt(text), 15_000, "the fallback retry");
    expect(result.stopReason).toBe("stop");
    expect(result.message?.provider).toBe("mock-backup");
    expect(requestsOf(text)).toEqual([
      { model: "main-1", key: KEY_A },
      { model: "main-1", key: KEY_B },
      { model: "backup-1", key: KEY_C },
    ]);
    const starts = events.filter((event) => event.type === "auto_retry_start");
    expect(starts).toMatchObject([
      { attempt: 1, delayMs: 0, credentialRotated: true },
      { attempt: 2, delayMs: 0, model: "mock-backup/backup-1" },
    ]);
    expect(starts[0]).not.toHaveProperty("model");
    expect(starts[1]).not.toHaveProperty("credentialRotated");
    // The session stays on the fallback model, and the file says so.
    expect(`${session.model.provider}/${session.model.id}`).toBe("mock-backup/backup-1");
    await session.flushSession();
    const entries = readFileSync(session.sessionFile as string, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string; provider?: string; modelId?: string });
    expect(entries.filter((entry) => entry.type === "model_change").at(-1)).toMatchObject({
      provider: "mock-backup",
      modelId: "backup-1",
    });
  });

  it("R4: every key blocked and no fallback: the chain fails saying when the first key frees", async () => {
    const { host } = hostWith({ retry: { maxDelayMs: 60_000 } });
    const session = await host.createSession({ model: "mock-main/main-1" });
    const events = collect(session);
    const text = scripted("all blocked", [{ type: "usage_limit" }, { type: "usage_limit" }, "ok"]);
    const before = Date.now();
    const result = await within(session.prompt(text), 15_000, "the failed chain");
    expect(result.stopReason).toBe("error");
    expect(requestsOf(text).map((request) => request.key)).toEqual([KEY_A, KEY_B]);
    const end = events.find((event) => event.type === "auto_retry_end");
    expect(end).toMatchObject({ success: false, attempt: 1 });
    const finalError = (end as { finalError: string }).finalError;
    const match =
      /Every key of provider "mock-main" is blocked; the first frees at (\S+) \(in ([\d.]+)s\), above retry\.maxDelayMs \(60s\)/.exec(
        finalError,
      );
    expect(match, finalError).not.toBeNull();
    // The default block of an exhausted quota (30 min) from key A's report.
    const frees = Date.parse(match?.[1] ?? "");
    expect(frees).toBeGreaterThanOrEqual(before + 30 * 60_000 - 1000);
  });

  it("R4: keys never leak: a server that echoes the whole key leaves no key in events, results, errors, warnings or the session file", async () => {
    const written: string[] = [];
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const warnings = vi.spyOn(process, "emitWarning").mockImplementation((warning: string | Error) => {
      written.push(String(warning));
    });
    try {
      const { host, dir } = hostWith({ retry: { maxDelayMs: 60_000, fallbackModels: ["mock-backup/backup-1"] } });
      const session = await host.createSession({ model: "mock-main/main-1" });
      const events = collect(session);
      const text = scripted("echo", [
        { type: "usage_limit", echoKey: true },
        { type: "usage_limit", echoKey: true },
        { type: "usage_limit", echoKey: true },
      ]);
      const result = await within(session.prompt(text), 15_000, "the failed chain");
      expect(requestsOf(text).map((request) => request.key)).toEqual([KEY_A, KEY_B, KEY_C]);
      expect(result.errorMessage).toContain("[redacted]");
      await session.flushSession();
      const files = readdirSync(join(dir, "sessions")).map((name) => readFileSync(join(dir, "sessions", name), "utf8"));
      const captured = [
        JSON.stringify(events),
        JSON.stringify(result),
        JSON.stringify(session.messages),
        ...files,
        ...written,
      ];
      expect(files.join("")).toContain("[redacted]");
      for (const key of [KEY_A, KEY_B, KEY_C]) {
        for (const text of captured) expect(text).not.toContain(key);
      }
    } finally {
      stderr.mockRestore();
      warnings.mockRestore();
    }
  });

  it("R4: keys never leak into RPC output or stderr, and auth_list shows them masked", async () => {
    const rpc = spawnRpc(cleanups, {
      models: modelsJson(),
      files: { "auth.json": JSON.stringify(AUTH) },
      settings: { retry: { baseDelayMs: 600_000, maxDelayMs: 60_000 } },
      args: ["--model", "mock-main/main-1"],
    });
    const text = scripted("rpc echo", [
      { type: "usage_limit", echoKey: true },
      { type: "usage_limit", echoKey: true },
    ]);
    await rpc.request({ type: "prompt", message: text });
    const settled = await rpc.waitFor((record) => record.type === "agent_settled", "agent_settled");
    expect(settled).toMatchObject({ stopReason: "error" });
    const listed = await rpc.request({ type: "auth_list" });
    expect(listed).toMatchObject({
      success: true,
      data: {
        credentials: [
          { provider: "mock-main", index: 0, type: "api_key", masked: "sk-…2a76" },
          { provider: "mock-main", index: 1, type: "api_key", masked: "sk-…0186" },
          { provider: "mock-backup", index: 0, type: "api_key", masked: "sk-…b682" },
        ],
      },
    });
    const added = await rpc.request({
      type: "auth_add",
      provider: "mock-main",
      key: "sk-lifeline-key-d-0cc175b9c0f1b6a8",
    });
    expect(added).toMatchObject({ success: true, data: { provider: "mock-main", index: 2 } });
    const output = JSON.stringify(rpc.records) + rpc.stderr();
    expect(requestsOf(text).map((request) => request.key)).toEqual([KEY_A, KEY_B]);
    for (const key of [KEY_A, KEY_B, KEY_C, "sk-lifeline-key-d-0cc175b9c0f1b6a8"]) expect(output).not.toContain(key);
    expect(rpc.problems).toEqual([]);
  });
});
