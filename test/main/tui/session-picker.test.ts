/**
 * The `-r/--resume` picker's rows, without a terminal: what each stored session shows, and the
 * name `listSessions` reads from pi's `session_info` entries. The picker on a real terminal is in
 * test/main/tui/interactive-mode.tmux.test.ts.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FileSessionStore } from "../../../src/main/session-files/file-session-store.js";
import { encodeCwd } from "../../../src/main/session-files/session-format.js";
import type { SessionInfo } from "../../../src/main/session-files/session-store.js";
import { sessionAge, sessionPickItem } from "../../../src/main/tui/session-picker.js";
import { tempDir } from "../../fixtures/bounded.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const now = new Date("2026-06-01T12:00:00Z");
const info = (over: Partial<SessionInfo>): SessionInfo => ({
  id: "0193f2aa-0000-7000-8000-000000000000",
  path: "/s/a.jsonl",
  cwd: "/project",
  created: now,
  modified: now,
  messageCount: 4,
  firstMessage: "fix the build",
  ...over,
});

describe("the -r session picker", () => {
  it("a row shows the first user message, the age and the message count, and picks by path", () => {
    const item = sessionPickItem(info({ modified: new Date(now.getTime() - 3 * 3_600_000) }), now);
    expect(item).toEqual({ value: "/s/a.jsonl", label: "fix the build", description: "3h ago · 4 messages" });
  });

  it("a row prefers the session's name, and blanks control characters so a stored message cannot move the cursor", () => {
    expect(sessionPickItem(info({ name: "release work" }), now).label).toBe("release work");
    expect(sessionPickItem(info({ firstMessage: "line one\nline two\x1b[2J" }), now).label).toBe(
      "line one line two [2J",
    );
    expect(sessionPickItem(info({ firstMessage: "", messageCount: 1 }), now)).toMatchObject({
      label: "(no messages) 0193f2aa-0000-7000-8000-000000000000",
      description: "now · 1 message",
    });
  });

  it("ages read as minutes, hours, days, weeks, then the date", () => {
    const ago = (ms: number) => sessionAge(new Date(now.getTime() - ms), now);
    expect([ago(30_000), ago(5 * 60_000), ago(2 * 86_400_000), ago(15 * 86_400_000), ago(40 * 86_400_000)]).toEqual([
      "now",
      "5m ago",
      "2d ago",
      "2w ago",
      "2026-04-22",
    ]);
  });

  it("listSessions reports the name of the latest session_info entry (pi's /name)", async () => {
    const root = tempDir(cleanups);
    const cwd = "/project";
    const dir = join(root, "sessions", encodeCwd(cwd));
    mkdirSync(dir, { recursive: true });
    const id = "0193f2aa-0000-7000-8000-000000000001";
    const lines = [
      { type: "session", version: 3, id, timestamp: now.toISOString(), cwd },
      {
        type: "message",
        id: "a1",
        parentId: null,
        timestamp: now.toISOString(),
        message: { role: "user", content: "hi", timestamp: 1 },
      },
      { type: "session_info", id: "a2", parentId: "a1", timestamp: now.toISOString(), name: "first name" },
      { type: "session_info", id: "a3", parentId: "a2", timestamp: now.toISOString(), name: "renamed" },
    ];
    writeFileSync(
      join(dir, `2026-06-01T12-00-00-000Z_${id}.jsonl`),
      `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`,
    );
    const [listed] = await new FileSessionStore({ root }).list(cwd);
    expect(listed).toMatchObject({ id, name: "renamed", firstMessage: "hi", messageCount: 1 });
  });
});
