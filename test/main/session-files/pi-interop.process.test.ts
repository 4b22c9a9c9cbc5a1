/**
 * SPEC B7: lifeline's session files and pi's are the same files. Both directions with pi 0.73.1
 * itself, installed outside the repository (never a dependency): `.ci/run` installs it and
 * passes its package directory in LIFELINE_PI_PACKAGE. Without it these tests fail: a skipped
 * interop test would let the format drift unnoticed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { fauxAssistantMessage } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import type { SessionHostOptions } from "../../../src/main/host/session-host.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { inProcessHost } from "../../fixtures/in-process-host.js";
import { piPackage, piSessionManager } from "../../fixtures/pi-package.js";
import { type Step, scriptedModel } from "../../fixtures/scripted-provider.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function script(steps: readonly Step[]) {
  const scripted = scriptedModel(steps);
  cleanups.push(() => scripted.unregister());
  return scripted;
}

function freshHost(dir: string, sessionDir?: string, settings?: SessionHostOptions["settings"]) {
  const env = inProcessHost({
    lifelineDir: dir,
    cwd: dir,
    sessions: sessionDir === undefined ? {} : { dir: sessionDir },
    ...(settings === undefined ? {} : { settings }),
  });
  cleanups.push(() => env.host.close());
  return env;
}

describe("pi ↔ lifeline session files (B7)", () => {
  it("B7: a file lifeline writes opens in pi's CLI (--session FILE, RPC, offline) with the same messages", async () => {
    const pi = piPackage();
    const dir = tempDir(cleanups);
    const { host, clock } = freshHost(dir);
    const scripted = script([{ error: "503 Service Unavailable" }, { text: "hello from lifeline" }]);
    const session = await host.createSession({ model: scripted.model });
    const done = session.prompt("hi pi");
    await clock.release();
    await within(done, 5000, "the retried prompt");
    const file = session.sessionFile ?? "";
    const history = JSON.parse(JSON.stringify(session.history)) as AgentMessage[];
    await host.close();

    const child = spawn(
      process.execPath,
      [
        join(pi, "dist", "cli.js"),
        "--session",
        file,
        "--mode",
        "rpc",
        "--provider",
        "openai",
        "--model",
        "gpt-4o",
        "--api-key",
        "unused",
        "--no-extensions",
        "--no-skills",
        "--no-context-files",
      ],
      {
        cwd: dir,
        env: { ...process.env, PI_OFFLINE: "1", PI_CODING_AGENT_DIR: join(dir, "pi-agent") },
        stdio: ["pipe", "pipe", "inherit"],
      },
    );
    cleanups.push(() => void child.kill("SIGKILL"));
    const response = firstJsonLine(child);
    child.stdin?.write(`${JSON.stringify({ id: "1", type: "get_messages" })}\n`);
    const reply = (await within(response, 30_000, "pi's get_messages response")) as {
      success: boolean;
      data: { messages: AgentMessage[] };
    };
    expect(reply.success).toBe(true);
    expect(reply.data.messages).toEqual(history);
    expect(history.map((m) => m.role)).toEqual(["user", "assistant", "assistant"]);
  });

  it("B7: a file pi's SessionManager writes opens in lifeline, goes on, and opens in pi again", async () => {
    const SessionManager = await piSessionManager();
    const dir = tempDir(cleanups);
    const sessionDir = join(dir, "pi-sessions");
    const pi = SessionManager.create(dir, sessionDir);
    pi.appendModelChange("scripted", "whatever");
    pi.appendMessage({ role: "user", content: [{ type: "text", text: "written by pi" }], timestamp: 1 });
    pi.appendMessage({ ...fauxAssistantMessage("pi's answer"), timestamp: 2 });
    const file = pi.getSessionFile() ?? "";
    expect(existsSync(file)).toBe(true);

    const { host } = freshHost(dir, sessionDir);
    const scripted = script([{ text: "lifeline's answer" }]);
    const resumed = await host.resumeSession(pi.getSessionId().slice(0, 8), { model: scripted.model });
    expect(resumed.sessionFile).toBe(file);
    expect(resumed.history.map(textOf)).toEqual(["written by pi", "pi's answer"]);
    await resumed.prompt("and now lifeline");
    expect(scripted.contexts[0]?.messages.map(textOf)).toEqual(["written by pi", "pi's answer", "and now lifeline"]);
    const history = JSON.parse(JSON.stringify(resumed.history)) as AgentMessage[];
    await host.close();

    const reopened = SessionManager.open(file, sessionDir);
    expect(reopened.buildSessionContext().messages).toEqual(history);
  });
});

describe("pi reads lifeline's compaction (R1, B7)", () => {
  it("R1 B7: pi's SessionManager builds the context of a compacted lifeline session: the summary, then the kept messages", async () => {
    const SessionManager = await piSessionManager();
    const dir = tempDir(cleanups);
    const sessionDir = join(dir, "sessions");
    const { host } = freshHost(dir, sessionDir, { compaction: { keepRecentTokens: 1 } });
    const scripted = script([
      { text: "first answer" },
      { error: "prompt is too long: 213462 tokens > 200000 maximum" },
      { text: "the summary of the first turn" },
      { text: "second answer" },
    ]);
    const session = await host.createSession({ model: scripted.model });
    await session.prompt("first question");
    const result = await session.prompt("second question");
    expect(result.stopReason).toBe("stop");
    const file = session.sessionFile ?? "";
    const messages = JSON.parse(JSON.stringify(session.messages)) as AgentMessage[];
    await host.close();

    const context = SessionManager.open(file, sessionDir).buildSessionContext().messages;
    expect(context[0]).toMatchObject({ role: "compactionSummary", summary: "the summary of the first turn" });
    // pi keeps the overflowed reply on the kept path, as its own overflow compaction does; it
    // shows no model a failed reply, and lifeline's runtime transcript leaves it out.
    const kept = context.slice(1).filter((m) => !(m.role === "assistant" && m.stopReason === "error"));
    expect(kept.map(textOf)).toEqual(["second question", "second answer"]);
    expect(kept).toEqual(messages.slice(1));
  });
});

describe("pi reads lifeline's thinking levels, and the reverse (B7)", () => {
  it("B7: pi's SessionManager reopens a lifeline session at the level lifeline last recorded", async () => {
    const SessionManager = await piSessionManager();
    const dir = tempDir(cleanups);
    const sessionDir = join(dir, "sessions");
    const { host } = freshHost(dir, sessionDir);
    const scripted = script([{ text: "ok" }]);
    const session = await host.createSession({ model: { ...scripted.model, reasoning: true }, thinkingLevel: "high" });
    await session.setThinkingLevel("minimal");
    const file = session.sessionFile ?? "";
    await host.close();

    expect(SessionManager.open(file, sessionDir).buildSessionContext().thinkingLevel).toBe("minimal");
  });

  it("B7: a level pi's SessionManager recorded is the level lifeline resumes the session at", async () => {
    const SessionManager = await piSessionManager();
    const dir = tempDir(cleanups);
    const sessionDir = join(dir, "pi-sessions");
    const pi = SessionManager.create(dir, sessionDir);
    const scripted = script([{ text: "ok" }]);
    pi.appendModelChange(scripted.model.provider, scripted.model.id);
    pi.appendThinkingLevelChange("low");
    pi.appendMessage({ role: "user", content: [{ type: "text", text: "written by pi" }], timestamp: 1 });
    pi.appendMessage({ ...fauxAssistantMessage("pi's answer"), timestamp: 2 });

    const { host } = freshHost(dir, sessionDir);
    const resumed = await host.resumeSession(pi.getSessionFile() ?? "", {
      model: { ...scripted.model, reasoning: true },
    });
    expect(resumed.thinkingLevel).toBe("low");
  });
});

function textOf(message: AgentMessage): string {
  if (!("content" in message)) return "";
  const content = message.content;
  if (typeof content === "string") return content;
  return content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

/** The first stdout line of `child` that is a JSON response. */
function firstJsonLine(child: ChildProcess): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let text = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      for (const line of text.split("\n")) {
        if (!line.startsWith("{")) continue;
        try {
          const value = JSON.parse(line) as { type?: string };
          if (value.type === "response") resolve(value);
        } catch {
          // an incomplete line; wait for more
        }
      }
    });
    child.once("exit", (code) => reject(new Error(`pi exited (${code}) before answering`)));
  });
}
