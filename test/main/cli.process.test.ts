/**
 * The `lifeline` command as users run it: real child processes of the built `dist/main/cli.js`
 * (run `npm run build` first), each with its own LIFELINE_DIR and working directory, so no user
 * or project settings leak in. Every child is killed if it has not exited within its bound.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { startMockServer } from "../../dist/mock-server/index.js";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLI = fileURLToPath(new URL("../../dist/main/cli.js", import.meta.url));
const FAST_RETRIES = '{"retry":{"baseDelayMs":5}}';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "lifeline-cli-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

interface CliOptions {
  /** Contents of `$LIFELINE_DIR/settings.json`; undefined writes no file. @default fast retries */
  userSettings?: string | undefined;
  /** Contents of `<cwd>/.lifeline/settings.json`; undefined writes no file. */
  projectSettings?: string;
  /** Contents of `$LIFELINE_DIR/models.json`; undefined writes no file. */
  models?: string;
  /** Extra environment variables for the child. */
  env?: Record<string, string>;
  /** "ignore", or "pipe" to leave an open stdin pipe that is never written to or closed. @default "ignore" */
  stdin?: "ignore" | "pipe";
  timeoutMs?: number;
  /** The command to run instead of `node dist/main/cli.js`, and its working directory. */
  command?: { file: string; args: string[]; cwd: string };
}

/** Runs the CLI in a child process and collects its exit code and output. */
function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliRun> {
  const lifelineDir = tempDir();
  const cwd = tempDir();
  const userSettings = "userSettings" in options ? options.userSettings : FAST_RETRIES;
  if (userSettings !== undefined) writeFileSync(join(lifelineDir, "settings.json"), userSettings);
  if (options.models !== undefined) writeFileSync(join(lifelineDir, "models.json"), options.models);
  if (options.projectSettings !== undefined) {
    mkdirSync(join(cwd, ".lifeline"));
    writeFileSync(join(cwd, ".lifeline", "settings.json"), options.projectSettings);
  }
  const command = options.command ?? { file: process.execPath, args: [CLI, ...args], cwd };
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(command.file, command.args, {
      cwd: command.cwd,
      env: { ...process.env, LIFELINE_DIR: lifelineDir, NO_COLOR: "1", ...options.env },
      stdio: [options.stdin ?? "ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, options.timeoutMs ?? 15_000);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    // "close" comes after the exit and after stdout and stderr have ended (it does not wait for stdin).
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      // An open stdin pipe stays open on our side until the child has exited by itself.
      child.stdin?.destroy();
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

describe("the lifeline command", () => {
  it.each(["ignore", "pipe"] as const)(
    "R10: demo answers on stdout, reports each retry and the recovery on stderr, and exits 0 without reading stdin (stdin %s)",
    async (stdin) => {
      const run = await runCli(["demo"], { stdin });
      expect(run.timedOut, `stderr: ${run.stderr}`).toBe(false);
      expect(run.code, `stderr: ${run.stderr}`).toBe(0);
      expect(run.stdout).toContain('Demo answer: you said "Say hello to lifeline."');
      expect(run.stdout).not.toMatch(/Retrying|Recovered/);
      const first = run.stderr.indexOf("Retrying (1/3)");
      const second = run.stderr.indexOf("Retrying (2/3)");
      const recovered = run.stderr.indexOf("Recovered after 2 retries.");
      expect(first, run.stderr).toBeGreaterThanOrEqual(0);
      expect(second, run.stderr).toBeGreaterThan(first);
      expect(recovered, run.stderr).toBeGreaterThan(second);
      expect(run.stderr).not.toContain("Retrying (3/3)");
    },
  );

  it("R10: -p with a prompt that keeps failing exits 1 with the final retry error on stderr and nothing on stdout", async () => {
    const run = await runCli(["-p", "x [fail=9]"]);
    expect(run.timedOut, `stderr: ${run.stderr}`).toBe(false);
    expect(run.code, `stderr: ${run.stderr}`).toBe(1);
    expect(run.stdout).toBe("");
    for (const attempt of [1, 2, 3]) expect(run.stderr).toContain(`Retrying (${attempt}/3)`);
    expect(run.stderr).not.toContain("Retrying (4/3)");
    // The demo alternates 503 and 429; the fourth request (after the third retry) fails with 429.
    expect(run.stderr).toContain(
      "Retry failed after 3 attempts: 429 Too Many Requests: rate limit reached (simulated)",
    );
  });

  it.each([[["-p", "hi", "--provider", "demo", "--model", "demo-fast"]], [["-p", "hi", "--model", "demo/demo-fast"]]])(
    "R10: -p on a model that does not fail prints the answer and exits 0 with no retry (%j)",
    async (args) => {
      const run = await runCli(args);
      expect(run.timedOut, `stderr: ${run.stderr}`).toBe(false);
      expect(run.code, `stderr: ${run.stderr}`).toBe(0);
      expect(run.stdout).toContain('you said "hi"');
      expect(run.stderr).not.toContain("Retrying");
    },
  );

  it("X6: an unknown model exits 2 and lists the available models", async () => {
    const run = await runCli(["-p", "hi", "--provider", "demo", "--model", "nope"]);
    expect(run.timedOut, `stderr: ${run.stderr}`).toBe(false);
    expect(run.code, `stderr: ${run.stderr}`).toBe(2);
    expect(run.stdout).toBe("");
    for (const id of ["nope", "demo-1", "demo-stream", "demo-fast"]) expect(run.stderr).toContain(id);
  });

  it("X6: an unknown provider exits 2 and lists the known providers", async () => {
    const run = await runCli(["-p", "hi", "--provider", "no-such-provider", "--model", "x"]);
    expect(run.timedOut, `stderr: ${run.stderr}`).toBe(false);
    expect(run.code, `stderr: ${run.stderr}`).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain("no-such-provider");
    expect(run.stderr).toMatch(/\bdemo\b/);
    expect(run.stderr).toMatch(/\bopenai\b/);
    // Library advice stays out of the command line's errors.
    expect(run.stderr).not.toContain("pi-ai Model object");
  });

  it("R12: an out-of-range retry setting in the user settings.json exits 2 naming the file and the key", async () => {
    const run = await runCli(["-p", "hi"], { userSettings: '{"retry":{"maxRetries":-1}}' });
    expect(run.timedOut, `stderr: ${run.stderr}`).toBe(false);
    expect(run.code, `stderr: ${run.stderr}`).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/lifeline-cli-[^/\s]+\/settings\.json/);
    expect(run.stderr).toContain("retry.maxRetries");
  });

  it("R12: a malformed user settings.json exits 2 naming the file, the line and the column", async () => {
    const run = await runCli(["demo"], { userSettings: '{\n  "retry": {"baseDelayMs": 5' });
    expect(run.timedOut, `stderr: ${run.stderr}`).toBe(false);
    expect(run.code, `stderr: ${run.stderr}`).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/lifeline-cli-[^/\s]+\/settings\.json is not valid JSON at line 2, column \d+/);
  });

  describe("first contact: pi's forms and errors in the command line's words", () => {
    it("regression: -p takes pi's order, the prompt after the flags", async () => {
      const run = await runCli(["-p", "--model", "demo/demo-fast", "Hello"]);
      expect(run.code, `stderr: ${run.stderr}`).toBe(0);
      expect(run.stdout).toContain('you said "Hello"');
    });

    it("regression: a prompt without -p and without a terminal is print mode, as pi's", async () => {
      const run = await runCli(["--model", "demo/demo-fast", "hello"]);
      expect(run.code, `stderr: ${run.stderr}`).toBe(0);
      expect(run.stdout).toContain('you said "hello"');
    });

    it("several prompts are sent in order and the last answer is printed", async () => {
      const run = await runCli(["-p", "first", "second", "--model", "demo-fast", "--no-session"]);
      expect(run.code, `stderr: ${run.stderr}`).toBe(0);
      expect(run.stdout).toBe(`${run.stdout.split("\n")[0]}\n`);
      expect(run.stdout).toContain('you said "second"');
    });

    it("regression: --version prints the package's version", async () => {
      const run = await runCli(["--version"]);
      expect(run.code, `stderr: ${run.stderr}`).toBe(0);
      const { version } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { version: string };
      expect(run.stdout).toBe(`${version}\n`);
    });

    it("regression: --model with an id alone finds its provider as pi does: a unique id, and the first provider of a shared one", async () => {
      const unique = await runCli(["-p", "hi", "--model", "demo-fast"]);
      expect(unique.code, `stderr: ${unique.stderr}`).toBe(0);
      expect(unique.stdout).toContain('you said "hi"');
      // gpt-4o is azure-openai-responses', cloudflare-ai-gateway's, github-copilot's and openai's:
      // pi takes the first in pi-ai's provider order; without its key the error names it.
      const shared = await runCli(["-p", "hi", "--model", "gpt-4o"], { env: { AZURE_OPENAI_API_KEY: "" } });
      expect(shared.code, `stderr: ${shared.stderr}`).toBe(2);
      expect(shared.stderr).toContain('No API key for provider "azure-openai-responses"');
    });

    it("regression: a missing key names the provider's variable, `lifeline auth add` and --api-key, not library calls", async () => {
      const run = await runCli(["-p", "hi", "--model", "openai/gpt-4o"], { env: { OPENAI_API_KEY: "" } });
      expect(run.code, `stderr: ${run.stderr}`).toBe(2);
      expect(run.stderr).toContain("[ERR_MISSING_API_KEY]");
      expect(run.stderr).toContain("set OPENAI_API_KEY");
      expect(run.stderr).toContain("lifeline auth add openai");
      expect(run.stderr).toContain("--api-key");
      expect(run.stderr).not.toContain("createSession");
    });

    it("regression: a session that is not there points to `lifeline sessions`, not listSessions()", async () => {
      const run = await runCli(["-p", "hi", "--session", "0000dead"]);
      expect(run.code, `stderr: ${run.stderr}`).toBe(2);
      expect(run.stderr).toContain("[ERR_SESSION_NOT_FOUND]");
      expect(run.stderr).toContain("`lifeline sessions`");
      expect(run.stderr).not.toContain("listSessions()");
    });

    it("regression: `lifeline sessions | head -1` ends quietly on the closed pipe", async () => {
      const lifelineDir = tempDir();
      const cwd = tempDir();
      const env = { ...process.env, LIFELINE_DIR: lifelineDir, NO_COLOR: "1" };
      for (let i = 0; i < 3; i++) {
        const made = spawnSync(process.execPath, [CLI, "-p", `prompt ${i}`, "--model", "demo/demo-fast"], { cwd, env });
        expect(made.status, made.stderr.toString()).toBe(0);
      }
      // Many lines, each its own write: the first ones reach head, which exits; the rest meet EPIPE.
      const script = `for i in 1 2 3 4 5 6 7 8; do "${process.execPath}" "${CLI}" sessions | head -1 > /dev/null; echo "status=\${PIPESTATUS[0]}"; done`;
      const piped = spawnSync("bash", ["-c", script], { cwd, env, timeout: 120_000 });
      const stderr = piped.stderr.toString();
      expect(stderr).not.toMatch(/EPIPE|Unhandled|Error/);
      expect(piped.stdout.toString().trim().split("\n")).toEqual(Array(8).fill("status=0"));
    }, 150_000);
  });

  it("R12: a wrongly typed key in the project .lifeline/settings.json exits 2 naming that file and the key", async () => {
    const run = await runCli(["-p", "hi"], { projectSettings: '{"retry":{"baseDelayMs":"soon"}}' });
    expect(run.timedOut, `stderr: ${run.stderr}`).toBe(false);
    expect(run.code, `stderr: ${run.stderr}`).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/\.lifeline\/settings\.json/);
    expect(run.stderr).toContain("retry.baseDelayMs");
  });

  it("R10: --help exits 0 and documents -p", async () => {
    const run = await runCli(["--help"]);
    expect(run.timedOut, `stderr: ${run.stderr}`).toBe(false);
    expect(run.code, `stderr: ${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/Usage: lifeline/);
    expect(run.stdout).toMatch(/-p, --print \[text\]/);
    expect(run.stdout).toMatch(/\bdemo\b/);
  });

  it("R10: npx lifeline --help from the repository root runs the package's own bin", async () => {
    // The first npx run from a new checkout links the package into npx's cache. Without
    // --ignore-scripts that link runs the package's `prepare` (npm run build) in the repository
    // itself: dist/ was deleted and rebuilt under the tests running beside this one (and a build
    // that failed left it without the worker bundle). The bin is what this test is about.
    const run = await runCli([], {
      command: { file: "npx", args: ["--no-install", "--ignore-scripts", "lifeline", "--help"], cwd: REPO_ROOT },
      timeoutMs: 150_000,
    });
    expect(run.timedOut, `stderr: ${run.stderr}`).toBe(false);
    expect(run.code, `stderr: ${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/Usage: lifeline/);
    expect(run.stdout).toMatch(/-p, --print \[text\]/);
  }, 160_000);

  describe("real providers", () => {
    const KEY = "sk-cli-secret-5a4b3c2d1e";
    const models = (url: string, apiKey?: string) =>
      JSON.stringify({
        providers: {
          // A comment and a trailing comma: models.json is JSONC.
          mock: {
            baseUrl: `${url}/v1`,
            api: "openai-completions",
            ...(apiKey === undefined ? {} : { apiKey }),
            models: [{ id: "mock-1" }, { id: "mock-2" }],
          },
        },
      }).replace('"providers":{', '"providers":{ /* local mock */');

    it("--provider/--model reach a models.json provider; the mock's answer is printed", async () => {
      const server = await startMockServer({ script: { reply: "Mock says hi." } });
      cleanups.push(() => void server.close());
      const run = await runCli(["-p", "hello", "--provider", "mock", "--model", "mock-1"], {
        models: models(server.url, "MOCK_CLI_KEY"),
        env: { MOCK_CLI_KEY: KEY },
      });
      expect(run.code, `stderr: ${run.stderr}`).toBe(0);
      expect(run.stdout).toBe("Mock says hi.\n");
      expect(server.requests("hello")).toBe(1);
    });

    it("--api-key is used, and a key the server echoes appears nowhere in the output", async () => {
      const server = await startMockServer({
        script: {
          conversations: [{ match: "leak", steps: [{ type: "error", status: 401, message: `bad key ${KEY}` }] }],
        },
      });
      cleanups.push(() => void server.close());
      const run = await runCli(["-p", "leak", "--model", "mock/mock-1", "--api-key", KEY], {
        models: models(server.url),
      });
      expect(run.code, `stderr: ${run.stderr}`).toBe(1);
      expect(run.stdout + run.stderr).not.toContain(KEY);
      expect(run.stderr).toContain("Error: 401 bad key [redacted]");
    });

    it("LIFELINE_API_KEY gives the key without putting it on the command line (models.json has none)", async () => {
      const server = await startMockServer({ script: { reply: "Keyed." } });
      cleanups.push(() => void server.close());
      const run = await runCli(["-p", "key via env", "--model", "mock/mock-1"], {
        models: models(server.url),
        env: { LIFELINE_API_KEY: KEY },
      });
      expect(run.code, `stderr: ${run.stderr}`).toBe(0);
      expect(run.stdout).toBe("Keyed.\n");
    });

    it("an unknown model of a models.json provider exits 2 and lists the provider's models", async () => {
      const run = await runCli(["-p", "x", "--model", "mock/nope"], { models: models("http://127.0.0.1:9", "k") });
      expect(run.code, `stderr: ${run.stderr}`).toBe(2);
      expect(run.stderr).toContain('Unknown model "nope" for provider "mock"');
      expect(run.stderr).toContain("Available: mock-1, mock-2.");
    });

    it("a malformed models.json exits 2 naming the file and the line", async () => {
      const run = await runCli(["-p", "x"], { models: '{ "providers": { "mock": ' });
      expect(run.code, `stderr: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(/Models file .*models\.json is not valid JSON at line 1, column \d+/);
    });

    it("a provider without a key exits 2 with ERR_MISSING_API_KEY's advice", async () => {
      const run = await runCli(["-p", "x", "--model", "mock/mock-1"], { models: models("http://127.0.0.1:9") });
      expect(run.code, `stderr: ${run.stderr}`).toBe(2);
      expect(run.stderr).toContain('No API key for provider "mock"');
      expect(run.stderr).toContain("--api-key");
    });

    it("--no-session is accepted, as in pi", async () => {
      const run = await runCli(["-p", "hi", "--model", "demo/demo-fast", "--no-session"]);
      expect(run.code, `stderr: ${run.stderr}`).toBe(0);
    });

    it("mock-server serves models and counters until SIGTERM, then exits 0", async () => {
      const dir = tempDir();
      writeFileSync(join(dir, "faults.jsonc"), '{ "reply": "From the CLI server.", /* JSONC */ }');
      const child = spawn(process.execPath, [CLI, "mock-server", "--script", join(dir, "faults.jsonc")], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      cleanups.push(() => {
        clearTimeout(timer);
        child.kill("SIGKILL");
      });
      let stdout = "";
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on("data", (chunk: Buffer) => {
          stdout += chunk.toString();
          const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
          if (match?.[1] !== undefined) resolve(match[1]);
        });
        child.on("exit", () => reject(new Error(`mock-server exited early: ${stderr}`)));
      });
      const answer = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      });
      expect(
        ((await answer.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content,
      ).toBe("From the CLI server.");
      const stats = (await (await fetch(`${url}/_mock/stats`)).json()) as { total: number };
      expect(stats.total).toBe(1);
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(stderr).toContain("stopped after 1 model requests");
    });

    it("mock-server with an invalid script exits 2 naming the file", async () => {
      const dir = tempDir();
      writeFileSync(join(dir, "bad.json"), '{ "faults": [{ "probability": 2, "step": 503 }] }');
      const run = await runCli(["mock-server", "--script", join(dir, "bad.json")]);
      expect(run.code, `stderr: ${run.stderr}`).toBe(2);
      expect(run.stderr).toContain(join(dir, "bad.json"));
    });
  });
});
