/**
 * `lifeline --mode rpc` (docs/rpc.md) as real child processes: pi's protocol over strict JSONL, the
 * retry commands and state (R13, R14, B4, B5), and bad input that never stops the process.
 * Run `npm run build` first.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createSessionHost, type SessionEvent } from "../../../dist/main/index.js";
import { rpcCommandSchemas } from "../../../dist/main/rpc/rpc-protocol.js";
import { type MockServer, startMockServer } from "../../../dist/mock-server/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { mockModelsJson } from "../../fixtures/models.mjs";
import { type RpcRecord, spawnRpc } from "../../fixtures/rpc-child.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let server: MockServer;
beforeAll(async () => {
  server = await startMockServer({ script: { reply: "Mock reply." } });
});
afterAll(async () => {
  await server.close();
});

const SLOW_RETRIES = { retry: { baseDelayMs: 60_000 } };

function models(): string {
  return mockModelsJson(server.url);
}

const scripts: { match: string; steps: unknown[] }[] = [];
let counter = 0;
function scripted(name: string, steps: unknown[]): string {
  const text = `rpc case ${++counter} ${name}`;
  scripts.push({ match: text, steps });
  server.setScript({ reply: "Mock reply.", conversations: scripts });
  return text;
}

/** Events without what differs between runs (timestamps, ids, token usage, how deltas were merged). */
function outline(events: readonly { type: string }[]): string[] {
  return events
    .filter((event) => event.type !== "message_update" && event.type !== "response")
    .map((event) => {
      const e = event as Record<string, unknown>;
      switch (event.type) {
        case "auto_retry_start":
          return `auto_retry_start ${e.attempt}/${e.maxAttempts} ${e.delayMs} ${e.errorMessage}`;
        case "auto_retry_end":
          return `auto_retry_end ${e.success} ${e.attempt} ${e.finalError ?? ""}`;
        case "agent_end":
          return `agent_end willRetry=${e.willRetry}`;
        case "agent_settled":
          return `agent_settled ${e.stopReason} retries=${e.retries}`;
        case "message_start":
        case "message_end": {
          const message = e.message as { role: string; stopReason?: string; errorMessage?: string };
          return `${event.type} ${message.role} ${message.stopReason ?? ""} ${message.errorMessage ?? ""}`.trim();
        }
        default:
          return event.type;
      }
    });
}

const isSettled = (record: RpcRecord) => record.type === "agent_settled";

describe("lifeline --mode rpc", () => {
  it("R14/B4: the RPC event transcript of a fault scenario matches the library's for the same scenario", async () => {
    const rpc = spawnRpc(cleanups, { models: models(), args: ["--provider", "mock", "--model", "mock-1"] });
    const text = scripted("transcript", [503, { type: "error", status: 429, retryAfter: 1 }, "ok"]);
    const response = await rpc.request({ type: "prompt", message: text });
    expect(response).toMatchObject({ type: "response", command: "prompt", success: true });
    await rpc.waitFor(isSettled, "agent_settled");

    const dir = tempDir(cleanups);
    writeFileSync(join(dir, "models.json"), models());
    const host = createSessionHost({ lifelineDir: dir, cwd: dir, threads: 1, settings: { retry: { baseDelayMs: 5 } } });
    cleanups.push(() => host.close());
    const session = await host.createSession({ model: "mock/mock-1" });
    const events: SessionEvent[] = [];
    session.subscribe((event) => events.push(event));
    const libraryText = scripted("transcript", [503, { type: "error", status: 429, retryAfter: 1 }, "ok"]);
    await within(session.prompt(libraryText), 15_000, "the library prompt");

    const rpcOutline = outline(rpc.records).map((line) => line.replace(text, "PROMPT"));
    const libraryOutline = outline(events).map((line) => line.replace(libraryText, "PROMPT"));
    expect(rpcOutline).toEqual(libraryOutline);
    expect(rpcOutline.filter((line) => line.startsWith("auto_retry"))).toHaveLength(3);
    expect(rpcOutline.at(-1)).toBe("agent_settled stop retries=2");
    expect(rpc.problems).toEqual([]);
  });

  it("B4: get_state during the backoff sleep reports the chain and is not idle; a second prompt is refused with its id, or queued as a follow-up", async () => {
    const rpc = spawnRpc(cleanups, { settings: SLOW_RETRIES, args: ["--model", "demo/demo-fast"] });
    await rpc.request({ type: "prompt", message: "first [fail=1]" });
    await rpc.waitFor((r) => r.type === "auto_retry_start", "auto_retry_start");
    const state = await rpc.request({ type: "get_state" });
    expect(state.data).toMatchObject({
      isRetrying: true,
      retryAttempt: 1,
      isIdle: false,
      isStreaming: false,
      autoRetryEnabled: true,
      pendingMessageCount: 0,
    });
    const refused = await rpc.request({ type: "prompt", message: "second" });
    expect(refused).toMatchObject({ success: false, command: "prompt" });
    expect(String(refused.error)).toContain("retry chain (attempt 1)");
    expect(refused.id).toMatch(/^t\d+$/);

    const queued = await rpc.request({ type: "prompt", message: "second, later", streamingBehavior: "followUp" });
    expect(queued).toMatchObject({ success: true });
    expect((await rpc.request({ type: "get_state" })).data).toMatchObject({ pendingMessageCount: 1 });
    // Cut the 60 s sleep short: the chain ends as cancelled, and the follow-up is still queued.
    await rpc.request({ type: "abort_retry" });
    await rpc.waitFor(isSettled, "agent_settled");
    // The next prompt delivers the queued follow-up after its own answer.
    const from = rpc.records.length;
    await rpc.request({ type: "prompt", message: "third" });
    await rpc.waitFor(isSettled, "the third prompt's agent_settled", from);
    const users = rpc.records
      .slice(from)
      .filter((r) => r.type === "message_end" && (r.message as { role: string }).role === "user")
      .map((r) => ((r.message as { content: { text: string }[] }).content[0]?.text ?? "") as string);
    expect(users).toEqual(["third", "second, later"]);
    expect((await rpc.request({ type: "get_state" })).data).toMatchObject({ pendingMessageCount: 0, isIdle: true });
  });

  it("B8 B4: auto_retry_end carries its reason, and get_state shows the host's budget, gate and permits", async () => {
    const settings = {
      retry: {
        baseDelayMs: 5,
        budget: { ratio: 0, minPerSecond: 0.1, windowMs: 10_000 },
        coordinate: true,
        maxConcurrentRequests: 3,
      },
    };
    const rpc = spawnRpc(cleanups, { settings, args: ["--model", "demo/demo-fast"] });
    expect((await rpc.request({ type: "get_state" })).data).toMatchObject({
      retryBudget: { deposits: 0, withdrawals: 0, available: 1 },
      providerGate: { closed: false, reopensInMs: 0 },
      requestPermits: { limit: 3, inUse: 0, waiting: 0 },
    });
    await rpc.request({ type: "prompt", message: "x [fail=3]" });
    const end = await rpc.waitFor((r) => r.type === "auto_retry_end", "auto_retry_end");
    expect(end).toMatchObject({ success: false, attempt: 1, reason: "budget_exhausted" });
    await rpc.waitFor(isSettled, "agent_settled");
    expect((await rpc.request({ type: "get_state" })).data).toMatchObject({
      retryBudget: { deposits: 1, withdrawals: 1, available: 0 },
    });
  });

  it("steer while streaming delivers the message before the agent's next model call, in the same run", async () => {
    const rpc = spawnRpc(cleanups, { args: ["--model", "demo/demo-stream"] });
    await rpc.request({ type: "prompt", message: "tell me a story [words=40]" });
    await rpc.waitFor((r) => r.type === "message_update", "the answer streaming");
    const steered = await rpc.request({ type: "steer", message: "and make it short" });
    expect(steered).toMatchObject({ success: true, command: "steer" });
    expect((await rpc.request({ type: "get_state" })).data).toMatchObject({
      pendingMessageCount: 1,
      isStreaming: true,
    });
    await rpc.waitFor(isSettled, "agent_settled", 0, 20_000);
    const roles = rpc.records.filter((r) => r.type === "message_end").map((r) => (r.message as { role: string }).role);
    expect(roles).toEqual(["user", "assistant", "user", "assistant"]);
    expect(rpc.records.filter((r) => r.type === "agent_end")).toHaveLength(1);
    expect((await rpc.request({ type: "get_state" })).data).toMatchObject({ pendingMessageCount: 0 });
  });

  it("R13: abort_retry during the sleep ends the chain with 'Retry cancelled' and the prompt settles", async () => {
    const rpc = spawnRpc(cleanups, { settings: SLOW_RETRIES, args: ["--model", "demo/demo-fast"] });
    await rpc.request({ type: "prompt", message: "x [fail=3]" });
    await rpc.waitFor((r) => r.type === "auto_retry_start", "auto_retry_start");
    const response = await rpc.request({ type: "abort_retry" });
    expect(response).toEqual({ id: response.id, type: "response", command: "abort_retry", success: true });
    const end = await rpc.waitFor((r) => r.type === "auto_retry_end", "auto_retry_end");
    expect(end).toEqual({
      type: "auto_retry_end",
      success: false,
      attempt: 1,
      reason: "cancelled",
      finalError: "Retry cancelled",
    });
    const settled = await rpc.waitFor(isSettled, "agent_settled");
    // The cancelled retry sent no request: it is not among the prompt's retries.
    expect(settled).toMatchObject({ stopReason: "error", retries: 0 });
    expect((await rpc.request({ type: "get_state" })).data).toMatchObject({ isRetrying: false, isIdle: true });
  });

  it("R13: abort_retry during a retried attempt ends the chain; the attempt's result is final; abort stops it", async () => {
    const rpc = spawnRpc(cleanups, { models: models(), args: ["--model", "mock/mock-1"] });
    const text = scripted("retried attempt", [503, { type: "stall", afterTokens: 1 }]);
    await rpc.request({ type: "prompt", message: text });
    const retryStart = await rpc.waitFor((r) => r.type === "auto_retry_start", "auto_retry_start");
    const after = rpc.records.indexOf(retryStart);
    await rpc.waitFor((r) => r.type === "message_update", "the retried attempt streaming", after);
    await rpc.request({ type: "abort_retry" });
    const end = await rpc.waitFor((r) => r.type === "auto_retry_end", "auto_retry_end");
    expect(end).toMatchObject({ success: false, finalError: "Retry cancelled" });
    expect((await rpc.request({ type: "get_state" })).data).toMatchObject({ isRetrying: false, isStreaming: true });
    await rpc.request({ type: "abort" });
    const settled = await rpc.waitFor(isSettled, "agent_settled");
    expect(settled).toMatchObject({ stopReason: "aborted" });
    expect(server.requests(text)).toBe(2);
  });

  it("B5: set_auto_retry false stops retries for this session only and writes no settings", async () => {
    const rpc = spawnRpc(cleanups, { args: ["--model", "demo/demo-fast"] });
    const response = await rpc.request({ type: "set_auto_retry", enabled: false });
    expect(response).toMatchObject({ success: true, command: "set_auto_retry" });
    await rpc.request({ type: "prompt", message: "x [fail=1]" });
    const settled = await rpc.waitFor(isSettled, "agent_settled");
    expect(settled).toMatchObject({ stopReason: "error", retries: 0 });
    expect(rpc.records.some((r) => r.type === "auto_retry_start")).toBe(false);
    expect((await rpc.request({ type: "get_state" })).data).toMatchObject({ autoRetryEnabled: false });
    expect(JSON.parse(readFileSync(join(rpc.dir, "settings.json"), "utf8"))).toEqual({ retry: { baseDelayMs: 5 } });
  });

  it("answers get_messages, get_last_assistant_text, get_available_models, set_model and new_session", async () => {
    const rpc = spawnRpc(cleanups, { models: models(), args: ["--model", "demo/demo-fast"] });
    expect((await rpc.request({ type: "get_last_assistant_text" })).data).toEqual({});
    await rpc.request({ type: "prompt", message: "hello [words=3]" });
    await rpc.waitFor(isSettled, "agent_settled");
    const text = (await rpc.request({ type: "get_last_assistant_text" })).data as { text: string };
    expect(text.text).toMatch(/\S/);
    const messages = (await rpc.request({ type: "get_messages" })).data as { messages: { role: string }[] };
    expect(messages.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const available = (await rpc.request({ type: "get_available_models" })).data as {
      models: { provider: string; id: string }[];
    };
    const names = available.models.map((m) => `${m.provider}/${m.id}`);
    expect(names).toEqual(expect.arrayContaining(["demo/demo-1", "demo/demo-fast", "mock/mock-1"]));
    const switched = await rpc.request({ type: "set_model", provider: "mock", modelId: "mock-1" });
    expect(switched).toMatchObject({ success: true, data: { provider: "mock", id: "mock-1" } });
    const unknown = await rpc.request({ type: "set_model", provider: "mock", modelId: "nope" });
    expect(unknown).toMatchObject({ success: false });
    expect(String(unknown.error)).toContain("Available: mock-1");
    // The mock keys a conversation by its first user message, which was the demo prompt.
    const before = server.stats().total;
    await rpc.request({ type: "prompt", message: "now the mock" });
    await rpc.waitFor(
      (r) => isSettled(r) && (r.message as { model?: string } | undefined)?.model === "mock-1",
      "the mock answer",
    );
    expect(server.stats().total).toBe(before + 1);
    expect((await rpc.request({ type: "get_last_assistant_text" })).data).toEqual({ text: "Mock reply." });
    const fresh = await rpc.request({ type: "new_session" });
    expect(fresh).toMatchObject({ success: true, data: { cancelled: false } });
    const state = (await rpc.request({ type: "get_state" })).data as { messageCount: number; model: { id: string } };
    expect(state.messageCount).toBe(0);
    expect(state.model.id).toBe("mock-1");
  });

  it("EOF on stdin shuts down cleanly with exit 0; SIGTERM with 143", async () => {
    const rpc = spawnRpc(cleanups, { args: ["--model", "demo/demo-fast"] });
    await rpc.request({ type: "get_state" });
    rpc.child.stdin.end();
    expect(await within(rpc.exited, 10_000, "exit after EOF")).toBe(0);
    const other = spawnRpc(cleanups, { args: ["--model", "demo/demo-fast"] });
    await other.request({ type: "get_state" });
    other.child.kill("SIGTERM");
    expect(await within(other.exited, 10_000, "exit after SIGTERM")).toBe(143);
  });

  it("an unknown model at start exits 2 with the reason on stderr and nothing on stdout", async () => {
    const rpc = spawnRpc(cleanups, { args: ["--model", "demo/nope"] });
    expect(await within(rpc.exited, 10_000, "exit")).toBe(2);
    expect(rpc.stderr()).toContain('Unknown model "nope"');
    expect(rpc.records).toEqual([]);
  });

  describe("bad input", () => {
    it.each([
      ["malformed JSON", '{"type": "get_state", "id": "a1"', "a1", "parse", "Failed to parse command"],
      ["an array", "[1, 2]", undefined, "parse", "a command is a JSON object"],
      ["an unknown command", '{"type": "fly", "id": "a2"}', "a2", "fly", "Unknown command: fly"],
      [
        "a command named like an inherited property (regression: it crashed the process)",
        '{"type": "toString", "id": "a9"}',
        "a9",
        "toString",
        "Unknown command: toString",
      ],
      ["a command named __proto__", '{"type": "__proto__", "id": "a10"}', "a10", "__proto__", "Unknown command"],
      ["no type", '{"id": "a3"}', "a3", "parse", 'no string "type"'],
      [
        "a wrongly typed field",
        '{"type": "set_auto_retry", "enabled": "yes", "id": "a4"}',
        "a4",
        "set_auto_retry",
        "enabled",
      ],
      ["a missing field", '{"type": "set_model", "provider": "demo", "id": "a5"}', "a5", "set_model", "modelId"],
      ["an empty message", '{"type": "prompt", "message": "", "id": "a7"}', "a7", "prompt", "message"],
    ])(
      "%s gets an error response naming the problem, with the id when readable",
      async (_what, line, id, command, detail) => {
        const rpc = spawnRpc(cleanups, { args: ["--model", "demo/demo-fast"] });
        rpc.send(`${line}\n`);
        const response = await rpc.waitFor((r) => r.type === "response", "the error response");
        expect(response).toMatchObject({ type: "response", command, success: false });
        expect(response.id).toBe(id);
        expect(String(response.error)).toContain(detail);
        expect((await rpc.request({ type: "get_state" })).success).toBe(true);
      },
    );

    it("a line of several megabytes is refused with its id and the process keeps serving", async () => {
      const rpc = spawnRpc(cleanups, { args: ["--model", "demo/demo-fast"] });
      rpc.send(`{"id": "huge", "type": "prompt", "message": "${"x".repeat(9 * 1024 * 1024)}"}\n`);
      const response = await rpc.waitFor((r) => r.id === "huge", "the oversize response");
      expect(response).toMatchObject({ success: false, command: "parse" });
      expect(String(response.error)).toContain("exceeds the limit");
      expect((await rpc.request({ type: "get_state" })).success).toBe(true);
    });

    it("a partial line at EOF gets an error response and is not run", async () => {
      const rpc = spawnRpc(cleanups, { args: ["--model", "demo/demo-fast"] });
      await rpc.request({ type: "get_state" });
      rpc.send('{"id": "tail", "type": "prompt", "message": "never run"}');
      rpc.child.stdin.end();
      expect(await within(rpc.exited, 10_000, "exit")).toBe(0);
      const response = rpc.records.find((r) => r.id === "tail");
      expect(response).toMatchObject({ success: false, command: "parse" });
      expect(String(response?.error)).toContain("newline");
      expect(rpc.records.some((r) => r.type === "agent_start")).toBe(false);
    });

    it("thousands of random and malformed lines each get one response, then a valid prompt is answered", async () => {
      const harmless = (line: string) => {
        try {
          const value = JSON.parse(line) as { type?: unknown };
          const type = value?.type;
          if (typeof type !== "string" || !(type in rpcCommandSchemas)) return true;
          const parsed = rpcCommandSchemas[type as keyof typeof rpcCommandSchemas].safeParse(value);
          return !parsed.success || type === "get_state" || type === "get_messages";
        } catch {
          return true;
        }
      };
      const commandLike = fc.record(
        {
          type: fc.oneof(fc.constantFrom(...Object.keys(rpcCommandSchemas)), fc.string()),
          id: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
          message: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
          enabled: fc.oneof(fc.boolean(), fc.string(), fc.integer()),
          streamingBehavior: fc.string(),
        },
        { requiredKeys: [] },
      );
      const lineArb = fc.oneof(
        fc.string({ unit: "binary", maxLength: 200 }),
        fc.json({ maxDepth: 3 }),
        commandLike.map((value) => JSON.stringify(value)),
        commandLike.map((value) => JSON.stringify(value).slice(0, -1)),
      );
      const lines = fc
        .sample(lineArb, { numRuns: 3000, seed: 4 })
        .map((line) => line.replaceAll("\n", " "))
        .filter((line) => line.replace(/\r$/, "").trim() !== "" && harmless(line.replace(/\r$/, "")));
      expect(lines.length).toBeGreaterThan(2000);
      const rpc = spawnRpc(cleanups, { args: ["--model", "demo/demo-fast"] });
      rpc.send(`${lines.join("\n")}\n`);
      const answer = await rpc.request({ type: "prompt", message: "still there?" }, 60_000);
      expect(answer).toMatchObject({ success: true });
      await rpc.waitFor(isSettled, "the valid prompt's agent_settled", 0, 30_000);
      const responses = rpc.records.filter((r) => r.type === "response");
      expect(responses).toHaveLength(lines.length + 1);
      expect(rpc.problems).toEqual([]);
    }, 120_000);
  });

  it("stdout carries protocol records only, even when a worker writes to its console", async () => {
    const rpc = spawnRpc(cleanups, {
      args: ["--model", "demo/demo-fast"],
      nodeArgs: ["--import", new URL("../../fixtures/noisy-worker.mjs", import.meta.url).href],
    });
    await rpc.request({ type: "prompt", message: "hello" });
    await rpc.waitFor(isSettled, "agent_settled");
    await rpc.request({ type: "get_state" });
    expect(rpc.problems).toEqual([]);
    rpc.child.stdin.end();
    await within(rpc.exited, 10_000, "exit");
    expect(rpc.stderr()).toContain("noise from a worker thread");
  });
});
