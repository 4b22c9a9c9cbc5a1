/**
 * Adjacent user turns on the wire, per API, through a session's model stream (model-stream.ts):
 * pi-ai's real providers and SDKs send each request over real HTTP to a server on 127.0.0.1 that
 * keeps its body. An API that takes adjacent user messages gets them as pi 0.73.1 sends them,
 * separate; Bedrock's Converse and Gemini's APIs, which refuse two turns of one role in a row, get
 * them merged into one turn in their payload (alternating-turns.ts), tool results included.
 * The side-by-side check against pi itself is test/main/rpc/rpc-user-turns.process.test.ts.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Api, AssistantMessage, Context, Message, Model } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import { emptyUsage } from "../../../src/shared/usage.js";
import { RequestCapture } from "../../../src/worker/request-capture/request-capture.js";
import { Credentials } from "../../../src/worker/session/credentials.js";
import { modelStream } from "../../../src/worker/session/model-stream.js";
import { within } from "../../fixtures/bounded.js";
import { SSE_HEADERS, sseChunk } from "../../fixtures/models.mjs";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Answer = (res: ServerResponse) => void;

/** Each API's answer: a short reply where the format is simple to write, else an error (the body is what counts). */
const ANSWERS: Record<string, Answer> = {
  "openai-completions": (res) => {
    res.writeHead(200, SSE_HEADERS);
    res.write(sseChunk({ role: "assistant", content: "ok" }));
    res.end(`${sseChunk({}, "stop")}data: [DONE]\n\n`);
  },
  "google-generative-ai": (res) => {
    res.writeHead(200, SSE_HEADERS);
    const chunk = {
      candidates: [{ content: { role: "model", parts: [{ text: "ok" }] }, finishReason: "STOP", index: 0 }],
    };
    res.end(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
  },
  // Bedrock answers in AWS's binary event stream: a validation error is enough here.
  "bedrock-converse-stream": (res) => {
    res.writeHead(400, { "content-type": "application/json", "x-amzn-errortype": "ValidationException" });
    res.end(JSON.stringify({ message: "captured" }));
  },
};

/** A server on 127.0.0.1 answering as `api`'s endpoint; resolves with its URL and the JSON bodies it got. */
async function endpoint(api: string): Promise<{ url: string; bodies: Record<string, unknown>[] }> {
  const bodies: Record<string, unknown>[] = [];
  const answer = ANSWERS[api] as Answer;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on("end", () => {
      bodies.push(JSON.parse(body) as Record<string, unknown>);
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies };
}

function modelOf(api: Api, url: string): Model<Api> {
  const ids: Record<string, [string, string, string]> = {
    "openai-completions": ["mock", "mock-1", `${url}/v1`],
    "google-generative-ai": ["google", "gemini-test", url],
    "bedrock-converse-stream": ["amazon-bedrock", "test.model-v1:0", url],
  };
  const [provider, id, baseUrl] = ids[api] as [string, string, string];
  return {
    id,
    name: id,
    api,
    provider,
    baseUrl,
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128_000,
    maxTokens: 1024,
    ...(api === "openai-completions" ? { compat: { supportsDeveloperRole: false } } : {}),
  };
}

const user = (text: string): Message => ({ role: "user", content: [{ type: "text", text }], timestamp: 1 });

/** A reply of `model` that called the tool `ask`, and the tool's result. */
function toolTurn(model: Model<Api>): Message[] {
  const call: AssistantMessage = {
    role: "assistant",
    content: [{ type: "toolCall", id: "call_1", name: "ask", arguments: {} }],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: emptyUsage(),
    stopReason: "toolUse",
    timestamp: 1,
  };
  const result: Message = {
    role: "toolResult",
    toolCallId: "call_1",
    toolName: "ask",
    content: [{ type: "text", text: "answered" }],
    isError: false,
    timestamp: 1,
  };
  return [call, result];
}

/** Sends one request of `messages` through a session's model stream; resolves with the body the server got. */
async function sent(api: Api, messages: (model: Model<Api>) => Message[]): Promise<Record<string, unknown>> {
  const { url, bodies } = await endpoint(api);
  const model = modelOf(api, url);
  const credentials = new Credentials();
  credentials.set(model, "test-key", false);
  const stream = modelStream({ provider: { maxRetries: 0 }, capture: new RequestCapture(), credentials });
  const context: Context = { systemPrompt: "Be brief.", messages: messages(model) };
  const events = await stream(model, context, { apiKey: "test-key" });
  await within(events.result(), 10_000, `the ${api} request`);
  expect(bodies).toHaveLength(1);
  return bodies[0] as Record<string, unknown>;
}

/** Each turn's role and the texts of its parts (tool results as `tool:<text>`), from a payload's turn list. */
function turns(list: unknown, parts: "content" | "parts"): [string, string[]][] {
  return (list as Record<string, unknown>[]).map((turn) => [
    String(turn.role),
    (Array.isArray(turn[parts]) ? (turn[parts] as Record<string, unknown>[]) : [{ text: turn[parts] }]).flatMap(
      (part) => {
        if (typeof part.text === "string") return [part.text];
        const result = (part.toolResult ?? part.functionResponse) as Record<string, unknown> | undefined;
        if (result !== undefined) return [`tool:${JSON.stringify(result).includes("answered") ? "answered" : "?"}`];
        if (part.toolUse !== undefined || part.functionCall !== undefined) return ["call"];
        return [];
      },
    ),
  ]);
}

describe("adjacent user turns on the wire", () => {
  it("OpenAI chat completions gets each user message as its own message, as pi sends them", async () => {
    const body = await sent("openai-completions", () => [user("ran one"), user("ran two"), user("why?")]);
    expect(turns(body.messages, "content")).toEqual([
      ["system", ["Be brief."]],
      ["user", ["ran one"]],
      ["user", ["ran two"]],
      ["user", ["why?"]],
    ]);
  });

  it("Gemini gets adjacent user turns as one turn, their parts in order, a tool result's included", async () => {
    const body = await sent("google-generative-ai", (model) => [
      user("ran one"),
      user("why?"),
      ...toolTurn(model),
      user("steered"),
      user("followed up"),
    ]);
    expect(turns(body.contents, "parts")).toEqual([
      ["user", ["ran one", "why?"]],
      ["model", ["call"]],
      ["user", ["tool:answered", "steered", "followed up"]],
    ]);
  });

  it("Bedrock Converse gets adjacent user turns as one turn, their parts in order, a tool result's included", async () => {
    const saved = { skip: process.env.AWS_BEDROCK_SKIP_AUTH, http1: process.env.AWS_BEDROCK_FORCE_HTTP1 };
    // No AWS credentials (dummy ones, unsigned for real) and HTTP/1.1 to the server above.
    process.env.AWS_BEDROCK_SKIP_AUTH = "1";
    process.env.AWS_BEDROCK_FORCE_HTTP1 = "1";
    cleanups.push(() => {
      for (const [key, value] of [
        ["AWS_BEDROCK_SKIP_AUTH", saved.skip],
        ["AWS_BEDROCK_FORCE_HTTP1", saved.http1],
      ] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    });
    const body = await sent("bedrock-converse-stream", (model) => [
      user("ran one"),
      user("why?"),
      ...toolTurn(model),
      user("steered"),
    ]);
    expect(turns(body.messages, "content")).toEqual([
      ["user", ["ran one", "why?"]],
      ["assistant", ["call"]],
      ["user", ["tool:answered", "steered"]],
    ]);
  });
});
