/**
 * `auth.json` on disk (docs/auth.md): pi's shape and oh-my-pi's arrays, file mode 0600, the warning
 * for a readable file, the read-modify-write under proper-lockfile with two real child processes,
 * and `lifeline auth add/list/remove` as real child processes. Loads the built package.
 */
import { spawn } from "node:child_process";
import { chmodSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FileAuthStorage } from "../../../dist/main/index.js";
import { tempDir, within } from "../../fixtures/bounded.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));
const INDEX = new URL("../../../dist/main/index.js", import.meta.url).href;
const POSIX = process.platform !== "win32";
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function warningsDuring<T>(body: () => T): { value: T; warnings: string[] } {
  const warnings: string[] = [];
  const spy = vi.spyOn(process, "emitWarning").mockImplementation((warning: string | Error) => {
    warnings.push(String(warning));
  });
  try {
    return { value: body(), warnings };
  } finally {
    spy.mockRestore();
  }
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node <file> args` with `stdin` written and closed; bounded. */
function runNode(args: string[], env: Record<string, string>, stdin = ""): Promise<Run> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdin.end(stdin);
  cleanups.push(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  return within(
    new Promise<Run>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr }))),
    15_000,
    `node ${args.join(" ")}`,
  );
}

describe("auth.json", () => {
  it("reads pi's single object and oh-my-pi's array, skipping oauth entries with one warning", () => {
    const dir = tempDir(cleanups);
    writeFileSync(
      join(dir, "auth.json"),
      JSON.stringify({
        openai: [
          { type: "api_key", key: "sk-openai-one-0000000001" },
          { type: "api_key", key: "sk-openai-two-0000000002" },
        ],
        anthropic: { type: "api_key", key: "sk-ant-only-00000000003" },
        "github-copilot": { type: "oauth", refresh: "r", access: "a", expires: 0 },
      }),
      { mode: 0o600 },
    );
    const { value, warnings } = warningsDuring(() => {
      const storage = FileAuthStorage.inDir(dir);
      return [
        storage.apiKeyFor("openai", "s1"),
        storage.apiKeyFor("openai", "s2"),
        storage.apiKeyFor("anthropic", "s1"),
        storage.apiKeyFor("github-copilot", "s1"),
        storage.list(),
      ];
    });
    expect(value.slice(0, 4)).toEqual([
      "sk-openai-one-0000000001",
      "sk-openai-two-0000000002",
      "sk-ant-only-00000000003",
      undefined,
    ]);
    expect(value[4]).toEqual([
      { provider: "openai", index: 0, type: "api_key", masked: "sk-…0001" },
      { provider: "openai", index: 1, type: "api_key", masked: "sk-…0002" },
      { provider: "anthropic", index: 0, type: "api_key", masked: "sk-…0003" },
      { provider: "github-copilot", index: -1, type: "oauth", masked: "(oauth: not used by lifeline)" },
    ]);
    expect(warnings.filter((warning) => warning.includes("oauth"))).toHaveLength(1);
  });

  it.runIf(POSIX)("is created 0600 by the first add, keeping pi's single-object shape for one key", async () => {
    const dir = join(tempDir(cleanups), "new-dir");
    const storage = FileAuthStorage.inDir(dir);
    expect(await storage.add("openai", "sk-first-key-000000000001\n")).toBe(0);
    expect(statSync(join(dir, "auth.json")).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(join(dir, "auth.json"), "utf8"))).toEqual({
      openai: { type: "api_key", key: "sk-first-key-000000000001" },
    });
    expect(await storage.add("openai", "sk-second-key-00000000002")).toBe(1);
    expect(statSync(join(dir, "auth.json")).mode & 0o777).toBe(0o600);
    expect(storage.list().map((entry) => entry.masked)).toEqual(["sk-…0001", "sk-…0002"]);
    expect(await storage.remove("openai", 0)).toBe(1);
    expect(JSON.parse(readFileSync(join(dir, "auth.json"), "utf8"))).toEqual({
      openai: { type: "api_key", key: "sk-second-key-00000000002" },
    });
  });

  it.runIf(POSIX)("a file group or others can read gets one warning naming the fix, never the keys", () => {
    const dir = tempDir(cleanups);
    const path = join(dir, "auth.json");
    writeFileSync(path, JSON.stringify({ openai: { type: "api_key", key: "sk-readable-00000000009" } }));
    chmodSync(path, 0o644);
    const { warnings } = warningsDuring(() => {
      const storage = FileAuthStorage.inDir(dir);
      storage.apiKeyFor("openai", "s1");
      storage.list();
      new FileAuthStorage(path).apiKeyFor("openai", "s2");
    });
    expect(warnings).toEqual([
      `${path} can be read by other users (mode 0644); it holds API keys. Run: chmod 600 ${path}`,
    ]);
  });

  it("two processes adding keys at once keep every entry (read-modify-write under the file lock)", async () => {
    const dir = tempDir(cleanups);
    // Each child waits for "go" on stdin after saying "ready", so both write in the same moment.
    const script = `
      import { FileAuthStorage } from ${JSON.stringify(INDEX)};
      const [who] = process.argv.slice(1);
      const storage = FileAuthStorage.inDir(${JSON.stringify(dir)});
      process.stdout.write("ready\\n");
      process.stdin.once("data", async () => {
        for (let i = 0; i < 15; i++) await storage.add("openai", "sk-" + who + "-key-" + String(i).padStart(12, "0"));
        process.stdout.write("done\\n");
        process.exit(0);
      });
    `;
    const children = ["p1", "p2"].map((who) =>
      spawn(process.execPath, ["--input-type=module", "-e", script, who], { stdio: ["pipe", "pipe", "inherit"] }),
    );
    for (const child of children) {
      cleanups.push(() => {
        if (child.exitCode === null) child.kill("SIGKILL");
      });
    }
    const said = (child: (typeof children)[number], word: string) =>
      new Promise<void>((resolve) => {
        let out = "";
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes(word)) resolve();
        });
      });
    await within(Promise.all(children.map((child) => said(child, "ready"))), 15_000, "both children ready");
    const done = children.map((child) => said(child, "done"));
    for (const child of children) child.stdin.write("go\n");
    await within(Promise.all(done), 30_000, "both children done");
    const stored = JSON.parse(readFileSync(join(dir, "auth.json"), "utf8")) as { openai: { key: string }[] };
    expect(stored.openai).toHaveLength(30);
    expect(new Set(stored.openai.map((entry) => entry.key)).size).toBe(30);
  });
});

describe("lifeline auth", () => {
  it("add reads the key from stdin, list masks it, remove deletes it; the key never reaches the output", async () => {
    const dir = tempDir(cleanups);
    const env = { LIFELINE_DIR: dir, NO_COLOR: "1" };
    const key = "sk-cli-added-key-5f4dcc3b5aa7";
    const added = await runNode([CLI, "auth", "add", "openai"], env, `${key}\n`);
    expect(added).toMatchObject({ code: 0 });
    expect(added.stdout).toBe(`Added key 0 for openai (sk-…5aa7) to ${join(dir, "auth.json")}\n`);
    if (POSIX) expect(statSync(join(dir, "auth.json")).mode & 0o777).toBe(0o600);
    await runNode([CLI, "auth", "add", "openai"], env, "sk-cli-second-key-0000000002\n");
    const listed = await runNode([CLI, "auth", "list"], env);
    expect(listed).toMatchObject({ code: 0, stdout: "openai\t0\tapi_key\tsk-…5aa7\nopenai\t1\tapi_key\tsk-…0002\n" });
    const removed = await runNode([CLI, "auth", "remove", "openai", "0"], env);
    expect(removed).toMatchObject({ code: 0, stdout: `Removed 1 key of openai from ${join(dir, "auth.json")}\n` });
    const after = await runNode([CLI, "auth", "list"], env);
    expect(after.stdout).toBe("openai\t0\tapi_key\tsk-…0002\n");
    for (const run of [added, listed, removed, after]) expect(run.stdout + run.stderr).not.toContain(key);
  });

  it("refuses a key on the command line, an empty stdin and a missing entry, with exit code 2", async () => {
    const dir = tempDir(cleanups);
    const env = { LIFELINE_DIR: dir, NO_COLOR: "1" };
    const argv = await runNode([CLI, "auth", "add", "openai", "sk-on-the-command-line-00001"], env);
    expect(argv.code).toBe(2);
    const empty = await runNode([CLI, "auth", "add", "openai"], env, "");
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("No key given for openai");
    const missing = await runNode([CLI, "auth", "remove", "openai", "3"], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no key 3 for openai");
    const none = await runNode([CLI, "auth", "list"], env);
    expect(none).toMatchObject({ code: 0, stdout: `No keys in ${join(dir, "auth.json")}\n` });
  });
});
