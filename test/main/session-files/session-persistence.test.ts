/**
 * SPEC B7 through a whole session (worker API in-process, real files in a temp dir): what a
 * persisted session writes, when, and what resuming it restores.
 */
import { appendFileSync, copyFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { fauxAssistantMessage } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import { createSessionHost, type SessionHostOptions } from "../../../src/main/host/session-host.js";
import { FileSessionStore } from "../../../src/main/session-files/file-session-store.js";
import { encodeCwd } from "../../../src/main/session-files/session-format.js";
import type { SessionStore } from "../../../src/main/session-files/session-store.js";
import { registerScriptedFaux } from "../../../src/worker/scripted-faux.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { nextEvent } from "../../fixtures/events.js";
import { inProcessHost } from "../../fixtures/in-process-host.js";
import { type Step, scriptedModel } from "../../fixtures/scripted-provider.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function freshHost(options: SessionHostOptions = {}) {
  const dir = tempDir(cleanups);
  const env = inProcessHost({ lifelineDir: dir, cwd: dir, sessions: {}, ...options });
  cleanups.push(() => env.host.close());
  return { ...env, dir };
}

function script(steps: readonly Step[]) {
  const scripted = scriptedModel(steps);
  cleanups.push(() => scripted.unregister());
  return scripted;
}

/** The file's lines as parsed JSON. */
function entries(file: string): Record<string, unknown>[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function messagesIn(file: string): AgentMessage[] {
  return entries(file)
    .filter((entry) => entry.type === "message")
    .map((entry) => entry.message as AgentMessage);
}

function roles(messages: readonly AgentMessage[]): string[] {
  return messages.map((m) => (m.role === "assistant" ? `assistant:${m.stopReason}` : m.role));
}

describe("persisted sessions (B7)", () => {
  it("B7: a new session's file sits under <dir>/sessions/<encoded cwd>/ as pi names it, header first", async () => {
    const { host, dir } = freshHost();
    const scripted = script([{ text: "hello" }]);
    const session = await host.createSession({ model: scripted.model, sessionId: "abc-123" });
    const file = session.sessionFile ?? "";
    expect(file.startsWith(join(dir, "sessions", encodeCwd(dir)))).toBe(true);
    expect(file).toMatch(/\/\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_abc-123\.jsonl$/);
    await session.prompt("hi");
    await host.close();
    const [header, ...rest] = entries(file);
    expect(header).toMatchObject({ type: "session", version: 3, id: "abc-123", cwd: dir });
    expect(rest.map((entry) => entry.type)).toEqual(["model_change", "thinking_level_change", "message", "message"]);
    rest.forEach((entry, index) => {
      expect(entry.id).toMatch(/^[0-9a-f]{8}$/);
      expect(entry.parentId).toBe(index === 0 ? null : rest[index - 1]?.id);
      expect(typeof entry.timestamp).toBe("string");
    });
  });

  it("B7: persistence is off unless asked for", async () => {
    const dir = tempDir(cleanups);
    const env = inProcessHost({ lifelineDir: dir, cwd: dir });
    cleanups.push(() => env.host.close());
    const scripted = script([{ text: "hello" }]);
    const session = await env.host.createSession({ model: scripted.model });
    await session.prompt("hi");
    expect(session.sessionFile).toBeUndefined();
  });

  it("B7: a prompt's user message is in the file before its model request is sent", async () => {
    const { host } = freshHost();
    let file = "";
    const seen: boolean[] = [];
    const faux = registerScriptedFaux({
      api: "lifeline-test-write-ahead",
      provider: "test",
      model: { id: "write-ahead-1" },
      // Called synchronously as the model request starts: the file must already hold the prompt.
      script: (context) => {
        const last = context.messages[context.messages.length - 1];
        seen.push(messagesIn(file).some((m) => m.role === "user" && JSON.stringify(m) === JSON.stringify(last)));
        return fauxAssistantMessage("ok");
      },
    });
    cleanups.push(() => faux.unregister());
    const session = await host.createSession({ model: faux.model });
    file = session.sessionFile ?? "";
    await session.prompt("first");
    await session.prompt("second");
    expect(seen).toEqual([true, true]);
  });

  it("B7 R4: the file keeps failed attempts while the runtime transcript drops them", async () => {
    const { host, clock } = freshHost();
    const scripted = script([{ error: "503 Service Unavailable" }, { text: "hello" }]);
    const session = await host.createSession({ model: scripted.model });
    const done = session.prompt("hi");
    await clock.release();
    await within(done, 5000, "the retried prompt");
    await host.close();
    expect(roles(session.messages)).toEqual(["user", "assistant:stop"]);
    expect(roles(session.history)).toEqual(["user", "assistant:error", "assistant:stop"]);
    expect(messagesIn(session.sessionFile ?? "")).toEqual(session.history);
  });

  it("B7: once dispose() resolves, the session's file is unlocked: the same host resumes it at once", async () => {
    const env = freshHost();
    const scripted = script([{ text: "one" }, { text: "two" }]);
    const session = await env.host.createSession({ model: scripted.model });
    await within(session.prompt("hi"), 5000, "the prompt");
    await session.dispose();
    const resumed = await within(
      env.host.resumeSession(session.id, { model: scripted.model }),
      5000,
      "resuming the disposed session",
    );
    expect(resumed.history.map((m) => m.role)).toEqual(["user", "assistant"]);
    await within(resumed.prompt("again"), 5000, "the resumed prompt");
  });

  it("B7: a resumed session has the history and runtime transcript it had, and goes on in the same file", async () => {
    const first = freshHost();
    const scripted = script([{ error: "503 Service Unavailable" }, { text: "one" }, { text: "two" }]);
    const session = await first.host.createSession({ model: scripted.model });
    const done = session.prompt("hi");
    await first.clock.release();
    await within(done, 5000, "the retried prompt");
    const history = [...session.history];
    const messages = [...session.messages];
    const file = session.sessionFile ?? "";
    await first.host.close();

    const second = freshHost({ lifelineDir: first.dir, cwd: first.dir });
    const resumed = await second.host.resumeSession(session.id.slice(0, 8), { model: scripted.model });
    expect(resumed.id).toBe(session.id);
    expect(resumed.sessionFile).toBe(file);
    expect(resumed.history).toEqual(history);
    expect(resumed.messages).toEqual(messages);
    await resumed.prompt("again");
    expect(roles(scripted.contexts[2]?.messages ?? [])).toEqual(["user", "assistant:stop", "user"]);
    await second.host.close();
    expect(messagesIn(file)).toEqual(resumed.history);
    expect(roles(resumed.history)).toEqual(["user", "assistant:error", "assistant:stop", "user", "assistant:stop"]);
  });

  it("B7: listSessions reports this cwd's sessions, newest first", async () => {
    const { host } = freshHost();
    const scripted = script([{ text: "hello" }]);
    const a = await host.createSession({ model: scripted.model });
    await a.prompt("first question");
    const b = await host.createSession({ model: scripted.model });
    await b.prompt("second question");
    await host.close();
    const reopened = freshHost({ lifelineDir: freshHostDir(a.sessionFile), cwd: freshHostDir(a.sessionFile) });
    const listed = await reopened.host.listSessions();
    expect(listed.map((info) => info.id).sort()).toEqual([a.id, b.id].sort());
    expect(listed.find((info) => info.id === a.id)).toMatchObject({ messageCount: 2, firstMessage: "first question" });
  });

  it("B7: a torn last line is skipped with a warning naming the file and line, and the session goes on", async () => {
    const first = freshHost();
    const scripted = script([{ text: "hello" }]);
    const session = await first.host.createSession({ model: scripted.model });
    await session.prompt("hi");
    const file = session.sessionFile ?? "";
    await first.host.close();
    const lines = readFileSync(file, "utf8").split("\n").length - 1;
    appendFileSync(file, '{"type":"message","id":"deadbeef","parentId":null,"timest');

    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    cleanups.push(() => void process.off("warning", onWarning));
    const second = freshHost({ lifelineDir: first.dir, cwd: first.dir });
    const resumed = await second.host.resumeSession(file, { model: scripted.model });
    expect(roles(resumed.history)).toEqual(["user", "assistant:stop"]);
    await within(new Promise<void>((resolve) => setImmediate(resolve)), 1000, "the warning to be delivered");
    expect(warnings.some((text) => text.includes(`${file}:${lines + 1}`) && text.includes("torn"))).toBe(true);
    await resumed.prompt("again");
    await second.host.close();
    // The next append started on a fresh line: every line but the torn one parses.
    const text = readFileSync(file, "utf8").split("\n");
    expect(text.filter((line) => line !== "").filter((line) => !isJson(line))).toHaveLength(1);
    expect(roles(messagesIn2(file))).toEqual(["user", "assistant:stop", "user", "assistant:stop"]);
  });

  it("B7: a follow-up accepted but not delivered when the host died is delivered once after a resume", async () => {
    const first = freshHost();
    const scripted = script([{ stall: true }, { text: "done" }]);
    const session = await first.host.createSession({ model: scripted.model });
    const done = session.prompt("hi");
    await scripted.waitForCall(1);
    await session.queueMessage("followUp", "and also this");
    // What a host killed now leaves behind: the file as it is at this moment.
    const crashed = join(tempDir(cleanups), "crashed.jsonl");
    copyFileSync(session.sessionFile ?? "", crashed);
    await session.abort();
    await within(done, 5000, "the aborted prompt");

    const second = freshHost();
    const resumed = await second.host.resumeSession(crashed, { model: scripted.model });
    expect(resumed.history.filter((m) => m.role === "user").map(textOf)).toEqual(["hi", "and also this"]);
    await second.host.close();
    const third = freshHost();
    const again = await third.host.resumeSession(crashed, { model: scripted.model });
    expect(again.history.filter((m) => m.role === "user").map(textOf)).toEqual(["hi", "and also this"]);
  });

  it("B7: a follow-up dropped by abort() stays dropped after a resume", async () => {
    const first = freshHost();
    const scripted = script([{ stall: true }, { text: "done" }]);
    const session = await first.host.createSession({ model: scripted.model });
    const done = session.prompt("hi");
    await scripted.waitForCall(1);
    await session.queueMessage("followUp", "and also this");
    await session.abort();
    await within(done, 5000, "the aborted prompt");
    const file = session.sessionFile ?? "";
    await first.host.close();

    const second = freshHost({ lifelineDir: first.dir, cwd: first.dir });
    const resumed = await second.host.resumeSession(file, { model: scripted.model });
    expect(resumed.history.filter((m) => m.role === "user").map(textOf)).toEqual(["hi"]);
  });

  it("B7: after host.close() the files of sessions disposed just before are written and unlocked", async () => {
    const { host } = freshHost();
    const scripted = script([{ text: "hello" }]);
    const session = await host.createSession({ model: scripted.model });
    await session.prompt("hi");
    const file = session.sessionFile ?? "";
    const disposing = session.dispose();
    await host.close();
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(roles(messagesIn(file))).toEqual(["user", "assistant:stop"]);
    await disposing;
  });

  it("B7: abort() while a prompt's user message is being stored ends the prompt as aborted, with no model request; abortRetry() does not", async () => {
    const dir = tempDir(cleanups);
    const files = new FileSessionStore({ root: dir });
    const held: { open: () => void }[] = [];
    const heldAppend = () => {
      let open: () => void = () => {};
      const opened = new Promise<void>((resolve) => {
        open = resolve;
      });
      held.push({ open });
      return opened;
    };
    let appendStarted: () => void = () => {};
    let started = new Promise<void>((resolve) => {
      appendStarted = resolve;
    });
    // Holds each append of a user message until the test lets it through.
    const store: SessionStore = {
      create: async (header) => {
        const writer = await files.create(header);
        return {
          path: writer.path,
          append: async (entries) => {
            const user = entries.some(
              (entry) => entry.type === "message" && (entry as { message: { role: string } }).message.role === "user",
            );
            if (user) {
              const gate = heldAppend();
              appendStarted();
              await gate;
            }
            await writer.append(entries);
          },
          flush: () => writer.flush(),
          close: () => writer.close(),
        };
      },
      open: (ref, cwd) => files.open(ref, cwd),
      list: (cwd) => files.list(cwd),
    };
    const env = inProcessHost({ lifelineDir: dir, cwd: dir, sessions: { store } });
    cleanups.push(() => env.host.close());
    const scripted = script([{ text: "answered" }]);
    const session = await env.host.createSession({ model: scripted.model });

    const aborted = session.prompt("stop me");
    await within(started, 5000, "the write-ahead to start");
    const aborting = session.abort();
    held.shift()?.open();
    const result = await within(aborted, 5000, "the aborted prompt");
    await aborting;
    expect(result.stopReason).toBe("aborted");
    expect(scripted.calls()).toBe(0);

    started = new Promise<void>((resolve) => {
      appendStarted = resolve;
    });
    const kept = session.prompt("keep me");
    await within(started, 5000, "the write-ahead to start");
    session.abortRetry();
    held.shift()?.open();
    expect((await within(kept, 5000, "the prompt")).stopReason).toBe("stop");
    expect(scripted.calls()).toBe(1);
  });

  it("B7: malformed sessions options are refused at the call, naming the field", async () => {
    expect(() => createSessionHost({ sessions: { fsync: "sometimes" as never } })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS", message: expect.stringContaining("sessions") }),
    );
    expect(() => createSessionHost({ sessions: { folder: "/tmp" } as never })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }),
    );
    const { host } = freshHost();
    await expect(host.createSession({ sessions: { store: {} as never } })).rejects.toMatchObject({
      code: "ERR_INVALID_OPTIONS",
    });
    await expect(host.listSessions({ cwd: 1 as never })).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
    await expect(host.resumeSession("")).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
  });

  it("B7: a session id that cannot be a file name is refused before anything is written", async () => {
    const { host } = freshHost();
    for (const sessionId of ["../escape", "a/b", "a\\b", "bad\u0001id", ".."]) {
      await expect(host.createSession({ sessionId })).rejects.toMatchObject({ code: "ERR_INVALID_OPTIONS" });
    }
  });

  it("B7: resuming a session already open for writing fails with ERR_SESSION_LOCKED", async () => {
    const { host, dir } = freshHost();
    const scripted = script([{ text: "hello" }]);
    const session = await host.createSession({ model: scripted.model });
    await session.prompt("hi");
    const other = freshHost({ lifelineDir: dir, cwd: dir });
    await expect(other.host.resumeSession(session.sessionFile ?? "")).rejects.toMatchObject({
      code: "ERR_SESSION_LOCKED",
    });
    await session.dispose();
    await nextTick();
  });
});

function freshHostDir(file: string | undefined): string {
  // <dir>/sessions/<encoded cwd>/<file>
  return join(file ?? "", "..", "..", "..");
}

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

function messagesIn2(file: string): AgentMessage[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "" && isJson(line))
    .map((line) => JSON.parse(line) as { type: string; message?: AgentMessage })
    .filter((entry) => entry.type === "message" && entry.message !== undefined)
    .map((entry) => entry.message as AgentMessage);
}

function textOf(message: AgentMessage): string {
  if (!("content" in message)) return "";
  const content = message.content;
  if (typeof content === "string") return content;
  return content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

function nextTick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

void nextEvent;
