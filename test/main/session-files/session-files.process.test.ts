/**
 * SPEC B7's file mechanics with real files and a real process: the reader, the append queue, and
 * the lock that keeps a session file to one writer.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PersistenceQueue } from "../../../src/main/session-files/persistence-queue.js";
import { encodeCwd, sessionFileName } from "../../../src/main/session-files/session-format.js";
import { lockSessionFile } from "../../../src/main/session-files/session-lock.js";
import { parseSessionText } from "../../../src/main/session-files/session-reader.js";
import { tempDir, within } from "../../fixtures/bounded.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}';
const ENTRY =
  '{"type":"message","id":"aaaaaaaa","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}';

describe("session file format and reader (B7)", () => {
  it("B7: names directories and files as pi does", () => {
    expect(encodeCwd("/home/me/project")).toBe("--home-me-project--");
    expect(encodeCwd("C:\\work\\x")).toBe("--C--work-x--");
    expect(sessionFileName("2026-01-02T03:04:05.678Z", "abc")).toBe("2026-01-02T03-04-05-678Z_abc.jsonl");
  });

  it("B7: a torn last line is skipped with a warning naming the file and line, never thrown", () => {
    const parsed = parseSessionText(`${HEADER}\n${ENTRY}\n{"type":"mess`, "/x/s.jsonl");
    expect(parsed.entries).toHaveLength(1);
    expect(parsed.endsWithNewline).toBe(false);
    expect(parsed.warnings).toHaveLength(1);
    expect(parsed.warnings[0]).toContain("/x/s.jsonl:3");
  });

  it("B7: a file without a session header is refused with ERR_SESSION_FILE", () => {
    expect(() => parseSessionText(`${ENTRY}\n`, "/x/s.jsonl")).toThrow(
      expect.objectContaining({ code: "ERR_SESSION_FILE" }),
    );
  });

  it("B7: a version 1 file is migrated to a linked chain of ids", () => {
    const v1 =
      '{"type":"session","id":"s1","timestamp":"t","cwd":"/w"}\n{"type":"message","timestamp":"t","message":{"role":"user","content":"a"}}\n{"type":"message","timestamp":"t","message":{"role":"user","content":"b"}}\n';
    const parsed = parseSessionText(v1, "v1.jsonl");
    expect(parsed.migrated).toBe(true);
    expect(parsed.header.version).toBe(3);
    expect(parsed.entries[0]?.parentId).toBeNull();
    expect(parsed.entries[1]?.parentId).toBe(parsed.entries[0]?.id);
  });
});

describe("the persistence queue (B7)", () => {
  it("B7: the first append after a torn last line starts on a fresh line", async () => {
    const file = join(tempDir(cleanups), "s.jsonl");
    writeFileSync(file, `${HEADER}\n{"type":"mess`);
    const queue = new PersistenceQueue(await open(file, "a"), file, "never", true);
    await queue.append([`${ENTRY}\n`]);
    await queue.close();
    const parsed = parseSessionText(readFileSync(file, "utf8"), file);
    expect(parsed.entries.map((entry) => entry.id)).toEqual(["aaaaaaaa"]);
    expect(parsed.warnings).toHaveLength(1);
  });

  it("B7: appends made while a write is in flight go out as one batch, in order", async () => {
    const file = join(tempDir(cleanups), "s.jsonl");
    writeFileSync(file, `${HEADER}\n`);
    const queue = new PersistenceQueue(await open(file, "a"), file, "batch", false);
    const lines = Array.from({ length: 50 }, (_, i) => `{"n":${i}}\n`);
    await Promise.all(lines.map((line) => queue.append([line])));
    await queue.close();
    expect(readFileSync(file, "utf8")).toBe(`${HEADER}\n${lines.join("")}`);
    await expect(queue.append(["{}\n"])).rejects.toMatchObject({ code: "ERR_SESSION_FILE" });
  });
});

describe("one writer per session file (B7)", () => {
  it("B7: a second writer gets ERR_SESSION_LOCKED until the first releases", async () => {
    const file = join(tempDir(cleanups), "s.jsonl");
    const lock = await lockSessionFile(file);
    await expect(lockSessionFile(file)).rejects.toMatchObject({ code: "ERR_SESSION_LOCKED" });
    await lock.release();
    const again = await lockSessionFile(file);
    await again.release();
  });

  it("B7: a lock held by another live process is refused, and taken over at once when that process is SIGKILLed", async () => {
    const file = join(tempDir(cleanups), "s.jsonl");
    const child = holdLockInChild(file);
    cleanups.push(() => void child.kill("SIGKILL"));
    await within(lineFrom(child, "locked"), 10_000, "the child to take the lock");
    await expect(lockSessionFile(file)).rejects.toMatchObject({ code: "ERR_SESSION_LOCKED" });
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await within(exited, 10_000, "the child to die");
    const lock = await lockSessionFile(file);
    await lock.release();
  });

  it("B7: a damaged lock file (no holder to ask) is taken over: it then names this process, and holds", async () => {
    const file = join(tempDir(cleanups), "s.jsonl");
    appendFileSync(`${file}.lock`, "{not json");
    const lock = await lockSessionFile(file);
    expect(lock.path).toBe(`${file}.lock`);
    // The damaged content is gone: the lock file is this process's, in whole.
    const content = readFileSync(lock.path, "utf8");
    expect(content, "the lock file after the takeover").not.toContain("{not json");
    expect(JSON.parse(content)).toMatchObject({ pid: process.pid, hostname: hostname() });
    // And it is a real lock: another writer is refused while it is held.
    await expect(lockSessionFile(file)).rejects.toMatchObject({ code: "ERR_SESSION_LOCKED" });
    await lock.release();
    expect(existsSync(lock.path)).toBe(false);
  });
});

/** A child node process that takes the lock of `file` with the built module and then waits. */
function holdLockInChild(file: string): ChildProcess {
  const moduleUrl = new URL("../../../dist/main/session-files/session-lock.js", import.meta.url).href;
  const code = `const { lockSessionFile } = await import(${JSON.stringify(moduleUrl)});
await lockSessionFile(${JSON.stringify(file)});
process.stdout.write("locked\\n");
setInterval(() => {}, 1 << 30);`;
  return spawn(process.execPath, ["--input-type=module", "-e", code], { stdio: ["ignore", "pipe", "inherit"] });
}

function lineFrom(child: ChildProcess, expected: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if (text.split("\n").includes(expected)) resolve();
    });
    child.once("exit", (code) => reject(new Error(`child exited (${code}) before printing ${expected}`)));
  });
}
