/**
 * A session's thinking level in its session file (pi's `thinking_level_change` entries) and
 * across a resume, with the worker API in-process and real files in a temp dir. The wire, the
 * clamping and the restore are tested on real threads (session-thinking.thread.test.ts).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { SessionHostOptions } from "../../../src/main/host/session-host.js";
import { encodeCwd } from "../../../src/main/session-files/session-format.js";
import type { SessionEvent } from "../../../src/shared/events.js";
import { tempDir } from "../../fixtures/bounded.js";
import { inProcessHost } from "../../fixtures/in-process-host.js";
import { scriptedModel } from "../../fixtures/scripted-provider.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function freshHost(dir: string, options: SessionHostOptions = {}) {
  const env = inProcessHost({ lifelineDir: dir, cwd: dir, sessions: {}, ...options });
  cleanups.push(() => env.host.close());
  return env.host;
}

/** A scripted model that declares reasoning (pi-ai then supports off … high). */
function reasoningModel() {
  const scripted = scriptedModel([{ text: "ok" }]);
  cleanups.push(() => scripted.unregister());
  return { ...scripted.model, reasoning: true };
}

function entries(file: string): Record<string, unknown>[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function thinkingEntries(file: string): Record<string, unknown>[] {
  return entries(file).filter((entry) => entry.type === "thinking_level_change");
}

describe("the thinking level in the session file (pi's thinking_level_change)", () => {
  it("a new session records its level after its model, as pi starts a session, and each change appends one entry of pi's shape", async () => {
    const dir = tempDir(cleanups);
    const host = freshHost(dir);
    const model = reasoningModel();
    const session = await host.createSession({ model, thinkingLevel: "high" });
    const changes: SessionEvent[] = [];
    session.subscribe((event) => {
      if (event.type === "thinking_level_changed") changes.push(event);
    });
    expect(await session.setThinkingLevel("low")).toBe("low");
    expect(await session.setThinkingLevel("low")).toBe("low");
    await session.flushSession();
    const file = session.sessionFile ?? "";
    const [, ...rest] = entries(file);
    expect(rest.map((entry) => entry.type)).toEqual(["model_change", "thinking_level_change", "thinking_level_change"]);
    expect(thinkingEntries(file).map((entry) => entry.thinkingLevel)).toEqual(["high", "low"]);
    for (const entry of thinkingEntries(file)) {
      expect(Object.keys(entry).sort()).toEqual(["id", "parentId", "thinkingLevel", "timestamp", "type"]);
    }
    expect(changes).toEqual([{ type: "thinking_level_changed", level: "low" }]);
  });

  it("a resumed session comes back at its stored level and records nothing; a level given to resumeSession wins and is recorded", async () => {
    const dir = tempDir(cleanups);
    const model = reasoningModel();
    const first = freshHost(dir);
    const session = await first.createSession({ model, thinkingLevel: "high" });
    await session.setThinkingLevel("minimal");
    const file = session.sessionFile ?? "";
    await first.close();
    const stored = entries(file).length;

    const second = freshHost(dir);
    const resumed = await second.resumeSession(file, { model });
    expect(resumed.thinkingLevel).toBe("minimal");
    await second.close();
    expect(entries(file)).toHaveLength(stored);

    const third = freshHost(dir);
    const overridden = await third.resumeSession(file, { model, thinkingLevel: "medium" });
    expect(overridden.thinkingLevel).toBe("medium");
    await third.close();
    expect(thinkingEntries(file).map((entry) => entry.thinkingLevel)).toEqual(["high", "minimal", "medium"]);
  });

  it("a stored session without a thinking entry opens at defaultThinkingLevel, clamped to its model, and records it", async () => {
    const dir = tempDir(cleanups);
    const model = reasoningModel();
    const sessionDir = join(dir, "sessions", encodeCwd(dir));
    mkdirSync(sessionDir, { recursive: true });
    const file = join(sessionDir, "2026-01-01T00-00-00-000Z_no-thinking.jsonl");
    const lines = [
      { type: "session", version: 3, id: "no-thinking", timestamp: "2026-01-01T00:00:00.000Z", cwd: dir },
      {
        type: "model_change",
        id: "aaaa0001",
        parentId: null,
        timestamp: "2026-01-01T00:00:00.000Z",
        provider: model.provider,
        modelId: model.id,
      },
      {
        type: "message",
        id: "aaaa0002",
        parentId: "aaaa0001",
        timestamp: "2026-01-01T00:00:00.000Z",
        message: { role: "user", content: [{ type: "text", text: "before levels" }], timestamp: 1 },
      },
    ];
    writeFileSync(file, lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
    const host = freshHost(dir, { settings: { defaultThinkingLevel: "xhigh" } });
    const resumed = await host.resumeSession(file, { model });
    // pi-ai: a reasoning model whose thinkingLevelMap names no xhigh tops out at high.
    expect(resumed.thinkingLevel).toBe("high");
    await host.close();
    expect(thinkingEntries(file)).toMatchObject([{ parentId: "aaaa0002", thinkingLevel: "high" }]);
  });

  it("setThinkingLevel refuses a value that is no level, naming the levels, and changes nothing", async () => {
    const host = freshHost(tempDir(cleanups));
    const session = await host.createSession({ model: reasoningModel(), thinkingLevel: "low" });
    await expect(session.setThinkingLevel("maximal" as never)).rejects.toMatchObject({
      code: "ERR_INVALID_OPTIONS",
      message: expect.stringContaining("off, minimal, low, medium, high, xhigh"),
    });
    expect(session.thinkingLevel).toBe("low");
    await expect(host.createSession({ thinkingLevel: "max" as never })).rejects.toMatchObject({
      code: "ERR_INVALID_OPTIONS",
      message: expect.stringContaining("thinkingLevel"),
    });
  });
});
