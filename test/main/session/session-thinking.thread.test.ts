/**
 * Thinking levels on the real stack (pi's levels and rules): the built package, a real piscina
 * worker, pi-ai's OpenAI-completions and Anthropic providers, and the mock model server on
 * 127.0.0.1, which records the reasoning parameters each request carried. Models come from a
 * models.json, as users configure them. Run `npm run build` first.
 */
import { writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  type AgentSession,
  createSessionHost,
  type SessionEvent,
  type SessionHost,
  type ThinkingLevel,
} from "../../../dist/main/index.js";
import type { MockRequestRecord } from "../../../dist/mock-server/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";

const EXIT_MODULE = new URL("../../fixtures/exit-on-flag.mjs", import.meta.url);
const LEVELS: ThinkingLevel[] = ["off", "minimal", "low", "medium", "high", "xhigh"];

const suite = mockServerSuite();
const { cleanups } = suite;

/** OpenAI-completions models (one with pi's xhigh, one without reasoning) and an Anthropic one. */
function modelsJson(): string {
  return JSON.stringify({
    providers: {
      "mock-openai": {
        baseUrl: `${suite.server.url}/v1`,
        api: "openai-completions",
        apiKey: "mock-key",
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: true },
        models: [{ id: "reasoner", reasoning: true, thinkingLevelMap: { xhigh: "xhigh" } }, { id: "plain" }],
      },
      "mock-anthropic": {
        baseUrl: suite.server.url,
        api: "anthropic-messages",
        apiKey: "mock-key",
        models: [{ id: "reasoner", reasoning: true, maxTokens: 64_000 }],
      },
    },
  });
}

function hostWith(): SessionHost {
  const dir = tempDir(cleanups);
  writeFileSync(`${dir}/models.json`, modelsJson());
  const host = createSessionHost({
    lifelineDir: dir,
    cwd: dir,
    threads: 1,
    settings: { retry: { baseDelayMs: 5 } },
  });
  cleanups.push(() => host.close());
  return host;
}

const scripts: { match: string; steps: unknown[] }[] = [];
let counter = 0;
/** A prompt text of its own (the mock's conversation key), scripted with `steps` when given. */
function conversation(name: string, steps?: unknown[]): string {
  const text = `thinking case ${++counter}: ${name}`;
  if (steps !== undefined) {
    scripts.push({ match: text, steps });
    suite.server.setScript({ conversations: scripts });
  }
  return text;
}

/** The requests of the conversation `text`, oldest first. */
function requestsOf(text: string): MockRequestRecord[] {
  return suite.server.log.filter((record) => record.conversation === text);
}

/**
 * Prompts `text` and returns the reasoning parameters of its (one) request: the request the server
 * logged since (a session's later prompts share its first prompt's conversation key).
 */
async function reasoningOf(session: AgentSession, text: string): Promise<MockRequestRecord["reasoning"]> {
  const since = suite.server.log.at(-1)?.seq ?? 0;
  const result = await within(session.prompt(text), 10_000, `the prompt "${text}"`);
  expect(result.stopReason).toBe("stop");
  const requests = suite.server.log.filter((record) => record.seq > since);
  expect(requests).toHaveLength(1);
  return requests[0]?.reasoning;
}

function levelChanges(session: AgentSession): ThinkingLevel[] {
  const seen: ThinkingLevel[] = [];
  session.subscribe((event: SessionEvent) => {
    if (event.type === "thinking_level_changed") seen.push(event.level);
  });
  return seen;
}

describe("thinking levels on the wire", () => {
  it("an OpenAI-completions reasoning model gets reasoning_effort at each level, none at off, and xhigh where the model names it", async () => {
    const session = await hostWith().createSession({ model: "mock-openai/reasoner" });
    const seen: Record<string, unknown> = {};
    for (const level of LEVELS) {
      expect(await session.setThinkingLevel(level)).toBe(level);
      seen[level] = await reasoningOf(session, conversation(`openai at ${level}`));
    }
    expect(seen).toEqual({
      off: undefined,
      minimal: { reasoning_effort: "minimal" },
      low: { reasoning_effort: "low" },
      medium: { reasoning_effort: "medium" },
      high: { reasoning_effort: "high" },
      xhigh: { reasoning_effort: "xhigh" },
    });
  });

  it("an Anthropic reasoning model gets pi's thinking budgets, thinking disabled at off, and xhigh clamped to high (its model names no xhigh)", async () => {
    const session = await hostWith().createSession({ model: "mock-anthropic/reasoner" });
    const seen: Record<string, unknown> = {};
    const applied: ThinkingLevel[] = [];
    for (const level of LEVELS) {
      applied.push(await session.setThinkingLevel(level));
      seen[level] = await reasoningOf(session, conversation(`anthropic at ${level}`));
    }
    expect(applied).toEqual(["off", "minimal", "low", "medium", "high", "high"]);
    const enabled = (budget: number) => ({
      thinking: { type: "enabled", budget_tokens: budget, display: "summarized" },
    });
    expect(seen).toEqual({
      off: { thinking: { type: "disabled" } },
      minimal: enabled(1024),
      low: enabled(2048),
      medium: enabled(8192),
      high: enabled(16_384),
      xhigh: enabled(16_384),
    });
  });

  it("a new session starts at defaultThinkingLevel (pi's medium), or at createSession's thinkingLevel", async () => {
    const host = hostWith();
    const byDefault = await host.createSession({ model: "mock-openai/reasoner" });
    expect(byDefault.thinkingLevel).toBe("medium");
    expect(await reasoningOf(byDefault, conversation("default level"))).toEqual({ reasoning_effort: "medium" });
    const given = await host.createSession({ model: "mock-openai/reasoner", thinkingLevel: "low" });
    expect(given.thinkingLevel).toBe("low");
    expect(await reasoningOf(given, conversation("given level"))).toEqual({ reasoning_effort: "low" });
  });
});

describe("clamping to the model (pi's rules)", () => {
  it("a model without reasoning runs at off: the option, setThinkingLevel and the cycle change nothing and send no reasoning field", async () => {
    const session = await hostWith().createSession({ model: "mock-openai/plain", thinkingLevel: "high" });
    const changes = levelChanges(session);
    expect(session.thinkingLevel).toBe("off");
    expect(await session.setThinkingLevel("high")).toBe("off");
    expect(await session.cycleThinkingLevel()).toBeUndefined();
    expect(session.thinkingLevel).toBe("off");
    expect(changes).toEqual([]);
    expect(await reasoningOf(session, conversation("plain model"))).toBeUndefined();
  });

  it("the cycle goes through the model's levels and wraps: high → xhigh → off → minimal, one event each", async () => {
    const session = await hostWith().createSession({ model: "mock-openai/reasoner", thinkingLevel: "high" });
    const changes = levelChanges(session);
    const cycled = [];
    for (let i = 0; i < 3; i++) cycled.push(await session.cycleThinkingLevel());
    expect(cycled).toEqual(["xhigh", "off", "minimal"]);
    expect(changes).toEqual(["xhigh", "off", "minimal"]);
  });

  it("setModel clamps the level to the new model, and coming back from a model without reasoning restores the last level chosen", async () => {
    const session = await hostWith().createSession({ model: "mock-openai/reasoner" });
    const changes = levelChanges(session);
    await session.setThinkingLevel("xhigh");
    await session.setModel("mock-anthropic/reasoner");
    expect(session.thinkingLevel).toBe("high");
    await session.setModel("mock-openai/plain");
    expect(session.thinkingLevel).toBe("off");
    await session.setModel("mock-openai/reasoner");
    expect(session.thinkingLevel).toBe("high");
    expect(changes).toEqual(["xhigh", "high", "off", "high"]);
    expect(await reasoningOf(session, conversation("after the round trip"))).toEqual({ reasoning_effort: "high" });
  });
});

describe("the level survives what re-sends a request", () => {
  it("a retried request carries the level of the failed one", async () => {
    const session = await hostWith().createSession({ model: "mock-openai/reasoner", thinkingLevel: "high" });
    const text = conversation("retried", [503, "ok"]);
    const result = await within(session.prompt(text), 10_000, "the retried prompt");
    expect(result).toMatchObject({ stopReason: "stop", retries: 1 });
    expect(requestsOf(text).map((record) => [record.status, record.reasoning])).toEqual([
      [503, { reasoning_effort: "high" }],
      [200, { reasoning_effort: "high" }],
    ]);
  });

  it("a compaction's summary request reasons at the session's level, as pi's does", async () => {
    const session = await hostWith().createSession({
      model: "mock-openai/reasoner",
      thinkingLevel: "low",
      settings: { compaction: { keepRecentTokens: 1 } },
    });
    await within(session.prompt(conversation("before the compaction")), 10_000, "the first prompt");
    await within(session.prompt("and a second turn"), 10_000, "the second prompt");
    const since = suite.server.log.at(-1)?.seq ?? 0;
    await within(session.compact(), 10_000, "the compaction");
    const summary = suite.server.log.filter((record) => record.seq > since);
    expect(summary.map((record) => record.reasoning)).toEqual([{ reasoning_effort: "low" }]);
  });

  it("X7: after the worker dies mid-request, the restored worker's retried request still carries the level", async () => {
    const exit = new SharedArrayBuffer(4);
    const session = await hostWith().createSession({
      model: "mock-openai/reasoner",
      thinkingLevel: "low",
      workerModule: EXIT_MODULE,
      workerModuleOptions: { exit },
    });
    await session.setThinkingLevel("high");
    const restored = new Promise<SessionEvent>((resolve) => {
      session.subscribe((event) => {
        if (event.type === "session_restored") resolve(event);
      });
    });
    const text = conversation("worker dies", ["stall", "ok"]);
    const started = new Promise<void>((resolve) => {
      const off = suite.server.on("request_start", (record) => {
        if (record.conversation !== text) return;
        off();
        resolve();
      });
    });
    const done = session.prompt(text);
    await within(started, 10_000, "the stalled request to reach the mock");
    const flag = new Int32Array(exit);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    await within(restored, 10_000, "session_restored");
    const result = await within(done, 10_000, "the prompt on the restored worker");
    expect(result.stopReason).toBe("stop");
    expect(session.thinkingLevel).toBe("high");
    const requests = requestsOf(text);
    expect(requests.map((record) => record.outcome)).toEqual(["client_closed", "completed"]);
    expect(requests[1]?.reasoning).toEqual({ reasoning_effort: "high" });
  });
});
