/**
 * The mock's tool-call answers over real HTTP on 127.0.0.1: the `tool_calls` step and the seeded
 * `toolCalls` roll, in both wire formats, through pi-ai as lifeline's workers call it and through
 * the official SDKs (streaming and not); the follow-up request with the tool results gets text,
 * bounded by `maxTurns` counted from the request's own messages.
 */
import Anthropic from "@anthropic-ai/sdk";
import { type AssistantMessage, type Context, type Model, streamSimple } from "@mariozechner/pi-ai";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { type MockServer, startMockServer } from "../../src/mock-server/index.js";

type PiApi = "openai-completions" | "anthropic-messages";

let server: MockServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(script: unknown): Promise<MockServer> {
  server = await startMockServer({ script });
  return server;
}

function piModel(url: string, api: PiApi): Model<PiApi> {
  return {
    id: "mock-1",
    name: "mock",
    api,
    provider: "mock",
    baseUrl: api === "openai-completions" ? `${url}/v1` : url,
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128000,
    maxTokens: 4096,
    compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
  };
}

function ask(url: string, api: PiApi, context: Context): Promise<AssistantMessage> {
  return streamSimple(piModel(url, api), context, { apiKey: "test-key", maxRetries: 0 }).result();
}

function toolCallsOf(message: AssistantMessage) {
  return message.content.flatMap((block) => (block.type === "toolCall" ? [block] : []));
}

/** The context after `reply` with one result per call: what the agent sends next. */
function withResults(context: Context, reply: AssistantMessage): Context {
  const results = toolCallsOf(reply).map((call) => ({
    role: "toolResult" as const,
    toolCallId: call.id,
    toolName: call.name,
    content: [{ type: "text" as const, text: "done" }],
    isError: false,
    timestamp: Date.now(),
  }));
  return { messages: [...context.messages, reply, ...results] };
}

const prompt = (text: string): Context => ({ messages: [{ role: "user", content: text, timestamp: Date.now() }] });

describe.each<PiApi>(["openai-completions", "anthropic-messages"])("tool calls through pi-ai (%s)", (api) => {
  it("a tool_calls step streams its calls with JSON arguments and stop reason toolUse; the follow-up gets text", async () => {
    const mock = await start({
      reply: "all done",
      conversations: [{ match: "", steps: [{ type: "tool_calls", name: "probe", calls: 3, arguments: { size: 2 } }] }],
    });
    const context = prompt("use the tool");
    const first = await ask(mock.url, api, context);
    expect(first.stopReason).toBe("toolUse");
    const calls = toolCallsOf(first);
    expect(calls.map((call) => [call.name, call.arguments])).toEqual([
      ["probe", { size: 2, call: 0 }],
      ["probe", { size: 2, call: 1 }],
      ["probe", { size: 2, call: 2 }],
    ]);
    expect(new Set(calls.map((call) => call.id)).size).toBe(3);
    const second = await ask(mock.url, api, withResults(context, first));
    expect(second.stopReason).toBe("stop");
    expect(second.content).toEqual([expect.objectContaining({ type: "text", text: "all done" })]);
    expect(mock.log.map((record) => [record.step, record.toolCalls])).toEqual([
      ["tool_calls", 3],
      ["ok", undefined],
    ]);
  });

  it("toolCalls with probability 1 calls tools on every turn until maxTurns, then answers with text", async () => {
    const mock = await start({ toolCalls: { probability: 1, calls: 2, maxTurns: 3 } });
    let context = prompt("loop");
    const stops: string[] = [];
    for (let turn = 0; turn < 4; turn++) {
      const reply = await ask(mock.url, api, context);
      stops.push(reply.stopReason);
      if (reply.stopReason === "toolUse")
        expect(toolCallsOf(reply).map((c) => c.name)).toEqual(["load_tool", "load_tool"]);
      context = withResults(context, reply);
    }
    expect(stops).toEqual(["toolUse", "toolUse", "toolUse", "stop"]);
    // A new prompt in the same conversation starts counting again.
    context = { messages: [...context.messages, { role: "user", content: "again", timestamp: Date.now() }] };
    expect((await ask(mock.url, api, context)).stopReason).toBe("toolUse");
    expect(mock.stats().total).toBe(5);
  });
});

describe("tool calls through the official SDKs, not streaming", () => {
  it("OpenAI: message.tool_calls with finish_reason tool_calls", async () => {
    const mock = await start({ conversations: [{ match: "", steps: [{ type: "tool_calls", calls: 2 }] }] });
    const client = new OpenAI({ apiKey: "sk-test", baseURL: `${mock.url}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: "mock-1",
      messages: [{ role: "user", content: "hi" }],
    });
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    expect(
      choice?.message.tool_calls?.map((call) =>
        call.type === "function" ? [call.function.name, call.function.arguments] : [],
      ),
    ).toEqual([
      ["load_tool", '{"call":0}'],
      ["load_tool", '{"call":1}'],
    ]);
  });

  it("Anthropic: tool_use blocks with stop_reason tool_use", async () => {
    const mock = await start({ conversations: [{ match: "", steps: [{ type: "tool_calls", name: "t" }] }] });
    const client = new Anthropic({ apiKey: "test-key", baseURL: mock.url, maxRetries: 0 });
    const message = await client.messages.create({
      model: "mock-1",
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(message.stop_reason).toBe("tool_use");
    expect(message.content).toEqual([expect.objectContaining({ type: "tool_use", name: "t", input: { call: 0 } })]);
  });
});

describe("the toolCalls roll", () => {
  /** The step of each of `count` fresh prompts, one after another. */
  async function steps(mock: MockServer, count: number): Promise<string[]> {
    for (let i = 0; i < count; i++) await ask(mock.url, "openai-completions", prompt(`prompt ${i}`));
    return mock.log.map((record) => record.step);
  }

  it("is seeded: the same seed gives the same sequence, and faults are rolled first from their own stream", async () => {
    const script = { seed: 11, toolCalls: { probability: 0.5 }, faults: [{ probability: 0.2, step: 500 }] };
    const first = await steps(await start(script), 24);
    await server?.close();
    const second = await steps(await start(script), 24);
    expect(second).toEqual(first);
    expect(first).toContain("tool_calls");
    expect(first).toContain("ok");
    // The fault sequence is the one the same seed gives without tool calls.
    await server?.close();
    const faultsOnly = await steps(await start({ seed: 11, faults: script.faults }), 24);
    expect(first.map((step) => step === "error")).toEqual(faultsOnly.map((step) => step === "error"));
  });

  it("refuses a probability over 1 and unknown keys, naming the field", async () => {
    await expect(startMockServer({ script: { toolCalls: { probability: 2 } } })).rejects.toMatchObject({
      code: "ERR_MOCK_SCRIPT",
      message: expect.stringMatching(/toolCalls\.probability/),
    });
    await expect(startMockServer({ script: { toolCalls: { probability: 1, turns: 2 } } })).rejects.toMatchObject({
      code: "ERR_MOCK_SCRIPT",
      message: expect.stringMatching(/unknown key\(s\) turns/),
    });
  });
});
