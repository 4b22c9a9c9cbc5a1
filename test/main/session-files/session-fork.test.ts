/**
 * The entries of a fork (pi's createBranchedSession): the path from the root to the fork point
 * through `parentId`, so a branched pi file gives only the chosen branch; labels left out.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { forkedSession, forkMessages } from "../../../src/main/session-files/session-fork.js";
import type { SessionEntry, SessionHeader } from "../../../src/main/session-files/session-format.js";
import { summarizeEntries } from "../../../src/main/session-files/session-summary.js";

const header: SessionHeader = { type: "session", version: 3, id: "s", timestamp: "t", cwd: "/w" };
const user = (id: string, parentId: string | null, text: string): SessionEntry => ({
  type: "message",
  id,
  parentId,
  timestamp: "t",
  message: { role: "user", content: [{ type: "text", text }], timestamp: 0 },
});
const reply = (id: string, parentId: string): SessionEntry =>
  ({ type: "message", id, parentId, timestamp: "t", message: { role: "assistant", content: [] } }) as SessionEntry;

// u1 → a1 → u2 → a2, and a second branch a1 → u3 (pi's /tree), then a label on u2.
const entries: SessionEntry[] = [
  user("u1", null, "one"),
  reply("a1", "u1"),
  user("u2", "a1", "two"),
  reply("a2", "u2"),
  user("u3", "a1", "three"),
  { type: "label", id: "l1", parentId: "u3", timestamp: "t", targetId: "u2", label: "x" },
];
const stored = { header, entries, file: "/w/s.jsonl" };

describe("forks of a stored session", () => {
  it("takes the branch of the chosen user message up to its parent, and names the parent file", () => {
    const fork = forkedSession(stored, "u3", "before");
    expect(fork.entries.map((entry) => entry.id)).toEqual(["u1", "a1"]);
    expect(fork.text).toBe("three");
    expect(fork.header).toMatchObject({ type: "session", version: 3, cwd: "/w", parentSession: "/w/s.jsonl" });
    expect(fork.header.id).not.toBe("s");
  });

  it("at an entry includes it and only its own branch; labels are left out", () => {
    expect(forkedSession(stored, "a2", "at").entries.map((entry) => entry.id)).toEqual(["u1", "a1", "u2", "a2"]);
    expect(forkedSession(stored, "l1", "at").entries.map((entry) => entry.id)).toEqual(["u1", "a1", "u3"]);
  });

  it("forking before the first user message gives an empty session; a non-user entry is refused", () => {
    expect(forkedSession(stored, "u1", "before").entries).toEqual([]);
    expect(() => forkedSession(stored, "a1", "before")).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }),
    );
    expect(() => forkedSession(stored, "zz", "at")).toThrow(expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }));
  });

  it("lists every user message with text, in file order", () => {
    expect(forkMessages(entries)).toEqual([
      { entryId: "u1", text: "one" },
      { entryId: "u2", text: "two" },
      { entryId: "u3", text: "three" },
    ]);
  });
});

describe("the text of a user message in the session lists", () => {
  it("is the same in the fork list and the session list's first message (they joined blocks differently)", () => {
    fc.assert(
      fc.property(fc.array(fc.string(), { maxLength: 5 }), (pieces) => {
        const entry = {
          type: "message",
          id: "u1",
          parentId: null,
          timestamp: "t",
          message: { role: "user", content: pieces.map((piece) => ({ type: "text", text: piece })), timestamp: 0 },
        } as SessionEntry;
        const listed = forkMessages([entry])[0]?.text ?? "";
        expect(summarizeEntries([entry]).firstMessage).toBe(listed);
      }),
    );
  });
});
