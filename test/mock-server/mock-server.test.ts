/**
 * The fault-injecting model server over real HTTP on 127.0.0.1: both wire formats through the
 * official SDKs and through pi-ai as lifeline's workers call it, every step kind, scripts and
 * counters, control endpoints, malformed clients, and shutdown with streams open.
 */
import { request } from "node:http";
import { connect } from "node:net";
import Anthropic from "@anthropic-ai/sdk";
import {
  type AssistantMessage,
  type AssistantMessageEventStream,
  isContextOverflow,
  type Model,
  streamSimple,
} from "@mariozechner/pi-ai";
import OpenAI from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type MockRequestRecord, type MockServer, startMockServer } from "../../src/mock-server/index.js";

type PiApi = "openai-completions" | "anthropic-messages";

let server: MockServer;

beforeEach(async () => {
  server = await startMockServer();
});

afterEach(async () => {
  await server.close();
});

function piModel(api: PiApi): Model<PiApi> {
  return {
    id: "mock-1",
    name: "mock",
    api,
    provider: "mock",
    baseUrl: api === "openai-completions" ? `${server.url}/v1` : server.url,
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128000,
    maxTokens: 4096,
    compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
  };
}

function piStream(api: PiApi, text: string, signal?: AbortSignal): AssistantMessageEventStream {
  const context = { messages: [{ role: "user" as const, content: text, timestamp: Date.now() }] };
  return streamSimple(piModel(api), context, { apiKey: "test-key", maxRetries: 0, ...(signal ? { signal } : {}) });
}

function piAsk(api: PiApi, text: string): Promise<AssistantMessage> {
  return piStream(api, text).result();
}

function textOf(message: AssistantMessage): string {
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

function openAi(apiKey = "sk-test-abcd1234"): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${server.url}/v1`, maxRetries: 0 });
}

function anthropic(): Anthropic {
  return new Anthropic({ apiKey: "test-key", baseURL: server.url, maxRetries: 0 });
}

/** A raw OpenAI-format request; `body` may be any text. */
function post(path: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) {
  return fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

function chat(text: string, extra: Record<string, unknown> = {}) {
  return { model: "mock-1", messages: [{ role: "user", content: text }], ...extra };
}

function lastSeq(): number {
  return server.log.at(-1)?.seq ?? 0;
}

describe("wire formats through the official SDKs", () => {
  it("answers OpenAI chat completions, non-streaming and streaming with a usage chunk", async () => {
    const client = openAi();
    const completion = await client.chat.completions.create({
      model: "mock-1",
      messages: [{ role: "user", content: "hello" }],
    });
    expect(completion.choices[0]?.message).toMatchObject({
      role: "assistant",
      content: "Hello from the mock model server.",
    });
    expect(completion.choices[0]?.finish_reason).toBe("stop");
    expect(completion.usage?.completion_tokens).toBe(6);

    const stream = await client.chat.completions.create({
      model: "mock-1",
      messages: [{ role: "user", content: "hello" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      deltas.push(chunk.choices[0]?.delta.content ?? "");
      finish ??= chunk.choices[0]?.finish_reason;
      usage ??= chunk.usage;
    }
    expect(deltas.join("")).toBe("Hello from the mock model server.");
    expect(finish).toBe("stop");
    expect(usage).toMatchObject({ completion_tokens: 6 });
    expect(server.stats().outcomes.completed).toBe(2);
  });

  it("answers Anthropic messages, non-streaming and streaming", async () => {
    const client = anthropic();
    const message = await client.messages.create({
      model: "mock-1",
      max_tokens: 100,
      messages: [{ role: "user", content: "hello" }],
    });
    expect(message.content).toEqual([{ type: "text", text: "Hello from the mock model server." }]);
    expect(message.stop_reason).toBe("end_turn");

    const stream = client.messages.stream({
      model: "mock-1",
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
    });
    const types: string[] = [];
    stream.on("streamEvent", (event) => types.push(event.type));
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: "text", text: "Hello from the mock model server." }]);
    expect(final.usage.output_tokens).toBe(6);
    expect(types[0]).toBe("message_start");
    expect(types.at(-1)).toBe("message_stop");
    expect(types.filter((t) => t === "content_block_delta")).toHaveLength(6);
  });

  it("renders error bodies the SDKs parse into their typed errors, with retry headers", async () => {
    server.setScript({
      conversations: [
        { match: "", steps: [{ type: "error", status: 429, retryAfter: 2, retryAfterMs: 1500 }, 529, 401] },
      ],
    });
    const rateLimited = await openAi()
      .chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "a" }] })
      .catch((error: unknown) => error);
    expect(rateLimited).toBeInstanceOf(OpenAI.RateLimitError);
    const error = rateLimited as InstanceType<typeof OpenAI.RateLimitError>;
    expect(error.code).toBe("rate_limit_exceeded");
    expect(error.headers.get("retry-after")).toBe("2");
    expect(error.headers.get("retry-after-ms")).toBe("1500");

    const overloaded = await anthropic()
      .messages.create({ model: "mock-1", max_tokens: 10, messages: [{ role: "user", content: "a" }] })
      .catch((e: unknown) => e);
    expect(overloaded).toBeInstanceOf(Anthropic.InternalServerError);
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).requestID).toBe(`req_mock${lastSeq()}`);

    const unauthorized = await openAi()
      .chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "a" }] })
      .catch((e: unknown) => e);
    expect(unauthorized).toBeInstanceOf(OpenAI.AuthenticationError);
    const text = (unauthorized as Error).message;
    expect(text).toContain("Incorrect API key provided: sk-te****1234.");
    expect(text).not.toContain("sk-test-abcd1234");
  });

  it("sends custom headers and empty bodies as scripted", async () => {
    server.setScript({
      conversations: [
        { match: "", steps: [{ type: "error", status: 503, emptyBody: true, headers: { "x-extra": "1" } }] },
      ],
    });
    const response = await post("/v1/chat/completions", chat("a"));
    expect(response.status).toBe(503);
    expect(response.headers.get("x-extra")).toBe("1");
    expect(await response.text()).toBe("");
  });
});

describe("through pi-ai as lifeline's workers call it", () => {
  for (const api of ["openai-completions", "anthropic-messages"] as const) {
    it(`${api}: streams the scripted answer`, async () => {
      server.setScript({
        conversations: [{ match: "count", steps: [{ type: "ok", text: "one two three", tokens: 5 }] }],
      });
      const message = await piAsk(api, "count please");
      expect(message.stopReason).toBe("stop");
      expect(textOf(message)).toBe("one two three one two");
      expect((await piAsk(api, "hello")).stopReason).toBe("stop");
      expect(textOf(await piAsk(api, "hello"))).toBe("Hello from the mock model server.");
    });
  }

  // The texts of docs/mock-server.md "What pi-ai reports". Anthropic texts embed the whole body.
  const anthropicBody = (status: number, type: string, message: string) => (seq: number) =>
    `${status} ${JSON.stringify({ type: "error", error: { type, message }, request_id: `req_mock${seq}` })}`;
  const cases: {
    step: unknown;
    openai: string;
    anthropic: string | ((seq: number) => string);
    overflow?: "both" | "anthropic";
  }[] = [
    {
      step: 429,
      openai:
        "429 Rate limit reached for requests per min (RPM) on mock-1 in organization org-mock: Limit 500, Used 500, Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more.",
      anthropic: anthropicBody(
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
      ),
    },
    {
      step: 500,
      openai: "500 The server had an error while processing your request. Sorry about that!",
      anthropic: anthropicBody(500, "api_error", "Internal server error"),
    },
    { step: 502, openai: "502 Bad gateway.", anthropic: anthropicBody(502, "api_error", "Bad gateway") },
    {
      step: 503,
      openai: "503 The engine is currently overloaded, please try again later.",
      anthropic: anthropicBody(503, "overloaded_error", "Overloaded"),
    },
    { step: 504, openai: "504 Gateway timeout.", anthropic: anthropicBody(504, "api_error", "Gateway timeout") },
    { step: 529, openai: "529 Overloaded", anthropic: anthropicBody(529, "overloaded_error", "Overloaded") },
    {
      step: 400,
      openai: "400 Invalid request.",
      anthropic: anthropicBody(400, "invalid_request_error", "Invalid request."),
    },
    {
      step: 401,
      openai:
        "401 Incorrect API key provided: ****. You can find your API key at https://platform.openai.com/account/api-keys.",
      anthropic: anthropicBody(401, "authentication_error", "invalid x-api-key"),
    },
    {
      step: { type: "error", status: 503, emptyBody: true },
      openai: "503 status code (no body)",
      anthropic: "503 status code (no body)",
    },
    {
      step: { type: "error", status: 500, message: "boom" },
      openai: "500 boom",
      anthropic: anthropicBody(500, "api_error", "boom"),
    },
    {
      step: "context_overflow",
      openai:
        "400 This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
      anthropic: anthropicBody(400, "invalid_request_error", "prompt is too long: 213456 tokens > 200000 maximum"),
      overflow: "both",
    },
    {
      step: "usage_limit",
      openai: "429 You have reached your usage limit. Try again later.",
      anthropic: anthropicBody(429, "rate_limit_error", "You have reached your usage limit. Try again later."),
    },
    {
      step: 413,
      openai: "413 Request failed with status 413.",
      anthropic: anthropicBody(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."),
      overflow: "anthropic",
    },
    { step: "reset", openai: "Connection error.", anthropic: "Connection error." },
    { step: "cut", openai: "terminated", anthropic: "terminated" },
    { step: { type: "cut", afterTokens: 0 }, openai: "terminated", anthropic: "terminated" },
    {
      step: "stream_error",
      openai: "The server had an error while processing your request. Sorry about that!",
      anthropic: JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }),
    },
    {
      step: {
        type: "stream_error",
        errorType: "invalid_request_error",
        code: "content_policy_violation",
        message: "Refused.",
        afterTokens: 2,
      },
      openai: "Refused.",
      anthropic: JSON.stringify({
        type: "error",
        error: { type: "invalid_request_error", message: "Refused." },
      }),
    },
  ];

  for (const api of ["openai-completions", "anthropic-messages"] as const) {
    it(`${api}: every error step ends in stopReason "error" with the provider's text`, async () => {
      server.setScript({ conversations: [{ match: "", steps: cases.map((c) => c.step) }] });
      for (const c of cases) {
        const message = await piAsk(api, "fail please");
        const expected = api === "openai-completions" ? c.openai : c.anthropic;
        const text = typeof expected === "string" ? expected : expected(lastSeq());
        expect({ step: c.step, stopReason: message.stopReason, errorMessage: message.errorMessage }).toEqual({
          step: c.step,
          stopReason: "error",
          errorMessage: text,
        });
        expect(isContextOverflow(message)).toBe(
          c.overflow === "both" || (c.overflow === "anthropic" && api === "anthropic-messages"),
        );
      }
      expect(server.stats().outcomes).toEqual({ completed: 0, fault: cases.length, client_closed: 0, invalid: 0 });
    });

    it(`${api}: abort() on a stalled stream closes the HTTP connection (outcome client_closed)`, async () => {
      server.setScript({ conversations: [{ match: "", steps: [{ type: "stall", afterTokens: 2 }] }] });
      const controller = new AbortController();
      const ended = server.waitForRequestEnd();
      const stream = piStream(api, "stall please", controller.signal);
      const deltas: string[] = [];
      for await (const event of stream) {
        if (event.type === "text_delta") deltas.push(event.delta);
        if (deltas.length === 2) controller.abort();
      }
      const message = await stream.result();
      expect(deltas.join("")).toBe("Hello from");
      expect(message.stopReason).toBe("aborted");
      expect(message.errorMessage).toBe(
        api === "openai-completions" ? "Request was aborted" : "This operation was aborted",
      );
      expect(await ended).toMatchObject({ step: "stall", status: 200, outcome: "client_closed" });
    });
  }
});

describe("the usage each record says the response reported", () => {
  for (const api of ["openai-completions", "anthropic-messages"] as const) {
    it(`${api}: record.usage is the usage pi-ai's reply carries, for answers and failed streams alike`, async () => {
      const steps = [
        { type: "ok", tokens: 4 },
        { type: "stream_error", afterTokens: 2 },
        { type: "cut", afterTokens: 2 },
        503,
      ];
      server.setScript({ conversations: [{ match: "", steps }] });
      for (const step of steps) {
        const message = await piAsk(api, "count my tokens");
        const record = server.log.at(-1);
        const reported = record?.usage ?? { input: 0, output: 0 };
        expect({ step, input: message.usage.input, output: message.usage.output }).toEqual({ step, ...reported });
      }
      const usages = server.log.map((record) => record.usage);
      // pi-ai asks OpenAI for the usage chunk, which only a finished stream sends; Anthropic's
      // message_start reports the input before any token, so its failed streams keep it.
      const input = server.log[0]?.promptTokens ?? 0;
      expect(usages).toEqual(
        api === "openai-completions"
          ? [{ input, output: 4 }, undefined, undefined, undefined]
          : [{ input, output: 4 }, { input, output: 1 }, { input, output: 1 }, undefined],
      );
    });
  }
});

describe("fault steps as the client sees them", () => {
  it("reset destroys the connection before any response", async () => {
    server.setScript({ conversations: [{ match: "", steps: ["reset"] }] });
    await expect(post("/v1/chat/completions", chat("x"))).rejects.toThrow(TypeError);
    const record = server.log.at(-1);
    expect(record).toMatchObject({ step: "reset", outcome: "fault" });
    expect(record?.status).toBeUndefined();
  });

  it("cut ends a stream after the scripted tokens", async () => {
    server.setScript({ conversations: [{ match: "", steps: [{ type: "cut", afterTokens: 4 }, "cut"] }] });
    const stream = await openAi().chat.completions.create({
      model: "mock-1",
      messages: [{ role: "user", content: "x" }],
      stream: true,
    });
    const deltas: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta.content ?? "");
      })(),
    ).rejects.toThrow();
    expect(deltas.join("")).toBe("Hello from the mock");

    const response = await post("/v1/chat/completions", chat("x"));
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
    expect(server.stats().outcomes.fault).toBe(2);
  });

  it("stream_error sends a 200, the tokens, then the error event each official SDK throws as its typed error", async () => {
    const refusal = {
      type: "stream_error",
      errorType: "invalid_request_error",
      code: "content_policy_violation",
      message: "Refused.",
      afterTokens: 2,
    };
    server.setScript({ conversations: [{ match: "", steps: [refusal, refusal] }] });
    const stream = await openAi().chat.completions.create({
      model: "mock-1",
      messages: [{ role: "user", content: "x" }],
      stream: true,
    });
    const deltas: string[] = [];
    const thrown = await (async () => {
      for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta.content ?? "");
    })().catch((e: unknown) => e);
    expect(deltas.join("")).toBe("Hello from");
    expect(thrown).toBeInstanceOf(OpenAI.APIError);
    expect(thrown).toMatchObject({
      status: undefined,
      type: "invalid_request_error",
      code: "content_policy_violation",
    });
    expect(server.log.at(-1)).toMatchObject({ step: "stream_error", status: 200, outcome: "fault" });

    const events: string[] = [];
    const anthropicThrown = await (async () => {
      const messages = anthropic().messages.stream({
        model: "mock-1",
        max_tokens: 10,
        messages: [{ role: "user", content: "x" }],
      });
      for await (const event of messages) events.push(event.type);
    })().catch((e: unknown) => e);
    expect(events).toContain("content_block_delta");
    expect(anthropicThrown).toBeInstanceOf(Anthropic.APIError);
    expect(anthropicThrown).toMatchObject({ status: undefined, type: "invalid_request_error" });
  });

  it("stream_error without streaming is a 500 with the same error body", async () => {
    server.setScript({ conversations: [{ match: "", steps: [{ type: "stream_error", errorType: "api_error" }] }] });
    const response = await post("/v1/chat/completions", chat("x"));
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({
      error: {
        message: "The request failed with an error of type api_error.",
        type: "api_error",
        param: null,
        code: null,
      },
    });
  });

  it("stall sends headers and then nothing until the client aborts", async () => {
    server.setScript({ conversations: [{ match: "", steps: ["stall"] }] });
    const controller = new AbortController();
    const response = await post("/v1/chat/completions", chat("x", { stream: true }), {}, controller.signal);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const reader = response.body?.getReader();
    const first = reader?.read();
    const ended = server.waitForRequestEnd(undefined, 10_000, 0);
    controller.abort();
    await expect(first).rejects.toThrow();
    expect(await ended).toMatchObject({ step: "stall", outcome: "client_closed" });
  });

  it("stats().maxInFlight is the most requests open at once, and stays after they end", async () => {
    server.setScript({ conversations: [{ match: "", steps: ["stall"] }] });
    const controller = new AbortController();
    const open = await Promise.all(
      ["a", "b", "c"].map((text) => post("/v1/chat/completions", chat(text, { stream: true }), {}, controller.signal)),
    );
    expect(open.map((response) => response.status)).toEqual([200, 200, 200]);
    expect(server.stats().maxInFlight).toBe(3);
    const ended = Promise.all([1, 2, 3].map((seq) => server.waitForRequestEnd((r) => r.seq === seq, 10_000, 0)));
    controller.abort();
    await ended;
    server.setScript({ conversations: [{ match: "", steps: ["ok"] }] });
    expect((await post("/v1/chat/completions", chat("d"))).status).toBe(200);
    expect(server.stats().maxInFlight).toBe(3);
  });

  it("delayMs holds the response back; a client leaving meanwhile is client_closed", async () => {
    server.setScript({ conversations: [{ match: "", steps: [{ type: "ok", delayMs: 60_000 }] }] });
    const controller = new AbortController();
    const started = new Promise<MockRequestRecord>((resolve) => server.on("request_start", resolve));
    const response = post("/v1/chat/completions", chat("slow"), {}, controller.signal);
    await started;
    controller.abort();
    await expect(response).rejects.toThrow();
    expect(await server.waitForRequestEnd(undefined, 10_000, 0)).toMatchObject({ outcome: "client_closed" });
  });

  it("close() resolves while a stalled stream is open and ends it", async () => {
    server.setScript({ conversations: [{ match: "", steps: ["stall"] }] });
    const response = await post("/v1/messages", chat("x", { stream: true, max_tokens: 5 }));
    const reading = response.text();
    await server.close();
    await expect(reading).rejects.toThrow();
    expect(server.log.at(-1)).toMatchObject({ api: "anthropic", outcome: "fault" });
    await expect(post("/v1/chat/completions", chat("x"))).rejects.toThrow();
  });
});

describe("scripts, conversations and counters", () => {
  it("consumes steps in order with one cursor per conversation key, then answers normally", async () => {
    server.setScript({ conversations: [{ match: "flaky", steps: [503, 429, "ok", 500] }] });
    const statuses = async (key: string, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await post("/v1/chat/completions", chat(key))).status);
      return out;
    };
    expect(await statuses("flaky one", 2)).toEqual([503, 429]);
    expect(await statuses("flaky two", 1)).toEqual([503]);
    expect(await statuses("flaky one", 4)).toEqual([200, 500, 200, 200]);
    expect(await statuses("steady", 2)).toEqual([200, 200]);
    expect(server.requests("flaky")).toBe(7);
    expect(server.requests("one")).toBe(6);
    expect(server.requests()).toBe(9);
    expect(server.stats()).toMatchObject({
      total: 9,
      invalid: 0,
      conversations: { "flaky one": 6, "flaky two": 1, steady: 2 },
      outcomes: { completed: 5, fault: 4 },
    });
  });

  it("takes the key from x-mock-conversation, else the first user message's text parts", async () => {
    server.setScript({ conversations: [{ match: "job-7", steps: [418] }] });
    const named = await post("/v1/chat/completions", chat("anything"), { "x-mock-conversation": "job-7" });
    expect(named.status).toBe(418);
    await anthropic().messages.create({
      model: "mock-1",
      max_tokens: 10,
      system: "be brief",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "  part one " },
            { type: "text", text: "part two  " },
          ],
        },
      ],
    });
    expect(Object.keys(server.stats().conversations)).toEqual(["job-7", "part one part two"]);
    expect(server.log.map((r) => r.conversation)).toEqual(["job-7", "part one part two"]);
  });

  it("rolls faults with a seeded PRNG: the same seed gives the same sequence", async () => {
    const run = async (script: unknown, n = 200) => {
      server.setScript(script);
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await post("/v1/chat/completions", chat(`r${i}`))).status);
      return out;
    };
    const script = (seed: number) => ({
      seed,
      faults: [
        { probability: 0.3, step: 503 },
        { probability: 0.2, step: { type: "error", status: 429 } },
      ],
    });
    const first = await run(script(42));
    expect(await run(script(42))).toEqual(first);
    expect(await run(script(7))).not.toEqual(first);
    const count = (status: number) => first.filter((s) => s === status).length;
    expect(count(503)).toBeGreaterThan(30);
    expect(count(429)).toBeGreaterThan(15);
    expect(count(200)).toBeGreaterThan(60);
    expect(new Set(await run({ faults: [{ probability: 1, step: 502 }] }, 50))).toEqual(new Set([502]));
    expect(new Set(await run({ faults: [{ probability: 0, step: 502 }] }, 50))).toEqual(new Set([200]));
  });

  it("rolls faults only after a conversation's scripted steps run out", async () => {
    server.setScript({ conversations: [{ match: "", steps: ["ok"] }], faults: [{ probability: 1, step: 500 }] });
    expect((await post("/v1/chat/completions", chat("a"))).status).toBe(200);
    expect((await post("/v1/chat/completions", chat("a"))).status).toBe(500);
    expect((await post("/v1/chat/completions", chat("b"))).status).toBe(200);
  });

  it("reset() clears counters, log and cursors; setScript() keeps counters and refuses a bad script", async () => {
    server.setScript({ conversations: [{ match: "", steps: [503] }] });
    expect((await post("/v1/chat/completions", chat("a"))).status).toBe(503);
    expect(() => server.setScript({ conversations: [{ match: "", steps: ["nope"] }] })).toThrow(
      expect.objectContaining({ code: "ERR_MOCK_SCRIPT" }),
    );
    expect((await post("/v1/chat/completions", chat("a"))).status).toBe(200);
    server.setScript({ conversations: [{ match: "", steps: [503] }] });
    expect(server.stats().total).toBe(2);
    expect((await post("/v1/chat/completions", chat("a"))).status).toBe(503);
    server.reset();
    expect(server.stats()).toEqual({
      total: 0,
      invalid: 0,
      conversations: {},
      outcomes: { completed: 0, fault: 0, client_closed: 0, invalid: 0 },
      maxInFlight: 0,
    });
    expect(server.log).toEqual([]);
    expect((await post("/v1/chat/completions", chat("a"))).status).toBe(503);
    expect(server.log.map((r) => r.seq)).toEqual([4]);
  });

  it("emits request_start and request_end; waitForRequestEnd filters, looks back with since, and times out", async () => {
    const seen: string[] = [];
    const offStart = server.on("request_start", (r) => seen.push(`start ${r.seq}`));
    const offEnd = server.on("request_end", (r) => seen.push(`end ${r.seq} ${r.outcome}`));
    const waiting = server.waitForRequestEnd((r) => r.conversation === "second");
    await post("/v1/chat/completions", chat("first"));
    await post("/v1/chat/completions", chat("second"));
    expect(await waiting).toMatchObject({ seq: 2, conversation: "second", outcome: "completed", status: 200 });
    offStart();
    offEnd();
    await post("/v1/chat/completions", chat("third"));
    expect(seen).toEqual(["start 1", "end 1 completed", "start 2", "end 2 completed"]);
    expect(await server.waitForRequestEnd((r) => r.conversation === "first", 10_000, 0)).toMatchObject({ seq: 1 });
    await expect(server.waitForRequestEnd((r) => r.conversation === "never", 20)).rejects.toMatchObject({
      code: "ERR_MOCK_SERVER",
    });
  });
});

describe("control endpoints", () => {
  it("serve stats, replace the script and reset", async () => {
    await post("/v1/chat/completions", chat("a"));
    const stats = (await (await fetch(`${server.url}/_mock/stats`)).json()) as { total: number };
    expect(stats).toMatchObject({ total: 1, conversations: { a: 1 } });

    const put = (body: string) => fetch(`${server.url}/_mock/script`, { method: "PUT", body });
    const accepted = await put('{ "conversations": [{ "match": "a", "steps": [502] }], } // JSONC');
    expect(accepted.status).toBe(200);
    expect((await post("/v1/chat/completions", chat("a"))).status).toBe(502);

    const refused = await put(JSON.stringify({ faults: [{ probability: 2, step: 500 }] }));
    expect(refused.status).toBe(400);
    const error = (await refused.json()) as { error: { message: string; code: string } };
    expect(error.error.code).toBe("ERR_MOCK_SCRIPT");
    expect(error.error.message).toContain("faults.0.probability");
    expect((await put("{ nope")).status).toBe(400);

    expect((await fetch(`${server.url}/_mock/reset`, { method: "POST" })).status).toBe(200);
    expect(server.stats().total).toBe(0);
    expect((await fetch(`${server.url}/_mock/reset`)).status).toBe(405);
  });
});

describe("malformed requests and misbehaving clients", () => {
  it("answers bad bodies with a 4xx in the route's wire format, counted as invalid", async () => {
    const invalidJson = await post("/v1/chat/completions", "{ not json");
    expect(invalidJson.status).toBe(400);
    const openAiError = (await invalidJson.json()) as { error: { message: string; type: string } };
    expect(openAiError.error).toMatchObject({ type: "invalid_request_error", param: null, code: null });
    expect(openAiError.error.message).toContain("not valid JSON");

    const noMessages = await post("/v1/messages", { model: "mock-1", max_tokens: 5 });
    expect(noMessages.status).toBe(400);
    const anthropicError = (await noMessages.json()) as { type: string; error: { type: string; message: string } };
    expect(anthropicError).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(anthropicError.error.message).toContain("'messages'");
    expect(noMessages.headers.get("request-id")).toMatch(/^req_mock\d+$/);

    expect((await post("/chat/completions", { messages: [{ role: "user", content: "a" }] })).status).toBe(400);
    expect((await post("/messages", "[1, 2]")).status).toBe(400);
    expect((await post("/v1/chat/completions", chat("a", { stream: "yes" }))).status).toBe(400);
    expect((await post("/v1/chat/completions", { model: "m", messages: ["hi"] })).status).toBe(400);

    const notFound = await post("/v1/completions", chat("a"));
    expect(notFound.status).toBe(404);
    const notFoundBody = (await notFound.json()) as { error: { message: string } };
    expect(notFoundBody.error.message).toContain("/v1/completions");
    expect(notFoundBody.error.message).toContain("POST /v1/messages");

    const wrongMethod = await fetch(`${server.url}/v1/chat/completions`);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("POST");

    expect(server.stats()).toMatchObject({ total: 0, invalid: 8, outcomes: { invalid: 8 } });
    expect(server.log.every((r) => r.outcome === "invalid" && r.step === "none")).toBe(true);
    expect((await post("/v1/chat/completions", chat("fine"))).status).toBe(200);
  });

  it("refuses a body over 16 MiB with 413 without buffering it, declared or streamed", async () => {
    const big = Buffer.alloc(17 * 1024 * 1024, 0x20);
    const declared = await post("/v1/chat/completions", big.toString());
    expect(declared.status).toBe(413);

    const streamed = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(
        `${server.url}/v1/messages`,
        { method: "POST", headers: { "transfer-encoding": "chunked" } },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      // The server may close while the rest is still being written; only the status matters.
      req.on("error", (error) => reject(error));
      for (let offset = 0; offset < big.length; offset += 1024 * 1024)
        req.write(big.subarray(offset, offset + 1024 * 1024));
      req.end();
    });
    expect(streamed).toBe(413);
    expect(server.stats().invalid).toBe(2);
    expect((await post("/v1/chat/completions", chat("after"))).status).toBe(200);
  });

  it("survives clients that disconnect mid-body and mid-stream", async () => {
    await new Promise<void>((resolve) => {
      const socket = connect(server.port, "127.0.0.1", () => {
        socket.write(
          'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":',
          () => socket.destroy(),
        );
      });
      socket.on("close", () => resolve());
    });

    server.setScript({ tokenDelayMs: 60_000 });
    const controller = new AbortController();
    const response = await post("/v1/chat/completions", chat("leaving", { stream: true }), {}, controller.signal);
    const reader = response.body?.getReader();
    const first = await reader?.read();
    expect(new TextDecoder().decode(first?.value)).toContain('"role":"assistant"');
    const ended = server.waitForRequestEnd(undefined, 10_000, 0);
    controller.abort();
    expect(await ended).toMatchObject({ step: "ok", outcome: "client_closed" });

    server.setScript({});
    expect((await post("/v1/chat/completions", chat("still here"))).status).toBe(200);
    expect(server.stats().outcomes).toEqual({ completed: 1, fault: 0, client_closed: 1, invalid: 0 });
  });
});

describe("startMockServer options", () => {
  it("validates the script and options, and reports a port in use", async () => {
    await expect(
      startMockServer({
        script: {
          faults: [
            { probability: 0.7, step: 500 },
            { probability: 0.7, step: 503 },
          ],
        },
      }),
    ).rejects.toMatchObject({ code: "ERR_MOCK_SCRIPT" });
    await expect(startMockServer({ port: -1 })).rejects.toMatchObject({ code: "ERR_MOCK_SERVER" });
    await expect(startMockServer({ port: server.port })).rejects.toMatchObject({ code: "ERR_MOCK_SERVER" });
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
  });
});
