/**
 * R1 compaction on the real stack: the built package, a real piscina worker, pi-ai's OpenAI
 * provider, and the mock model server on 127.0.0.1 with a context window (`contextWindow`: a
 * request over it gets the provider's overflow error). The summary request goes to the mock
 * too, so its request log shows every model call a compaction made and how large each was.
 *
 * Every request of a test carries one `x-mock-conversation` key (a models.json header): after a
 * compaction the first user message changes, and the steps must still apply in order.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  type AgentSession,
  type CompactionEndEvent,
  createSessionHost,
  type SessionEvent,
  type SessionHostOptions,
} from "../../../dist/main/index.js";
import type { MockStep } from "../../../dist/mock-server/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { spawnRpc } from "../../fixtures/rpc-child.js";

/** The model's window, in the mock server's prompt tokens (4 characters of the messages JSON). */
const WINDOW = 3000;
/** About 1000 tokens of prompt text: three prompts overflow the window, two do not. */
const PAD = "lorem ipsum dolor sit amet ".repeat(150);
const SUMMARY = "SUMMARY: the user sent padded prompts one and two.";

const suite = mockServerSuite();
const { cleanups } = suite;

let counter = 0;

/** A conversation key for this test, its steps on the mock, and a LIFELINE_DIR whose model uses it. */
function setup(steps: readonly (MockStep | string | number)[], window: number | undefined = WINDOW) {
  const key = `compaction ${++counter} ${Date.now()}`;
  suite.server.setScript({
    reply: "The mock answers.",
    ...(window === undefined ? {} : { contextWindow: window }),
    conversations: [{ match: key, steps: [...steps] }],
  });
  const dir = tempDir(cleanups);
  const models = JSON.stringify({
    providers: {
      mock: {
        baseUrl: `${suite.server.url}/v1`,
        api: "openai-completions",
        apiKey: "dummy",
        headers: { "x-mock-conversation": key },
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: "mock-1", contextWindow: WINDOW, maxTokens: 1000 }],
      },
    },
  });
  writeFileSync(`${dir}/models.json`, models);
  return { key, dir, models };
}

function hostIn(dir: string, options: SessionHostOptions = {}) {
  const host = createSessionHost({
    lifelineDir: dir,
    cwd: dir,
    threads: 1,
    settings: { retry: { baseDelayMs: 5 }, compaction: { reserveTokens: 0, keepRecentTokens: 500 } },
    ...options,
  });
  cleanups.push(() => host.close());
  return host;
}

function collect(session: AgentSession): SessionEvent[] {
  const events: SessionEvent[] = [];
  session.subscribe((event) => events.push(event));
  return events;
}

function compactionEvents(events: readonly SessionEvent[]) {
  return events.filter((e) => e.type === "compaction_start" || e.type === "compaction_end");
}

/** The mock's records of this test's requests, oldest first. */
function requestsOf(key: string) {
  return suite.server.log.filter((record) => record.conversation === key);
}

/** Two prompts that fit, leaving a transcript that the third prompt overflows. */
async function fillTranscript(session: AgentSession): Promise<void> {
  for (const n of ["one", "two"]) {
    const result = await within(session.prompt(`prompt ${n} ${PAD}`), 20_000, `prompt ${n}`);
    expect(result.stopReason).toBe("stop");
  }
}

describe("compaction (R1) through the mock model server", () => {
  it("R1: an overflow compacts the transcript with the session's model and the prompt is answered, smaller than the window", async () => {
    const { key, dir } = setup(["ok", "ok", { type: "ok", text: SUMMARY }, "ok"]);
    const session = await hostIn(dir).createSession({ model: "mock/mock-1" });
    await fillTranscript(session);
    const events = collect(session);

    const result = await within(session.prompt(`prompt three ${PAD}`), 20_000, "the overflowing prompt");

    expect(result.stopReason).toBe("stop");
    expect(result.retries).toBe(0);
    const steps = requestsOf(key).map((r) => r.step);
    // two prompts, the overflow, the summary request, the continued prompt
    expect(steps).toEqual(["ok", "ok", "context_overflow", "ok", "ok"]);
    const [, , overflowed, summary, continued] = requestsOf(key);
    expect(overflowed?.promptTokens).toBeGreaterThan(WINDOW);
    expect(summary?.promptTokens).toBeLessThan(WINDOW);
    expect(continued?.promptTokens).toBeLessThan(WINDOW);
    const end = events.find((e): e is CompactionEndEvent => e.type === "compaction_end");
    expect(compactionEvents(events)).toEqual([{ type: "compaction_start", reason: "overflow" }, end]);
    expect(end).toMatchObject({ reason: "overflow", aborted: false, willRetry: true, result: { summary: SUMMARY } });
    expect(end?.errorMessage).toBeUndefined();
    expect(end?.result?.tokensAfter).toBeLessThan(end?.result?.tokensBefore ?? 0);
    // The transcript is the summary, then the kept prompt and its answer.
    expect(session.messages.map((m) => m.role)).toEqual(["compactionSummary", "user", "assistant"]);
    expect(session.messages[0]).toMatchObject({ summary: SUMMARY });
  });

  it("R1: compaction runs at the threshold after a successful prompt, before it settles", async () => {
    const { key, dir } = setup(["ok", "ok", { type: "ok", text: SUMMARY }, "ok"], undefined);
    const host = hostIn(dir, {
      settings: { retry: { baseDelayMs: 5 }, compaction: { reserveTokens: 1200, keepRecentTokens: 500 } },
    });
    const session = await host.createSession({ model: "mock/mock-1" });
    const events = collect(session);
    await within(session.prompt(`prompt one ${PAD}`), 20_000, "prompt one");
    expect(compactionEvents(events)).toEqual([]);

    await within(session.prompt(`prompt two ${PAD}`), 20_000, "prompt two");

    const ends = events.filter((e): e is CompactionEndEvent => e.type === "compaction_end");
    expect(compactionEvents(events)).toEqual([{ type: "compaction_start", reason: "threshold" }, ends[0]]);
    expect(ends[0]).toMatchObject({ reason: "threshold", willRetry: false, result: { summary: SUMMARY } });
    // Settled after the compaction: the threshold's summary is the third request.
    expect(events.findIndex((e) => e.type === "compaction_end")).toBeLessThan(
      events.findIndex(
        (e) => e.type === "agent_settled" && events.indexOf(e) > events.indexOf(ends[0] as SessionEvent),
      ),
    );
    expect(requestsOf(key)).toHaveLength(3);
    await within(session.prompt("prompt three"), 20_000, "prompt three");
    const [first, second, , third] = requestsOf(key);
    expect(third?.promptTokens).toBeLessThan(second?.promptTokens ?? 0);
    expect(first?.promptTokens).toBeGreaterThan(0);
  });

  it("R1: a failed summary is reported once in compaction_end and never retried; the prompt settles with the overflow", async () => {
    const { key, dir } = setup(["ok", "ok", 500, "ok", "ok"]);
    const session = await hostIn(dir).createSession({ model: "mock/mock-1" });
    await fillTranscript(session);
    const events = collect(session);

    const result = await within(session.prompt(`prompt three ${PAD}`), 20_000, "the overflowing prompt");

    expect(result.stopReason).toBe("error");
    const end = events.find((e): e is CompactionEndEvent => e.type === "compaction_end");
    expect(end).toMatchObject({ reason: "overflow", result: null, aborted: false, willRetry: false });
    expect(end?.errorMessage).toMatch(/summary request failed/);
    expect(compactionEvents(events)).toHaveLength(2);
    expect(events.filter((e) => e.type === "auto_retry_start")).toEqual([]);
    // two prompts, the overflow, the one failed summary: nothing more
    expect(requestsOf(key).map((r) => r.step)).toEqual(["ok", "ok", "context_overflow", "error"]);
    // The transcript is as it was: the overflowed reply is kept as the record of the failure.
    expect(session.messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "error" });
  });

  it("R1 R9: abort() during the summary request cancels the compaction, closes the request and the prompt settles", async () => {
    const { key, dir } = setup(["ok", "ok", { type: "stall", afterTokens: 1 }, "ok"]);
    const session = await hostIn(dir).createSession({ model: "mock/mock-1" });
    await fillTranscript(session);
    const events = collect(session);
    const since = suite.server.log.at(-1)?.seq ?? 0;
    const summaryStarted = new Promise<void>((resolve) => {
      const off = suite.server.on("request_start", (record) => {
        if (record.conversation === key && record.step === "stall") {
          off();
          resolve();
        }
      });
    });
    const closed = suite.server.waitForRequestEnd((r) => r.conversation === key && r.step === "stall", 20_000, since);

    const done = session.prompt(`prompt three ${PAD}`);
    await within(summaryStarted, 20_000, "the summary request");
    expect(session.isCompacting).toBe(true);
    await session.abort();
    const result = await within(done, 20_000, "the aborted prompt");

    expect((await closed).outcome).toBe("client_closed");
    expect(result.stopReason).toBe("error");
    const end = events.find((e): e is CompactionEndEvent => e.type === "compaction_end");
    expect(end).toMatchObject({ reason: "overflow", result: null, aborted: true, willRetry: false });
    expect(requestsOf(key)).toHaveLength(4);
    expect(session.isCompacting).toBe(false);
  });

  it("R1: with auto-compaction off for the session, an overflow settles with its error and nothing is summarized", async () => {
    const { key, dir } = setup(["ok", "ok", "ok"]);
    const session = await hostIn(dir).createSession({ model: "mock/mock-1" });
    await fillTranscript(session);
    session.setAutoCompactionEnabled(false);
    const events = collect(session);

    const result = await within(session.prompt(`prompt three ${PAD}`), 20_000, "the overflowing prompt");

    expect(result.stopReason).toBe("error");
    expect(compactionEvents(events)).toEqual([]);
    expect(requestsOf(key).map((r) => r.step)).toEqual(["ok", "ok", "context_overflow"]);
    expect(session.autoCompactionEnabled).toBe(false);
  });

  it("R1: a host's onContextOverflow overrides the summary; its { messages } are installed and the prompt goes on", async () => {
    const { key, dir } = setup(["ok", "ok", "ok"]);
    const seen: string[] = [];
    const session = await hostIn(dir).createSession({
      model: "mock/mock-1",
      onContextOverflow: ({ messages, errorMessage }) => {
        seen.push(errorMessage);
        const last = messages.filter((m) => m.role === "user").at(-1);
        return { messages: last === undefined ? [] : [last] };
      },
    });
    await fillTranscript(session);
    const events = collect(session);

    const result = await within(session.prompt(`prompt three ${PAD}`), 20_000, "the overflowing prompt");

    expect(result.stopReason).toBe("stop");
    expect(seen).toHaveLength(1);
    // No summary request: the hook replaced it.
    expect(requestsOf(key).map((r) => r.step)).toEqual(["ok", "ok", "context_overflow", "ok"]);
    expect(requestsOf(key).at(-1)?.promptTokens).toBeLessThan(WINDOW);
    const end = events.find((e): e is CompactionEndEvent => e.type === "compaction_end");
    expect(end).toMatchObject({ reason: "overflow", willRetry: true, aborted: false });
    expect(session.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("R1 B7: the compaction is stored as pi's compaction entry and a resumed session starts from summary and kept messages", async () => {
    const { key, dir } = setup(["ok", "ok", { type: "ok", text: SUMMARY }, "ok", "ok"]);
    const host = hostIn(dir, { sessions: {} });
    const session = await host.createSession({ model: "mock/mock-1" });
    await fillTranscript(session);
    await within(session.prompt(`prompt three ${PAD}`), 20_000, "the overflowing prompt");
    const file = session.sessionFile ?? "";
    await session.flushSession();
    await session.dispose();

    const entries = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const compaction = entries.find((e) => e.type === "compaction");
    expect(compaction).toMatchObject({ summary: SUMMARY, tokensBefore: expect.any(Number) });
    const kept = entries.find((e) => e.id === compaction?.firstKeptEntryId);
    expect(kept).toMatchObject({ type: "message", message: { role: "user" } });
    expect(JSON.stringify(kept)).toContain("prompt three");

    const resumed = await host.resumeSession(file);
    expect(resumed.messages.map((m) => m.role)).toEqual(["compactionSummary", "user", "assistant"]);
    expect(resumed.messages[0]).toMatchObject({ summary: SUMMARY });
    const result = await within(resumed.prompt("prompt four"), 20_000, "prompt four after resume");
    expect(result.stopReason).toBe("stop");
    expect(requestsOf(key).at(-1)?.promptTokens).toBeLessThan(WINDOW / 2);
  });

  it("R1: RPC compact (a real child process) answers with the result; set_auto_compaction changes the session only", async () => {
    const { key, models } = setup(["ok", "ok", { type: "ok", text: SUMMARY }]);
    const rpc = spawnRpc(cleanups, {
      models,
      settings: { retry: { baseDelayMs: 5 }, compaction: { reserveTokens: 0, keepRecentTokens: 500 } },
      args: ["--provider", "mock", "--model", "mock-1"],
    });
    for (const n of ["one", "two"]) {
      const from = rpc.records.length;
      await rpc.request({ type: "prompt", message: `prompt ${n} ${PAD}` });
      await rpc.waitFor((r) => r.type === "agent_settled", `prompt ${n} settled`, from);
    }
    const from = rpc.records.length;
    const isResponse = (id: string) => (r: { type: string; id?: unknown }) => r.type === "response" && r.id === id;

    // One write: the prompt is read while the compaction is in progress.
    rpc.send(
      `${JSON.stringify({ id: "c", type: "compact", customInstructions: "keep the numbers" })}\n${JSON.stringify({ id: "p", type: "prompt", message: "too early" })}\n`,
    );
    const refused = await rpc.waitFor(isResponse("p"), "the prompt's response", from);
    const response = await rpc.waitFor(isResponse("c"), "the compact response", from, 20_000);

    // regression: the prompt was answered success and then failed on stderr only
    expect(refused).toMatchObject({ success: false, error: expect.stringContaining("compacting") });

    expect(response).toMatchObject({
      type: "response",
      command: "compact",
      success: true,
      data: { summary: SUMMARY, firstKeptEntryId: expect.any(String), tokensBefore: expect.any(Number) },
    });
    const compaction = rpc.records.slice(from).filter((r) => r.type.startsWith("compaction_"));
    expect(compaction).toEqual([
      { type: "compaction_start", reason: "manual" },
      expect.objectContaining({ type: "compaction_end", reason: "manual", aborted: false, willRetry: false }),
    ]);
    const messages = await rpc.request({ type: "get_messages" });
    expect((messages.data as { messages: { role: string }[] }).messages[0]).toMatchObject({
      role: "compactionSummary",
      summary: SUMMARY,
    });
    expect(requestsOf(key).map((r) => r.step)).toEqual(["ok", "ok", "ok"]);

    expect(await rpc.request({ type: "set_auto_compaction", enabled: false })).toMatchObject({ success: true });
    expect((await rpc.request({ type: "get_state" })).data).toMatchObject({ autoCompactionEnabled: false });
    // B5: nothing was written to the settings file.
    expect(readFileSync(`${rpc.dir}/settings.json`, "utf8")).not.toContain('"enabled"');
  });
});
