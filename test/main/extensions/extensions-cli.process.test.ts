/**
 * The CLI's extension flags as a real child process: `-e/--extension` (repeatable), the settings'
 * `extensions`, `--no-extensions`, and a bad path. The extension writes what it heard to a file
 * named by an environment variable, one line per event, prefixed by its thread.
 *
 * SPEC rules: R14 (the demo model's retries reach the extension).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir, within } from "../../fixtures/bounded.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An extension that appends `<thread> <name> <event type>` to $EXT_LOG for each event it hears. */
function logger(name: string): string {
  return `
import { appendFileSync } from "node:fs";
type Pi = { thread: string; on(type: string, handler: (event: { type: string }) => void): void };
export default function (pi: Pi): void {
  const log = (what: string) => appendFileSync(process.env.EXT_LOG as string, \`\${pi.thread} ${name} \${what}\\n\`);
  log("loaded");
  for (const type of ["agent_start", "auto_retry_start", "auto_retry_end", "agent_settled"]) {
    pi.on(type, (event) => log(event.type));
  }
}
`;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  log: string[];
}

/** Runs `lifeline` in `cwd` with a LIFELINE_DIR whose settings make retries fast. */
function runCli(args: readonly string[], cwd: string, userSettings: object = {}): Promise<Run> {
  const lifelineDir = tempDir(cleanups);
  writeFileSync(join(lifelineDir, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 5 }, ...userSettings }));
  const logFile = join(lifelineDir, "ext.log");
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...process.env, LIFELINE_DIR: lifelineDir, EXT_LOG: logFile, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  cleanups.push(() => {
    child.kill("SIGKILL");
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<Run>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      const log = existsSync(logFile) ? readFileSync(logFile, "utf8").trim().split("\n") : [];
      resolve({ code, stdout, stderr, log });
    });
  });
  return within(done, 20_000, `lifeline ${args.join(" ")}`);
}

describe("lifeline -e", () => {
  it("R14: -e loads a .ts extension whose handlers hear the demo model's retries in order, on the main thread", async () => {
    const cwd = tempDir(cleanups);
    writeFileSync(join(cwd, "ext.ts"), logger("a"));
    const run = await runCli(["-p", "hello", "--no-session", "-e", "./ext.ts"], cwd);
    expect(run.stderr).not.toContain("Extension");
    expect(run.code).toBe(0);
    expect(run.log.filter((line) => line.startsWith("main "))).toEqual([
      "main a loaded",
      "main a agent_start",
      "main a auto_retry_start",
      "main a agent_start",
      "main a auto_retry_start",
      "main a agent_start",
      "main a auto_retry_end",
      "main a agent_settled",
    ]);
    // The worker's copy ran its factory and registered handlers that never run there.
    expect(run.log.filter((line) => line.startsWith("worker "))).toEqual(["worker a loaded"]);
  });

  it("-e is repeatable, and the settings' extensions load after the -e ones", async () => {
    const cwd = tempDir(cleanups);
    writeFileSync(join(cwd, "a.ts"), logger("a"));
    writeFileSync(join(cwd, "b.ts"), logger("b"));
    writeFileSync(join(cwd, "c.ts"), logger("c"));
    mkdirSync(join(cwd, ".lifeline"));
    writeFileSync(join(cwd, ".lifeline", "settings.json"), JSON.stringify({ extensions: ["c.ts"] }));
    const run = await runCli(["-p", "hello [fail=0]", "--no-session", "-e", "a.ts", "--extension", "b.ts"], cwd);
    expect(run.code).toBe(0);
    expect(run.log.filter((line) => line.startsWith("main ") && line.endsWith("loaded"))).toEqual([
      "main a loaded",
      "main b loaded",
      "main c loaded",
    ]);
  });

  it("--no-extensions ignores the settings' extensions and still loads -e", async () => {
    const cwd = tempDir(cleanups);
    writeFileSync(join(cwd, "a.ts"), logger("a"));
    writeFileSync(join(cwd, "from-settings.ts"), logger("settings"));
    const run = await runCli(["-p", "hello [fail=0]", "--no-session", "--no-extensions", "-e", "a.ts"], cwd, {
      extensions: [join(cwd, "from-settings.ts")],
    });
    expect(run.code).toBe(0);
    expect(run.log.some((line) => line.includes(" settings "))).toBe(false);
    expect(run.log).toContain("main a agent_settled");
  });

  it("--mode rpc writes an extension's failure as pi's extension_error event on stdout, and the prompt still settles", async () => {
    const cwd = tempDir(cleanups);
    writeFileSync(
      join(cwd, "throws.ts"),
      `export default function (pi: { on(t: string, h: () => void): void }): void {
  pi.on("agent_start", () => {
    throw new Error("handler bug");
  });
}
`,
    );
    const lifelineDir = tempDir(cleanups);
    const child = spawn(process.execPath, [CLI, "--mode", "rpc", "--no-session", "-e", "throws.ts"], {
      cwd,
      env: { ...process.env, LIFELINE_DIR: lifelineDir, NO_COLOR: "1" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    cleanups.push(() => {
      child.kill("SIGKILL");
    });
    const lines: Record<string, unknown>[] = [];
    let buffered = "";
    const settled = new Promise<void>((resolve) => {
      child.stdout.on("data", (chunk: Buffer) => {
        buffered += chunk.toString();
        const parts = buffered.split("\n");
        buffered = parts.pop() ?? "";
        for (const part of parts) {
          const record = JSON.parse(part) as Record<string, unknown>;
          lines.push(record);
          if (record.type === "agent_settled") resolve();
        }
      });
    });
    child.stdin.write(`${JSON.stringify({ id: "1", type: "prompt", message: "hello [fail=0]" })}\n`);
    await within(settled, 15_000, "agent_settled on stdout");
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    child.stdin.end();
    expect(await within(exited, 15_000, "the RPC child's exit")).toBe(0);
    expect(lines.filter((line) => line.type === "extension_error")).toEqual([
      { type: "extension_error", extensionPath: "throws.ts", event: "agent_start", error: "handler bug" },
    ]);
    expect(lines.find((line) => line.type === "agent_settled")).toMatchObject({ stopReason: "stop" });
  });

  it("a bad -e path exits 2 with an error naming the path and what to do", async () => {
    const cwd = tempDir(cleanups);
    const run = await runCli(["-p", "hello", "--no-session", "-e", "./nowhere.ts"], cwd);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("Extension ./nowhere.ts does not exist");
    expect(run.stderr).toContain(join(cwd, "nowhere.ts"));
    expect(run.stderr).toContain("--extension/-e");
    expect(run.stdout).toBe("");
  });
});
