/**
 * Prompts given an id, and `resumeRun()`: what a host that opens a stored session after the host
 * running it stopped can tell of a prompt (stored, settled, with what), and how it finishes the
 * run the transcript ends in, with SPEC X7's rules (a tool call is never run again, the cut-off
 * run is retried like a 503). Worker API in-process, real files in a temp dir; a "killed" host is
 * a copy of its session file taken while its run is in flight.
 */
import { appendFileSync, copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import type { SessionHostOptions } from "../../../src/main/host/session-host.js";
import { restoreTranscript } from "../../../src/main/session-files/session-transcript.js";
import { WORKER_EXIT_DIAGNOSTIC } from "../../../src/shared/failures/request-failure.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { inProcessHost } from "../../fixtures/in-process-host.js";
import { assistantMessage } from "../../fixtures/messages.js";
import { type Step, scriptedModel } from "../../fixtures/scripted-provider.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function freshHost(options: SessionHostOptions = {}) {
  const dir = tempDir(cleanups);
  const env = inProcessHost({ lifelineDir: dir, cwd: dir, sessions: {}, ...options });
  cleanups.push(() => env.host.close());
  return env;
}

function script(steps: readonly Step[]) {
  const scripted = scriptedModel(steps);
  cleanups.push(() => scripted.unregister());
  return scripted;
}

function roles(messages: readonly AgentMessage[]): string[] {
  return messages.map((m) => (m.role === "assistant" ? `assistant:${m.stopReason}` : m.role));
}

function lines(file: string): Record<string, unknown>[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * A session whose prompt "job-1" was stored and whose host was killed while its model request was
 * in flight: the copy of its file taken at that moment. The live session is then aborted.
 */
async function killedMidRun(scriptedSteps: readonly Step[]) {
  const first = freshHost();
  const scripted = script([{ stall: true }, ...scriptedSteps]);
  const session = await first.host.createSession({ model: scripted.model });
  const done = session.prompt("hi", { id: "job-1" });
  await scripted.waitForCall(1);
  const crashed = join(tempDir(cleanups), "crashed.jsonl");
  copyFileSync(session.sessionFile ?? "", crashed);
  await session.abort();
  await within(done, 5000, "the aborted prompt");
  return { scripted, crashed };
}

/** Appends a message entry to a session file, as a host would have before it died. */
function appendMessage(file: string, message: AgentMessage): void {
  const last = lines(file).at(-1);
  const entry = { type: "message", id: "0badc0de", parentId: last?.id ?? null, timestamp: new Date().toISOString() };
  appendFileSync(file, `${JSON.stringify({ ...entry, message })}\n`);
}

describe("prompts given an id", () => {
  it("are recorded as settled with their result, and a resumed session reports the same record", async () => {
    const first = freshHost();
    const scripted = script([{ text: "one" }]);
    const session = await first.host.createSession({ model: scripted.model });
    expect(session.promptRecord("job-1")).toBeUndefined();
    const result = await within(session.prompt("hi", { id: "job-1" }), 5000, "the prompt");
    expect(session.promptRecord("job-1")).toEqual({ result });
    const file = session.sessionFile ?? "";
    await first.host.close();
    const types = lines(file).map((entry) => entry.customType ?? entry.type);
    expect(types).toEqual([
      "session",
      "model_change",
      "thinking_level_change",
      "lifeline.prompt",
      "message",
      "message",
      "lifeline.prompt_end",
    ]);

    const second = freshHost();
    const resumed = await second.host.resumeSession(file, { model: scripted.model });
    expect(resumed.promptRecord("job-1")).toEqual({ result });
    expect(resumed.promptRecord("job-2")).toBeUndefined();
  });

  it("count as stored only when their user message is there too (an append torn between them stored nothing)", () => {
    const base = { parentId: null, timestamp: "2026-01-01T00:00:00.000Z" };
    const restored = restoreTranscript([
      {
        ...base,
        id: "aaaaaaaa",
        type: "custom",
        customType: "lifeline.prompt",
        data: { id: "job-1", entryId: "bbbbbbbb" },
      },
    ]);
    expect(restored.prompts.has("job-1")).toBe(false);
  });
});

describe("resumeRun() on a session whose host stopped mid-run (X7 across hosts)", () => {
  it("X7: a run cut off after its user message ends as a worker exit, is retried, and settles once with the answer", async () => {
    const { scripted, crashed } = await killedMidRun([{ text: "done" }]);
    const second = freshHost();
    const resumed = await second.host.resumeSession(crashed, { model: scripted.model });
    expect(resumed.promptRecord("job-1")).toEqual({});
    const settled: unknown[] = [];
    resumed.subscribe((event) => {
      if (event.type === "agent_settled") settled.push(event);
    });
    const result = resumed.resumeRun("job-1");
    await second.clock.release();
    const outcome = await within(result, 5000, "the resumed run");
    expect(outcome).toMatchObject({ stopReason: "stop", retries: 1 });
    expect(settled).toHaveLength(1);
    expect(roles(resumed.history)).toEqual(["user", "assistant:error", "assistant:stop"]);
    const exit = resumed.history[1] as AssistantMessage;
    expect(exit.diagnostics?.[0]?.type).toBe(WORKER_EXIT_DIAGNOSTIC);
    expect(roles(resumed.messages)).toEqual(["user", "assistant:stop"]);
    // The retried request saw the prompt once, and nothing of the failed attempt.
    expect(roles(scripted.contexts.at(-1)?.messages ?? [])).toEqual(["user"]);
    expect(resumed.promptRecord("job-1")).toEqual({ result: outcome });
  });

  it("X7: a tool call without a result gets one saying it was interrupted, is never run again, and the run is retried", async () => {
    const { scripted, crashed } = await killedMidRun([{ text: "done" }]);
    const toolTurn: AssistantMessage = {
      ...assistantMessage("toolUse"),
      content: [{ type: "toolCall", id: "call-1", name: "write_file", arguments: { path: "x" } }],
    };
    appendMessage(crashed, toolTurn);
    const second = freshHost();
    const resumed = await second.host.resumeSession(crashed, { model: scripted.model });
    const result = resumed.resumeRun("job-1");
    await second.clock.release();
    await within(result, 5000, "the resumed run");
    expect(roles(resumed.history)).toEqual([
      "user",
      "assistant:toolUse",
      "toolResult",
      "assistant:error",
      "assistant:stop",
    ]);
    const interrupted = resumed.history[2];
    expect(interrupted).toMatchObject({ role: "toolResult", toolCallId: "call-1", isError: true });
    // The model is told, and decides: the retried request carries the interrupted result.
    expect(roles(scripted.contexts.at(-1)?.messages ?? [])).toEqual(["user", "assistant:toolUse", "toolResult"]);
  });

  it("X7: a stored run that ended in a failed reply gets that reply's retry decision (R4), with no new failure added", async () => {
    const { scripted, crashed } = await killedMidRun([{ text: "done" }]);
    appendMessage(crashed, assistantMessage("error", "503 Service Unavailable"));
    const second = freshHost();
    const resumed = await second.host.resumeSession(crashed, { model: scripted.model });
    const result = resumed.resumeRun("job-1");
    await second.clock.release();
    expect(await within(result, 5000, "the resumed run")).toMatchObject({ stopReason: "stop", retries: 1 });
    expect(roles(resumed.history)).toEqual(["user", "assistant:error", "assistant:stop"]);
  });

  it("a stored run that ended in a finished reply settles with it at once, with no model request", async () => {
    const { scripted, crashed } = await killedMidRun([{ text: "never" }]);
    appendMessage(crashed, assistantMessage("stop", undefined, "the answer"));
    const calls = scripted.calls();
    const second = freshHost();
    const resumed = await second.host.resumeSession(crashed, { model: scripted.model });
    const outcome = await within(resumed.resumeRun("job-1"), 5000, "the resumed run");
    expect(outcome).toMatchObject({ stopReason: "stop", retries: 0 });
    expect(outcome.message?.content).toEqual([{ type: "text", text: "the answer" }]);
    expect(scripted.calls()).toBe(calls);
    expect(resumed.promptRecord("job-1")).toEqual({ result: outcome });
  });

  it("names the cut-off prompt the transcript ends in (unfinishedPromptId) until it is finished, and never a settled one", async () => {
    const { scripted, crashed } = await killedMidRun([{ text: "done" }, { text: "second" }]);
    const second = freshHost();
    const resumed = await second.host.resumeSession(crashed, { model: scripted.model });
    expect(resumed.unfinishedPromptId).toBe("job-1");
    const finished = resumed.resumeRun("job-1");
    await second.clock.release();
    await within(finished, 5000, "the resumed run");
    expect(resumed.unfinishedPromptId).toBeUndefined();
    await within(resumed.prompt("next", { id: "job-2" }), 5000, "the next prompt");
    expect(resumed.unfinishedPromptId).toBeUndefined();
    // Read back from the store, the last prompt is job-2, settled.
    const file = resumed.sessionFile ?? "";
    await second.host.close();
    const third = freshHost();
    const again = await third.host.resumeSession(file, { model: scripted.model });
    expect(again.unfinishedPromptId).toBeUndefined();
    expect(again.promptRecord("job-2")?.result).toMatchObject({ stopReason: "stop" });
  });

  it("is refused on a session that holds no run, and on a busy one", async () => {
    const env = freshHost();
    const scripted = script([{ stall: true }]);
    const session = await env.host.createSession({ model: scripted.model });
    await expect(session.resumeRun()).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
    const done = session.prompt("hi");
    await scripted.waitForCall(1);
    await expect(session.resumeRun()).rejects.toMatchObject({ code: "ERR_SESSION_BUSY" });
    await session.abort();
    await within(done, 5000, "the aborted prompt");
  });
});
