/**
 * Real providers on the real stack: the built package, a real piscina worker, pi-ai's
 * real OpenAI and Anthropic providers (the official SDKs), and the mock model server on 127.0.0.1.
 * Models come from a models.json in a temporary LIFELINE_DIR, as users configure them.
 *
 * SPEC rules: B1 (one retry authority), B2 (structured classification), B6 (Retry-After), X3
 * (abort closes the connection), X6 (failures cross as data), R14 (event payloads).
 *
 * The fault table this file produces is docs/errors.md; the last test keeps the two in step
 * (`UPDATE_ERRORS_DOC=1 npx vitest run test/worker/providers.thread.test.ts` rewrites it).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { isContextOverflow } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { withHostInternals } from "../../dist/main/host/host-internals.js";
import {
  type AgentSession,
  createSessionHost,
  explainMessage,
  InMemoryAuthStorage,
  LifelineError,
  type PromptResult,
  requestFailureOf,
  type SessionEvent,
  type SessionHost,
  type SessionHostOptions,
} from "../../dist/main/index.js";
import type { MockStep } from "../../dist/mock-server/index.js";
import { tempDir, within } from "../fixtures/bounded.js";
import { nextEvent } from "../fixtures/events.js";
import { mockServerSuite } from "../fixtures/mock-server-suite.js";

const ERRORS_DOC = new URL("../../docs/errors.md", import.meta.url);
const SECRET = "sk-lifeline-test-6f1d2c9a8b7e";
const APIS = ["openai-completions", "anthropic-messages"] as const;
type TestApi = (typeof APIS)[number];

const suite = mockServerSuite();
const { cleanups } = suite;

function modelsJson(extra: Record<string, unknown> = {}): string {
  const compat = { supportsDeveloperRole: false, supportsReasoningEffort: false };
  return JSON.stringify({
    providers: {
      "mock-openai": {
        baseUrl: `${suite.server.url}/v1`,
        api: "openai-completions",
        apiKey: SECRET,
        compat,
        models: [{ id: "mock-1" }],
      },
      "mock-anthropic": {
        baseUrl: suite.server.url,
        api: "anthropic-messages",
        apiKey: SECRET,
        models: [{ id: "mock-1" }],
      },
      ...extra,
    },
  });
}

/** A host on the real pool whose LIFELINE_DIR holds `models`. */
function hostWith(options: SessionHostOptions = {}, models = modelsJson()): SessionHost {
  const dir = tempDir(cleanups);
  writeFileSync(`${dir}/models.json`, models);
  const host = createSessionHost({
    lifelineDir: dir,
    cwd: dir,
    threads: 1,
    settings: { retry: { baseDelayMs: 5 } },
    ...options,
  });
  cleanups.push(() => host.close());
  return host;
}

function providerOf(api: TestApi): string {
  return api === "openai-completions" ? "mock-openai/mock-1" : "mock-anthropic/mock-1";
}

let conversationCounter = 0;
/** A prompt text unique to this test run, scripted with `steps` on the mock suite.server. */
function scripted(name: string, steps: readonly (MockStep | number | string)[]): string {
  const text = `case ${++conversationCounter} ${name}`;
  scripts.push({ match: text, steps: [...steps] });
  suite.server.setScript({ reply: "The mock answers.", conversations: scripts });
  return text;
}
const scripts: { match: string; steps: unknown[] }[] = [];

function collect(session: AgentSession): SessionEvent[] {
  const events: SessionEvent[] = [];
  session.subscribe((event) => events.push(event));
  return events;
}

function retryEvents(events: readonly SessionEvent[]) {
  return events.filter((event) => event.type === "auto_retry_start" || event.type === "auto_retry_end");
}

function answerOf(result: PromptResult): string {
  return (result.message?.content ?? []).map((block) => (block.type === "text" ? block.text : "")).join("");
}

/** The first failed assistant message the session reported, as it crossed the thread. */
function firstFailure(events: readonly SessionEvent[]) {
  for (const event of events) {
    if (event.type === "message_end" && event.message.role === "assistant" && event.message.stopReason === "error") {
      return event.message;
    }
  }
  return undefined;
}

interface FaultCase {
  name: string;
  step: MockStep | number | string;
  retried: boolean;
  /** A class other than the plain retryable/fatal split. */
  failureClass?: "overflow" | "usage_limit";
}

const FAULTS: FaultCase[] = [
  { name: "429", step: 429, retried: true },
  { name: "500", step: 500, retried: true },
  { name: "502", step: 502, retried: true },
  { name: "503", step: 503, retried: true },
  { name: "504", step: 504, retried: true },
  { name: "529", step: 529, retried: true },
  { name: "usage_limit", step: { type: "usage_limit", retryAfter: 1 }, retried: true, failureClass: "usage_limit" },
  { name: "reset", step: "reset", retried: true },
  { name: "cut", step: { type: "cut", afterTokens: 2 }, retried: true },
  { name: "stream_error", step: { type: "stream_error", afterTokens: 2 }, retried: true },
  { name: "401", step: 401, retried: false },
  { name: "400", step: 400, retried: false },
  { name: "404", step: 404, retried: false },
  { name: "context_overflow", step: "context_overflow", retried: false, failureClass: "overflow" },
  {
    name: "stream_error refusal",
    step: {
      type: "stream_error",
      errorType: "invalid_request_error",
      code: "content_policy_violation",
      afterTokens: 2,
    },
    retried: false,
  },
];

interface TableRow {
  api: TestApi;
  fault: string;
  status: string;
  errorType: string;
  errorMessage: string;
  failureClass: string;
  basis: string;
  retried: boolean;
}
const table: TableRow[] = [];

describe("real providers against the mock model server", () => {
  for (const api of APIS) {
    describe(api, () => {
      it.each(FAULTS)(
        "B2/R14: $name is retried exactly when the classification says so, with the seed's payloads",
        async ({ name, step, retried, failureClass }) => {
          const auth = new InMemoryAuthStorage();
          const host = hostWith({ authStorage: auth });
          const session = await host.createSession({ model: providerOf(api) });
          const events = collect(session);
          const text = scripted(`${api} ${name}`, [step, "ok"]);
          const result = await within(session.prompt(text), 20_000, `the ${name} prompt`);

          const failed = firstFailure(events);
          expect(failed).toBeDefined();
          if (failed === undefined) return;
          const classification = explainMessage(failed, (m) => isContextOverflow(m as never));
          const errorMessage = failed.errorMessage ?? "";
          if (retried) {
            expect(retryEvents(events)).toEqual([
              { type: "auto_retry_start", attempt: 1, maxAttempts: 3, delayMs: 5, errorMessage },
              { type: "auto_retry_end", success: true, attempt: 1, reason: "success" },
            ]);
            expect(result.stopReason).toBe("stop");
            expect(answerOf(result)).toBe("The mock answers.");
            expect(result.retries).toBe(1);
            expect(suite.server.requests(text)).toBe(2);
          } else {
            expect(retryEvents(events)).toEqual([]);
            expect(result.stopReason).toBe("error");
            expect(suite.server.requests(text)).toBe(1);
          }
          expect(classification.failureClass).toBe(failureClass ?? (retried ? "retryable" : "fatal"));
          if (failureClass === "overflow") expect(events.some((event) => event.type === "compaction_start")).toBe(true);
          if (failureClass === "usage_limit") {
            expect(auth.records).toEqual([
              expect.objectContaining({ provider: providerOf(api).split("/")[0], retryAfterMs: 1000 }),
            ]);
          }
          const failure = requestFailureOf(failed);
          table.push({
            api,
            fault: name,
            status: failure?.status === undefined ? "—" : String(failure.status),
            errorType: failure?.errorCode ?? failure?.errorType ?? failure?.network?.code ?? "—",
            errorMessage: normalise(errorMessage),
            failureClass: classification.failureClass,
            basis: classification.basis,
            retried,
          });
        },
      );

      it("B1: an exhausted chain costs exactly 1 + retry.maxRetries requests with default provider settings", async () => {
        const host = hostWith();
        const session = await host.createSession({ model: providerOf(api) });
        const events = collect(session);
        const text = scripted(`${api} exhausted`, [503, 503, 503, 503, 503, 503]);
        const result = await within(session.prompt(text), 20_000, "the exhausted chain");
        expect(result.stopReason).toBe("error");
        expect(suite.server.requests(text)).toBe(4);
        expect(retryEvents(events).at(-1)).toEqual({
          type: "auto_retry_end",
          success: false,
          attempt: 3,
          reason: "exhausted",
          finalError: result.errorMessage,
        });
      });

      it("B1: retry.provider.maxRetries turns the SDK's own retries back on, and they multiply", async () => {
        const host = hostWith({ settings: { retry: { baseDelayMs: 5, maxRetries: 1, provider: { maxRetries: 1 } } } });
        const session = await host.createSession({ model: providerOf(api) });
        // retry-after-ms: 1 keeps the SDK's own backoff short.
        const text = scripted(`${api} sdk retries`, Array(6).fill({ type: "error", status: 503, retryAfterMs: 1 }));
        const result = await within(session.prompt(text), 20_000, "the chain with SDK retries");
        expect(result.stopReason).toBe("error");
        expect(suite.server.requests(text)).toBe(4);
      });

      it("X9: each reply's message_end carries its request's timing: no first byte without a response, one stamp per delta", async () => {
        const host = hostWith();
        const session = await host.createSession({ model: providerOf(api) });
        const events = collect(session);
        const text = scripted(`${api} timing`, ["reset", 503, { type: "ok", tokens: 8, tokenDelayMs: 3 }]);
        const result = await within(session.prompt(text), 20_000, "the retried prompt");
        expect(result.stopReason).toBe("stop");
        const timings = events.flatMap((event) =>
          event.type === "message_end" && event.message.role === "assistant" ? [event.timing] : [],
        );
        expect(timings).toHaveLength(3);
        const [reset, failed, answered] = timings;
        // The reset got no response; the 503 did, but streamed nothing.
        expect(reset).toMatchObject({ chunks: 0, chunkGapsMs: [] });
        expect(reset).not.toHaveProperty("firstByteMs");
        expect(failed).toMatchObject({ chunks: 0, chunkGapsMs: [] });
        expect(failed?.firstByteMs).toBeGreaterThanOrEqual(failed?.requestStartMs as number);
        // Eight word tokens, eight deltas as the SDK parsed them (merged or not when they crossed).
        expect(answered?.chunks).toBe(8);
        expect(answered?.chunkGapsMs).toHaveLength(7);
        const t = answered as NonNullable<typeof answered>;
        expect(t.requestStartMs).toBeLessThanOrEqual(t.firstByteMs as number);
        expect(t.firstByteMs).toBeLessThanOrEqual(t.firstTokenMs as number);
        expect(t.firstTokenMs).toBeLessThanOrEqual(t.endMs);
        // The gaps lie between the first token and the end, on the same clock (µs rounding aside).
        const spanned = t.chunkGapsMs.reduce((sum, gap) => sum + gap, 0);
        expect(spanned).toBeLessThanOrEqual(t.endMs - (t.firstTokenMs as number) + 0.01);
        // Attempts follow each other: each starts after the previous one ended.
        expect(failed?.requestStartMs).toBeGreaterThanOrEqual(reset?.endMs as number);
        expect(t.requestStartMs).toBeGreaterThanOrEqual(failed?.endMs as number);
      });

      it("X3: abort() during a streaming answer closes the HTTP connection", async () => {
        const host = hostWith();
        const session = await host.createSession({ model: providerOf(api) });
        const text = scripted(`${api} stall`, [{ type: "stall", afterTokens: 2 }]);
        const since = suite.server.log.at(-1)?.seq ?? 0;
        const closed = suite.server.waitForRequestEnd((record) => record.conversation === text, 10_000, since);
        const delta = nextEvent(session, "message_update");
        const prompt = session.prompt(text);
        await within(delta, 10_000, "the first streamed delta");
        await session.abort();
        expect((await closed).outcome).toBe("client_closed");
        const result = await within(prompt, 10_000, "the aborted prompt");
        expect(result.stopReason).toBe("aborted");
        expect(suite.server.requests(text)).toBe(1);
      });
    });
  }

  describe("B2: errors sent inside a 200 stream", () => {
    it.each(APIS)(
      "%s: an in-stream provider error after a 200 is classified by its type, not as a broken stream",
      async (api) => {
        const host = hostWith();
        const session = await host.createSession({ model: providerOf(api) });
        const events = collect(session);
        const text = scripted(`${api} in-stream refusal`, [
          {
            type: "stream_error",
            errorType: "invalid_request_error",
            code: "content_policy_violation",
            afterTokens: 2,
          },
          "ok",
        ]);
        const result = await within(session.prompt(text), 20_000, "the refused prompt");
        expect(result.stopReason).toBe("error");
        expect(retryEvents(events)).toEqual([]);
        expect(suite.server.requests(text)).toBe(1);
        const failed = firstFailure(events);
        expect(failed === undefined ? undefined : requestFailureOf(failed)).toEqual({
          status: 200,
          errorType: "invalid_request_error",
          // Anthropic's error objects have no code.
          ...(api === "openai-completions" ? { errorCode: "content_policy_violation" } : {}),
          inStream: true,
        });
      },
    );

    it.each(APIS)("%s: a transient in-stream error type is retried, once, with what it said", async (api) => {
      const host = hostWith();
      const session = await host.createSession({ model: providerOf(api) });
      const events = collect(session);
      const text = scripted(`${api} in-stream overload`, [
        { type: "stream_error", errorType: "overloaded_error", afterTokens: 0 },
        "ok",
      ]);
      const result = await within(session.prompt(text), 20_000, "the overloaded prompt");
      expect(answerOf(result)).toBe("The mock answers.");
      expect(suite.server.requests(text)).toBe(2);
      const failed = firstFailure(events);
      expect(failed === undefined ? undefined : explainMessage(failed, () => false)).toEqual({
        failureClass: "retryable",
        basis: "error overloaded_error in stream",
      });
    });
  });

  describe("B6: Retry-After on the main path", () => {
    function recordingHost(retry: Record<string, unknown>): { host: SessionHost; delays: number[] } {
      const delays: number[] = [];
      const host = hostWith(
        withHostInternals(
          { settings: { retry: { baseDelayMs: 5, ...retry } } },
          {
            sleep: (ms) => {
              delays.push(ms);
              return Promise.resolve();
            },
          },
        ),
      );
      return { host, delays };
    }

    it.each(APIS)("%s: honours retry-after-ms and retry-after when respectRetryAfter is on", async (api) => {
      const { host, delays } = recordingHost({ respectRetryAfter: true });
      const session = await host.createSession({ model: providerOf(api) });
      const text = scripted(`${api} hints`, [
        { type: "error", status: 429, retryAfterMs: 1500 },
        { type: "error", status: 503, retryAfter: 2 },
        "ok",
      ]);
      const result = await within(session.prompt(text), 10_000, "the hinted chain");
      expect(result.stopReason).toBe("stop");
      // max(backoff, hint): 5 ms vs 1500 ms, then 10 ms vs 2 s.
      expect(delays).toEqual([1500, 2000]);
    });

    it("ignores the hints when respectRetryAfter is off (the default), so R4's delays stay exact", async () => {
      const { host, delays } = recordingHost({});
      const session = await host.createSession({ model: providerOf("openai-completions") });
      const text = scripted("hints ignored", [{ type: "error", status: 429, retryAfterMs: 1500 }, 503, "ok"]);
      await within(session.prompt(text), 10_000, "the chain");
      expect(delays).toEqual([5, 10]);
    });

    it("fails the chain at once when the hint is above retry.maxDelayMs, saying what the server asked", async () => {
      const { host, delays } = recordingHost({ respectRetryAfter: true, maxDelayMs: 1000 });
      const session = await host.createSession({ model: providerOf("anthropic-messages") });
      const events = collect(session);
      const text = scripted("hint over cap", [{ type: "error", status: 429, retryAfter: 120 }, "ok"]);
      const result = await within(session.prompt(text), 10_000, "the capped chain");
      expect(delays).toEqual([]);
      expect(result.stopReason).toBe("error");
      expect(suite.server.requests(text)).toBe(1);
      const end = retryEvents(events).at(-1);
      expect(end).toMatchObject({ type: "auto_retry_end", success: false, attempt: 0 });
      expect(end?.type === "auto_retry_end" ? end.finalError : "").toMatch(
        /retry after 120s, above retry\.maxDelayMs \(1s\)/,
      );
    });
  });

  describe("settings, keys and bad input", () => {
    it("retry.provider.timeoutMs bounds a request that never answers; the timeout is retried", async () => {
      const host = hostWith({ settings: { retry: { baseDelayMs: 5, provider: { maxRetries: 0, timeoutMs: 300 } } } });
      const session = await host.createSession({ model: providerOf("openai-completions") });
      const events = collect(session);
      const text = scripted("slow headers", [{ type: "ok", delayMs: 30_000 }, "ok"]);
      const result = await within(session.prompt(text), 10_000, "the timed-out prompt");
      expect(result.stopReason).toBe("stop");
      expect(suite.server.requests(text)).toBe(2);
      expect(retryEvents(events)[0]).toMatchObject({ type: "auto_retry_start", errorMessage: "Request timed out." });
    });

    it("a key echoed by the server appears in no event, result or transcript: the worker redacts it", async () => {
      const host = hostWith();
      const session = await host.createSession({ model: providerOf("openai-completions") });
      const events = collect(session);
      const text = scripted("echo the key", [{ type: "error", status: 401, message: `Incorrect API key: ${SECRET}` }]);
      const result = await within(session.prompt(text), 10_000, "the 401");
      const everything = JSON.stringify({ events, result, messages: session.messages, history: session.history });
      expect(everything).not.toContain(SECRET);
      expect(result.errorMessage).toContain("Incorrect API key: [redacted]");
    });

    it("a key echoed in the error type, code or retry headers is redacted from diagnostics", async () => {
      // A server that quotes the key it was sent everywhere but in the error text.
      const echo = createHttpServer((req, res) => {
        const key = req.headers["x-api-key"] ?? req.headers.authorization?.replace(/^Bearer /, "") ?? "none";
        const body = JSON.stringify({
          type: "error",
          error: { type: `type-${key}`, code: key, message: "Slow down." },
        });
        req.resume();
        res.writeHead(429, {
          "content-type": "application/json",
          "retry-after": `${key}`,
          "x-should-retry": `${key}`,
          "x-ratelimit-reset": `1s ${key}`,
        });
        res.end(body);
      });
      await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
      cleanups.push(() => new Promise<void>((resolve) => echo.close(() => resolve())));
      const address = echo.address();
      const url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
      const host = hostWith(
        { settings: { retry: { baseDelayMs: 1, maxRetries: 1 } } },
        modelsJson({
          "echo-openai": { baseUrl: `${url}/v1`, api: "openai-completions", apiKey: SECRET, models: [{ id: "m" }] },
          "echo-anthropic": { baseUrl: url, api: "anthropic-messages", apiKey: SECRET, models: [{ id: "m" }] },
        }),
      );
      for (const model of ["echo-openai/m", "echo-anthropic/m"]) {
        const session = await host.createSession({ model });
        const events = collect(session);
        const result = await within(session.prompt("echo the key"), 10_000, `the echoed 429 of ${model}`);
        expect(result.stopReason).toBe("error");
        const failed = firstFailure(events);
        expect(failed === undefined ? undefined : requestFailureOf(failed)).toEqual({
          status: 429,
          errorType: "type-[redacted]",
          errorCode: "[redacted]",
          headers: {
            "retry-after": "[redacted]",
            "x-should-retry": "[redacted]",
            "x-ratelimit-reset": "1s [redacted]",
          },
        });
        const everything = JSON.stringify({ events, result, messages: session.messages, history: session.history });
        expect(everything).not.toContain(SECRET);
      }
      // The same from an error event inside a 200 stream.
      const session = await host.createSession({ model: providerOf("openai-completions") });
      const events = collect(session);
      const text = scripted("echo the key in stream", [
        { type: "stream_error", errorType: `type-${SECRET}`, code: SECRET, afterTokens: 1 },
      ]);
      const result = await within(session.prompt(text), 10_000, "the echoed in-stream error");
      const failed = firstFailure(events);
      expect(failed === undefined ? undefined : requestFailureOf(failed)).toMatchObject({
        errorType: "type-[redacted]",
        errorCode: "[redacted]",
      });
      const everything = JSON.stringify({ events, result, messages: session.messages, history: session.history });
      expect(everything).not.toContain(SECRET);
    });

    it("an unreachable base URL fails with an error naming the address and the provider", async () => {
      const port = await closedPort();
      const host = hostWith(
        {},
        modelsJson({
          down: {
            baseUrl: `http://127.0.0.1:${port}/v1`,
            api: "openai-completions",
            apiKey: "k",
            models: [{ id: "m" }],
          },
        }),
      );
      const session = await host.createSession({ model: "down/m" });
      const result = await within(session.prompt("anyone there?"), 10_000, "the unreachable prompt");
      expect(result.stopReason).toBe("error");
      expect(result.retries).toBe(3);
      expect(result.errorMessage).toContain(`could not reach http://127.0.0.1:${port} for provider "down"`);
      expect(result.errorMessage).toContain("ECONNREFUSED");
    });

    it("a built-in provider's baseUrl can be pointed at the mock through models.json", async () => {
      const host = hostWith(
        {},
        JSON.stringify({ providers: { anthropic: { baseUrl: suite.server.url, apiKey: SECRET } } }),
      );
      const session = await host.createSession({ model: "anthropic/claude-3-5-haiku-latest" });
      const text = scripted("built-in override", ["ok"]);
      const result = await within(session.prompt(text), 10_000, "the overridden provider");
      expect(answerOf(result)).toBe("The mock answers.");
      expect(session.model.baseUrl).toBe(suite.server.url);
    });

    it("a missing key is ERR_MISSING_API_KEY naming the provider, and the host keeps working", async () => {
      const saved = process.env.ANTHROPIC_API_KEY;
      const savedOauth = process.env.ANTHROPIC_OAUTH_TOKEN;
      delete process.env.ANTHROPIC_API_KEY;
      delete process.env.ANTHROPIC_OAUTH_TOKEN;
      cleanups.push(() => {
        if (saved !== undefined) process.env.ANTHROPIC_API_KEY = saved;
        if (savedOauth !== undefined) process.env.ANTHROPIC_OAUTH_TOKEN = savedOauth;
      });
      const host = hostWith(
        {},
        modelsJson({ nokey: { baseUrl: suite.server.url, api: "anthropic-messages", models: [{ id: "m" }] } }),
      );
      for (const model of ["nokey/m", "anthropic/claude-3-5-haiku-latest"]) {
        const error = await host.createSession({ model }).catch((reason: unknown) => reason);
        expect(error).toBeInstanceOf(LifelineError);
        expect((error as LifelineError).code).toBe("ERR_MISSING_API_KEY");
        expect((error as LifelineError).message).toContain(`"${model.split("/")[0]}"`);
      }
      const session = await host.createSession({ model: "nokey/m", apiKey: "given-in-code" });
      const text = scripted("key in code", ["ok"]);
      expect(answerOf(await within(session.prompt(text), 10_000, "the keyed prompt"))).toBe("The mock answers.");
    });

    it("a malformed models.json is ERR_INVALID_MODELS naming the file; fixing it needs no restart", async () => {
      const dir = tempDir(cleanups);
      writeFileSync(
        `${dir}/models.json`,
        '{"providers": {"mock-openai": {"api": "openai-chat", "models": [{"id": "x"}]}}}',
      );
      const host = createSessionHost({ lifelineDir: dir, cwd: dir, threads: 1 });
      cleanups.push(() => host.close());
      const error = await host.createSession({ model: "mock-openai/mock-1" }).catch((reason: unknown) => reason);
      expect((error as LifelineError).code).toBe("ERR_INVALID_MODELS");
      expect((error as LifelineError).message).toContain(`${dir}/models.json`);
      expect((error as LifelineError).message).toContain("providers.mock-openai.api");
      writeFileSync(`${dir}/models.json`, modelsJson());
      host.reloadSettings();
      const session = await host.createSession({ model: "mock-openai/mock-1" });
      const text = scripted("after the fix", ["ok"]);
      expect(answerOf(await within(session.prompt(text), 10_000, "the prompt"))).toBe("The mock answers.");
    });
  });

  it("docs/errors.md shows what the real stack produced for each fault", () => {
    expect(table).toHaveLength(FAULTS.length * APIS.length);
    const rendered = renderTable(table);
    const doc = readFileSync(ERRORS_DOC, "utf8");
    const start = doc.indexOf(TABLE_START);
    const end = doc.indexOf(TABLE_END);
    expect(start, "docs/errors.md lacks the table markers").toBeGreaterThan(-1);
    const current = doc.slice(start + TABLE_START.length, end);
    if (process.env.UPDATE_ERRORS_DOC === "1") {
      writeFileSync(ERRORS_DOC, doc.slice(0, start + TABLE_START.length) + rendered + doc.slice(end));
      return;
    }
    expect(current, "run UPDATE_ERRORS_DOC=1 npx vitest run test/worker/providers.thread.test.ts").toBe(rendered);
  });
});

const TABLE_START = "<!-- errors-table:start -->\n";
const TABLE_END = "<!-- errors-table:end -->";

function renderTable(rows: readonly TableRow[]): string {
  const order = (row: TableRow) => APIS.indexOf(row.api) * 100 + FAULTS.findIndex((f) => f.name === row.fault);
  const lines = [...rows]
    .sort((a, b) => order(a) - order(b))
    .map((row) =>
      [
        row.api,
        row.fault,
        row.status,
        row.errorType,
        `\`${row.errorMessage.replaceAll("|", "\\|").replaceAll("`", "'")}\``,
        row.failureClass,
        row.basis.replaceAll("|", "\\|"),
        row.retried ? "yes" : "no",
      ].join(" | "),
    )
    .map((line) => `| ${line} |`);
  return [
    "| API | fault | status | type or code | errorMessage (as pi-ai reports it) | class | decided by | retried |",
    "|---|---|---|---|---|---|---|---|",
    ...lines,
    "",
  ].join("\n");
}

/** Removes what differs between runs: ports and request ids. */
function normalise(text: string): string {
  return text
    .replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:PORT")
    .replace(/req_[A-Za-z0-9]+/g, "req_…")
    .replace(/\s+/g, " ")
    .trim();
}

/** A port nothing listens on: bound once, then released. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}
