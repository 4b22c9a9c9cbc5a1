/**
 * Bad input is refused at the call that took it, with ERR_INVALID_OPTIONS (or
 * ERR_INVALID_SETTINGS) naming the field, instead of crashing or failing later elsewhere.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { type Api, fauxAssistantMessage, type Model } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createSessionHost, SessionHost, type SessionHostOptions } from "../../../src/main/host/session-host.js";
import type { AgentSession } from "../../../src/main/session/agent-session.js";
import { inProcessHost } from "../../fixtures/in-process-host.js";
import { gate, scriptedModel } from "../../fixtures/scripted-provider.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  vi.restoreAllMocks();
});

function freshHost(options: SessionHostOptions = {}) {
  const env = inProcessHost(options);
  cleanups.push(() => env.host.close());
  return env;
}

function refusal(fn: () => unknown): { code?: string; message: string } {
  try {
    fn();
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error("expected a refusal");
}

/** Anything the type system would refuse, as a JavaScript caller may pass it. */
function untyped<T>(value: unknown): T {
  return value as T;
}

describe("createSessionHost options", () => {
  // connect and sleep are no options of the public type (host-internals.ts): public-host-options.test.ts.
  it.each([["onListenerError", 42]])(
    "regression: %s that is not a function is refused with ERR_INVALID_OPTIONS",
    (key, value) => {
      const error = refusal(() => createSessionHost(untyped({ [key]: value })));
      expect(error.code).toBe("ERR_INVALID_OPTIONS");
      expect(error.message).toContain(`${key}: must be a function`);
    },
  );

  it.each([
    ["a string", "big"],
    ["a negative limit", { maxOldGenerationSizeMb: -1 }],
    ["an unknown field", { heapMb: 10 }],
  ])("regression: resourceLimits as %s is refused with ERR_INVALID_OPTIONS, not an untyped TypeError", (_, value) => {
    const error = refusal(() => createSessionHost(untyped({ resourceLimits: value })));
    expect(error.code).toBe("ERR_INVALID_OPTIONS");
    expect(error.message).toContain("resourceLimits");
  });

  it.each([
    ["maxOldGenerationSizeMb", { maxOldGenerationSizeMb: 64 }],
    ["maxYoungGenerationSizeMb", { maxYoungGenerationSizeMb: 16 }],
    ["codeRangeSizeMb", { codeRangeSizeMb: 32 }],
    ["stackSizeMb", { stackSizeMb: 4 }],
    [
      "all four at once",
      { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16, codeRangeSizeMb: 32, stackSizeMb: 4 },
    ],
  ])("resourceLimits with Node's numeric field %s is accepted: no refusal, a host", (_, resourceLimits) => {
    // A refusal throws here and fails the test with its ERR_INVALID_OPTIONS message.
    const host = createSessionHost({ resourceLimits });
    cleanups.push(() => host.close());
    expect(host).toBeInstanceOf(SessionHost);
    expect(host.sessionCount).toBe(0);
  });

  it("regression: callTimeoutMs above 2^31-1 is refused (Node's timer would fire after 1 ms), naming the maximum", () => {
    const error = refusal(() => createSessionHost({ callTimeoutMs: 2 ** 31 }));
    expect(error.code).toBe("ERR_INVALID_OPTIONS");
    expect(error.message).toContain("callTimeoutMs");
    expect(error.message).toContain("2147483647");
  });

  it("regression: retry.baseDelayMs above 2^31-1 in the host's settings is ERR_INVALID_SETTINGS", () => {
    const error = refusal(() => createSessionHost({ settings: { retry: { baseDelayMs: 2 ** 31 } } }));
    expect(error.code).toBe("ERR_INVALID_SETTINGS");
    expect(error.message).toContain("retry.baseDelayMs");
  });

  it("an authStorage without markUsageLimitReached, and a misspelt option, are refused", () => {
    const storage = refusal(() => createSessionHost(untyped({ authStorage: {} })));
    expect(storage).toMatchObject({ code: "ERR_INVALID_OPTIONS", message: expect.stringContaining("authStorage") });
    const typo = refusal(() => createSessionHost(untyped({ callTimeout: 5 })));
    expect(typo).toMatchObject({ code: "ERR_INVALID_OPTIONS", message: expect.stringContaining("callTimeout") });
  });

  it("regression: an onListenerError that throws crashes nothing: delivery goes on, the prompt settles, stderr gets both errors", async () => {
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const { host } = freshHost({
      onListenerError: () => {
        throw new Error("the reporter broke too");
      },
    });
    const session = await host.createSession({ model: "demo/demo-fast" });
    session.subscribe(() => {
      throw new Error("listener broke");
    });
    const seen: string[] = [];
    session.subscribe((event) => seen.push(event.type));
    const result = await session.prompt("hi");
    expect(result.stopReason).toBe("stop");
    expect(seen).toContain("agent_end");
    expect(seen.at(-1)).toBe("agent_settled");
    const written = stderr.mock.calls.map((call) => String(call[0])).join("");
    expect(written).toContain("listener broke");
    expect(written).toContain("the reporter broke too");
  });
});

describe("createSession options", () => {
  it("regression: onContextOverflow that is not a function is refused, naming it", async () => {
    const { host } = freshHost();
    await expect(host.createSession(untyped({ onContextOverflow: "x" }))).rejects.toMatchObject({
      code: "ERR_INVALID_OPTIONS",
      message: expect.stringContaining("onContextOverflow"),
    });
    await expect(host.createSession(untyped({ workerModule: 42 }))).rejects.toMatchObject({
      code: "ERR_INVALID_OPTIONS",
      message: expect.stringContaining("workerModule"),
    });
  });

  it.each([
    ["a user message without content", [{ role: "user" }], "messages.0.content"],
    ["user content that is not a string or blocks", [{ role: "user", content: 42 }], "messages.0.content"],
    ["an unknown block type", [{ role: "user", content: [{ type: "txt", text: "x" }] }], "messages.0.content"],
    [
      "assistant content that is not an array",
      [{ role: "assistant", content: "hi", stopReason: "stop" }],
      "messages.0.content",
    ],
    [
      "a tool result without its call id",
      [{ role: "toolResult", toolName: "t", content: [], isError: false }],
      "messages.0.toolCallId",
    ],
    ["an unknown role", [{ role: "system", content: "x" }], "messages.0.role"],
  ])("regression: messages with %s are refused at createSession, naming the field", async (_, messages, field) => {
    const { host } = freshHost();
    const failure = host.createSession(untyped({ messages }));
    await expect(failure).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
    expect(((await failure.catch((error: unknown) => error)) as Error).message).toContain(field);
  });

  it("a transcript of user, assistant and tool-result messages is accepted and continued", async () => {
    const { host } = freshHost();
    const messages: AgentMessage[] = [
      { role: "user", content: "earlier", timestamp: 1 },
      { ...fauxAssistantMessage("reply"), timestamp: 2 },
      { role: "user", content: [{ type: "text", text: "and then" }], timestamp: 3 },
      {
        ...fauxAssistantMessage({ type: "toolCall", id: "c1", name: "t", arguments: {} }, { stopReason: "toolUse" }),
        timestamp: 4,
      },
      {
        role: "toolResult",
        toolCallId: "c1",
        toolName: "t",
        content: [{ type: "text", text: "r" }],
        isError: false,
        timestamp: 5,
      },
    ];
    const session = await host.createSession({ model: "demo/demo-fast", messages });
    expect((await session.prompt("go on")).stopReason).toBe("stop");
  });

  it("regression: a Model object whose api no provider serves is refused at createSession, naming model.api and the registered APIs", async () => {
    const { host } = freshHost();
    const model: Model<Api> = {
      id: "ghost-1",
      name: "ghost",
      api: "lifeline-test-no-such-api",
      provider: "ghost",
      baseUrl: "http://127.0.0.1:9",
      reasoning: false,
      input: ["text"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 1000,
      maxTokens: 100,
    };
    const failure = host.createSession({ model });
    await expect(failure).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
    const message = ((await failure.catch((error: unknown) => error)) as Error).message;
    expect(message).toContain('model.api "lifeline-test-no-such-api"');
    expect(message).toContain("openai-completions");
    expect(host.sessionCount).toBe(0);

    const session = await host.createSession({ model: "demo/demo-fast" });
    await expect(session.setModel(model)).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
    expect(session.model.id).toBe("demo-fast");
  });
});

describe("session methods", () => {
  async function demoSession(): Promise<AgentSession> {
    const { host } = freshHost();
    return host.createSession({ model: "demo/demo-fast" });
  }

  it.each([
    ["42", 42],
    ["null", null],
    ["an object without id", { provider: "demo" }],
  ])("regression: setModel(%s) is ERR_INVALID_OPTIONS naming the model, not a bare TypeError", async (_, model) => {
    const session = await demoSession();
    const failure = session.setModel(untyped(model));
    await expect(failure).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
    expect(((await failure.catch((error: unknown) => error)) as Error).message).toContain("model");
  });

  it("regression: prompt(text, null) is ERR_INVALID_OPTIONS naming the options, not a bare TypeError", async () => {
    const session = await demoSession();
    const failure = session.prompt("x", untyped(null));
    await expect(failure).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
    expect(((await failure.catch((error: unknown) => error)) as Error).message).toContain("options");
    await expect(session.prompt("x", untyped({ queue: "yes" }))).rejects.toMatchObject({
      code: "ERR_INVALID_OPTIONS",
    });
    expect(session.isBusy).toBe(false);
  });

  it("regression: subscribe(42) is refused instead of accepted silently", async () => {
    const session = await demoSession();
    const error = refusal(() => session.subscribe(untyped(42)));
    expect(error.code).toBe("ERR_INVALID_OPTIONS");
    expect(error.message).toContain("subscribe()");
    expect((await session.prompt("still fine")).stopReason).toBe("stop");
  });

  it('regression: queueMessage("bogus", …) during a prompt is refused instead of queued as a follow-up', async () => {
    const hold = gate();
    const scripted = scriptedModel([{ text: "done", after: hold.promise }]);
    cleanups.push(() => scripted.unregister());
    const { host } = freshHost();
    const session = await host.createSession({ model: scripted.model });
    const prompt = session.prompt("hi");
    await scripted.waitForCall(1);
    const failure = session.queueMessage(untyped("bogus"), "later");
    await expect(failure).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
    expect(((await failure.catch((error: unknown) => error)) as Error).message).toContain('"steer" or "followUp"');
    expect(session.pendingMessageCount).toBe(0);
    hold.open();
    expect((await prompt).stopReason).toBe("stop");
    expect(scripted.calls()).toBe(1);
  });
});
