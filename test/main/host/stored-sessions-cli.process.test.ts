/**
 * SPEC B7 through `lifeline export` and `lifeline sessions` (real child processes of the built
 * CLI, the file store): the export is the session file's bytes, pi opens it to the same messages,
 * the listing shows the cwd's sessions, and errors exit with clear codes.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { encodeCwd } from "../../../src/main/session-files/session-format.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { piSessionManager } from "../../fixtures/pi-package.js";
import { freePort } from "../../fixtures/redis-server.js";
import { parseLines } from "../../fixtures/session-lines.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface At {
  home: string;
  cwd: string;
}

function dirs(settings: object = { retry: { baseDelayMs: 5 } }): At {
  const home = tempDir(cleanups);
  writeFileSync(join(home, "settings.json"), JSON.stringify(settings));
  return { home, cwd: tempDir(cleanups) };
}

function lifeline(args: string[], at: At): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: at.cwd,
    env: { ...process.env, LIFELINE_DIR: at.home, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  cleanups.push(() => void child.kill("SIGKILL"));
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return within(
    new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr }))),
    20_000,
    `lifeline ${args.join(" ")}`,
  );
}

describe("lifeline export and lifeline sessions", () => {
  it("B7: export writes the stored session as its pi session file, byte for byte, and pi opens it to the same messages", async () => {
    const at = dirs();
    expect((await lifeline(["-p", "export me"], at)).code).toBe(0);
    const directory = join(at.home, "sessions", encodeCwd(at.cwd));
    const [name] = readdirSync(directory);
    const file = join(directory, name ?? "");
    const id = (name ?? "").slice((name ?? "").indexOf("_") + 1, -".jsonl".length);

    const listed = await lifeline(["sessions"], at);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split("\t").slice(0, 1)).toEqual([id]);
    expect(listed.stdout).toContain("4 messages\texport me");

    const exported = await lifeline(["export", id.slice(0, 8)], at);
    expect(exported.code).toBe(0);
    expect(exported.stdout).toBe(readFileSync(file, "utf8"));
    const out = join(at.cwd, "copy.jsonl");
    expect((await lifeline(["export", id, "--out", out], at)).code).toBe(0);
    expect(readFileSync(out, "utf8")).toBe(exported.stdout);

    const SessionManager = await piSessionManager();
    const messages = parseLines(exported.stdout)
      .filter((line) => line.type === "message")
      .map((line) => line.message);
    expect(SessionManager.open(out, at.cwd).buildSessionContext().messages).toEqual(messages);
  });

  it("exits 2 naming the id when no session starts with it, and lists nothing for a directory without sessions", async () => {
    const at = dirs();
    const missing = await lifeline(["export", "nope"], at);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('"nope"');
    expect(missing.stdout).toBe("");
    const listed = await lifeline(["sessions"], at);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toBe("");
  });

  it("exits 1 with the fleet's URL when fleet mode's Redis cannot be reached", async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const at = dirs({ fleet: { redis: url } });
    const result = await lifeline(["export", "any"], at);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(url.replace("redis://", ""));
  });
});
