/**
 * SPEC B7 through the `lifeline` command (real child processes of the built dist/main/cli.js):
 * persistent by default as pi, --no-session, --session-dir, -c, --session, -r's usage errors, RPC's get_state, and a
 * host killed with SIGKILL right after accepting a prompt.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { RpcClient } from "../../../dist/main/rpc/index.js";
import { encodeCwd } from "../../../src/main/session-files/session-format.js";
import { tempDir, within } from "../../fixtures/bounded.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A LIFELINE_DIR with fast retries, and a project directory. */
function dirs(): { home: string; cwd: string } {
  const home = tempDir(cleanups);
  writeFileSync(join(home, "settings.json"), '{"retry":{"baseDelayMs":5}}');
  return { home, cwd: tempDir(cleanups) };
}

function lifeline(args: string[], at: { home: string; cwd: string }): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: at.cwd,
    env: { ...process.env, LIFELINE_DIR: at.home, NO_COLOR: "1" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  cleanups.push(() => void child.kill("SIGKILL"));
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return within(
    new Promise((resolve) => child.on("close", (code) => resolve({ code, stderr }))),
    20_000,
    `lifeline ${args.join(" ")}`,
  );
}

/**
 * Starts `lifeline -p text` on the demo model and resolves once its retry chain sleeps (the first
 * "Retrying" line; default delays make that sleep 2 s). `exited` resolves with the exit code.
 */
async function promptIntoRetrySleep(
  text: string,
  at: { home: string; cwd: string },
): Promise<{ child: ReturnType<typeof spawn>; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [CLI, "-p", text], {
    cwd: at.cwd,
    env: { ...process.env, LIFELINE_DIR: at.home, NO_COLOR: "1" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  cleanups.push(() => void child.kill("SIGKILL"));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  await within(
    new Promise<void>((resolve) => {
      let stderr = "";
      child.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes("Retrying (1/3)")) resolve();
      });
    }),
    20_000,
    "the first retry",
  );
  return { child, exited };
}

function sessionFiles(directory: string): string[] {
  if (!existsSync(directory)) return [];
  return readdirSync(directory)
    .filter((name) => name.endsWith(".jsonl"))
    .map((name) => join(directory, name));
}

function userTexts(file: string): string[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { type: string; message?: { role: string; content: { text?: string }[] } })
    .filter((entry) => entry.type === "message" && entry.message?.role === "user")
    .map((entry) => entry.message?.content.map((block) => block.text ?? "").join("") ?? "");
}

describe("the lifeline command's sessions (B7)", () => {
  it("B7: -p saves its session under $LIFELINE_DIR/sessions/<encoded cwd>/; demo and --no-session save nothing", async () => {
    const at = dirs();
    expect((await lifeline(["demo"], at)).code).toBe(0);
    expect((await lifeline(["--no-session", "-p", "not saved"], at)).code).toBe(0);
    expect(existsSync(join(at.home, "sessions"))).toBe(false);
    const run = await lifeline(["-p", "saved"], at);
    expect(run.code, run.stderr).toBe(0);
    const files = sessionFiles(join(at.home, "sessions", encodeCwd(at.cwd)));
    expect(files).toHaveLength(1);
    expect(userTexts(files[0] ?? "")).toEqual(["saved"]);
  });

  it("B7: -c continues the directory's most recent session, --session opens one by id prefix, --session-dir moves them", async () => {
    const at = dirs();
    expect((await lifeline(["-p", "first"], at)).code).toBe(0);
    expect((await lifeline(["-c", "-p", "second"], at)).code).toBe(0);
    const files = sessionFiles(join(at.home, "sessions", encodeCwd(at.cwd)));
    expect(files).toHaveLength(1);
    const file = files[0] ?? "";
    expect(userTexts(file)).toEqual(["first", "second"]);
    const id = (JSON.parse(readFileSync(file, "utf8").split("\n")[0] ?? "") as { id: string }).id;
    expect((await lifeline(["--session", id.slice(0, 6), "-p", "third"], at)).code).toBe(0);
    expect(userTexts(file)).toEqual(["first", "second", "third"]);
    const elsewhere = tempDir(cleanups);
    expect((await lifeline(["--session-dir", elsewhere, "-p", "moved"], at)).code).toBe(0);
    expect(sessionFiles(elsewhere).map(userTexts)).toEqual([["moved"]]);
    const missing = await lifeline(["--session", "nosuchid", "-p", "x"], at);
    expect(missing.code).toBe(2);
  });

  it("B7: -p on SIGTERM aborts, closes its session file (entries written, lock released) and exits 143", async () => {
    const at = dirs();
    // Default retry delays: after the demo model's first failure the chain sleeps for 2 s.
    writeFileSync(join(at.home, "settings.json"), "{}");
    const { child, exited } = await promptIntoRetrySleep("terminated", at);
    child.kill("SIGTERM");
    expect(await within(exited, 20_000, "lifeline to exit")).toBe(143);
    const [file] = sessionFiles(join(at.home, "sessions", encodeCwd(at.cwd)));
    expect(existsSync(`${file}.lock`)).toBe(false);
    const roles = readFileSync(file ?? "", "utf8")
      .split("\n")
      .filter((line) => line.includes('"type":"message"'))
      .map((line) => (JSON.parse(line) as { message: { role: string; stopReason?: string } }).message)
      .map((message) => `${message.role}${message.stopReason === undefined ? "" : `:${message.stopReason}`}`);
    expect(roles.slice(0, 2)).toEqual(["user", "assistant:error"]);
  });

  it("B7: the sessionDir and sessions.fsync settings are honoured, and a bad fsync value is refused", async () => {
    const at = dirs();
    const elsewhere = tempDir(cleanups);
    writeFileSync(
      join(at.home, "settings.json"),
      JSON.stringify({ retry: { baseDelayMs: 5 }, sessionDir: elsewhere, sessions: { fsync: "never" } }),
    );
    expect((await lifeline(["-p", "in the setting's dir"], at)).code).toBe(0);
    expect(sessionFiles(elsewhere).map(userTexts)).toEqual([["in the setting's dir"]]);
    writeFileSync(join(at.home, "settings.json"), JSON.stringify({ sessions: { fsync: "sometimes" } }));
    const bad = await lifeline(["-p", "x"], at);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("fsync");
  });

  it("B7: -p killed with SIGKILL in a retry sleep leaves a session that -c continues, prompt kept, transcript loading", async () => {
    const at = dirs();
    writeFileSync(join(at.home, "settings.json"), "{}");
    const { child, exited } = await promptIntoRetrySleep("killed mid-chain", at);
    child.kill("SIGKILL");
    await within(exited, 20_000, "lifeline to die");
    const [file] = sessionFiles(join(at.home, "sessions", encodeCwd(at.cwd)));
    expect(existsSync(`${file}.lock`)).toBe(true);
    writeFileSync(join(at.home, "settings.json"), '{"retry":{"baseDelayMs":5}}');
    const run = await lifeline(["-c", "-p", "after the kill"], at);
    expect(run.code, run.stderr).toBe(0);
    expect(userTexts(file ?? "")).toEqual(["killed mid-chain", "after the kill"]);
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it("B7 X5: lifeline -p killed with SIGKILL at random moments: each time -c finds the prompt, the file loads, and the next prompt is answered", async () => {
    const at = dirs();
    // demo-stream answers 200 words at ~50 tokens/s: the kills land before, during and after the
    // first reply's tokens, and in the write-ahead of the prompt itself.
    const delays = fc.sample(fc.integer({ min: 0, max: 1500 }), { numRuns: 6, seed: 11 });
    for (const [round, delayMs] of delays.entries()) {
      const text = `round ${round} [words=200]`;
      const directory = join(at.home, "sessions", encodeCwd(at.cwd));
      const before = new Set(sessionFiles(directory));
      const child = spawn(process.execPath, [CLI, "--model", "demo/demo-stream", "-p", text], {
        cwd: at.cwd,
        env: { ...process.env, LIFELINE_DIR: at.home, NO_COLOR: "1" },
        stdio: ["ignore", "ignore", "ignore"],
      });
      cleanups.push(() => void child.kill("SIGKILL"));
      const exited = new Promise<void>((resolve) => child.on("close", () => resolve()));
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      child.kill("SIGKILL");
      await within(exited, 10_000, "lifeline to die");
      const file = sessionFiles(directory).find((candidate) => !before.has(candidate));
      if (file === undefined) continue; // killed before the session file existed: nothing was accepted
      const run = await lifeline(["-c", "--model", "demo/demo-fast", "-p", `after round ${round}`], at);
      expect(run.code, `round ${round} (${delayMs} ms): ${run.stderr}`).toBe(0);
      const texts = userTexts(file);
      expect(texts.at(-1)).toBe(`after round ${round}`);
      // The killed prompt is there whenever the kill came after it was accepted (its write-ahead).
      if (texts.length > 1) expect(texts.at(-2)).toBe(text);
    }
  }, 120_000);

  it("-r with -p, in RPC mode, or without a terminal exits 2 naming -c and --session, and runs nothing", async () => {
    const at = dirs();
    for (const args of [["-r", "-p", "x"], ["--resume", "--mode", "rpc"], ["-r"]]) {
      const run = await lifeline(args, at);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr).toContain("-r/--resume");
      expect(run.stderr).toContain("-c to continue");
      expect(run.stderr).toContain("--session <path|id>");
    }
    expect(existsSync(join(at.home, "sessions"))).toBe(false);
  });

  it("-r with --no-session, --session or -c exits 2 saying the flags contradict", async () => {
    const at = dirs();
    const noSession = await lifeline(["-r", "--no-session", "-p", "x"], at);
    expect(noSession.code).toBe(2);
    expect(noSession.stderr).toContain("--no-session turns sessions off");
    for (const args of [
      ["-r", "--session", "abc"],
      ["-r", "-c", "-p", "x"],
    ]) {
      const run = await lifeline(args, at);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr).toContain("-r/--resume picks a session itself");
    }
    expect(existsSync(join(at.home, "sessions"))).toBe(false);
  });

  it("B7: over RPC get_state reports the session file; after a SIGKILL right after the prompt's response, -c finds the prompt", async () => {
    const at = dirs();
    // Default retry delays: the demo model's first failure leaves the chain sleeping for seconds.
    writeFileSync(join(at.home, "settings.json"), "{}");
    const client = new RpcClient({ cliPath: CLI, cwd: at.cwd, env: { LIFELINE_DIR: at.home } });
    cleanups.push(() => client.stop());
    await client.start();
    const state = await client.getState();
    expect(state.sessionFile).toBe(
      join(at.home, "sessions", encodeCwd(at.cwd), `${state.sessionFile?.split("/").pop() ?? ""}`),
    );
    expect(state.sessionFile).toContain(state.sessionId);
    await client.prompt("kept through a crash");
    process.kill(client.pid ?? 0, "SIGKILL");
    const file = state.sessionFile ?? "";
    expect(userTexts(file)).toEqual(["kept through a crash"]);

    writeFileSync(join(at.home, "settings.json"), '{"retry":{"baseDelayMs":5}}');
    const run = await lifeline(["-c", "-p", "after the crash"], at);
    expect(run.code, run.stderr).toBe(0);
    expect(userTexts(file)).toEqual(["kept through a crash", "after the crash"]);
  });
});
