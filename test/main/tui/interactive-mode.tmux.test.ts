/**
 * The interactive terminal UI (docs/tui.md, SPEC R10) in a real terminal: tmux runs the built UI
 * (test/fixtures/tui-launch.mjs) against the mock model server on 127.0.0.1 or the demo models,
 * keys go in with `send-keys`, and the screen is read with `capture-pane`. Every wait polls the
 * screen for a condition, up to a bound. Run `npm run build` first.
 *
 * Without tmux these tests fail (never skip), saying how to install it; `npm test` installs it
 * first when it can (scripts/test-prereqs.mjs).
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type MockServer, startMockServer } from "../../../dist/mock-server/index.js";
import { requirePrerequisites } from "../../../scripts/test-prereqs.mjs";
import { tempDir, within } from "../../fixtures/bounded.js";
import { mockModelsJson } from "../../fixtures/models.mjs";

const LAUNCHER = fileURLToPath(new URL("../../fixtures/tui-launch.mjs", import.meta.url));
const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));
const REPLY = "Streaming words from the mock server.";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let server: MockServer;
// Every test fails without tmux, with the command that installs it: none is skipped.
beforeEach(() => requirePrerequisites("tmux"));
beforeAll(async () => {
  server = await startMockServer({ script: { reply: REPLY } });
});
afterAll(async () => {
  await server?.close();
});

const scripts: { match: string; steps: unknown[] }[] = [];
let counter = 0;
/**
 * A first prompt unique to this test, whose session's model requests follow `steps` (then answer).
 * The mock keys a conversation by its first user message, and every later prompt of the session
 * is a user message of its own (as pi sends them), so the key stays the first prompt's: `steps`
 * are the session's requests in order, the later prompts' included.
 */
function scripted(name: string, steps: unknown[]): string {
  const text = `tui case ${++counter} ${name}`;
  scripts.push({ match: text, steps });
  server.setScript({ reply: REPLY, conversations: scripts });
  return text;
}

const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

/** A tmux server of its own with one 100×30 window running the UI; killed after the test. */
class Pane {
  /** The server's socket, in the test's temporary directory so that nothing outlives the test. */
  readonly #socket: string;
  /** LIFELINE_DIR and the working directory of the command. */
  readonly dir: string;

  /**
   * Starts `entry` (the launcher, or the CLI itself) with `args`; the shell then prints
   * `EXIT=<code>` and the tty's mode. The directory is both LIFELINE_DIR and the working
   * directory; `prepare` runs in it first (to store sessions, say).
   */
  constructor(
    args: string[],
    settings: object = {},
    entry: string = LAUNCHER,
    prepare: (dir: string) => void = () => {},
  ) {
    const dir = tempDir(cleanups, "lifeline-tui-");
    this.dir = dir;
    this.#socket = join(dir, "tmux.sock");
    writeFileSync(join(dir, "settings.json"), JSON.stringify(settings));
    writeFileSync(join(dir, "models.json"), mockModelsJson(server.url, "k"));
    prepare(dir);
    const command = [
      `env LIFELINE_DIR=${quote(dir)} ${quote(process.execPath)} ${quote(entry)} ${args.map(quote).join(" ")};`,
      "echo EXIT=$?;",
      // After the UI is gone: "icanon" means the terminal is back in line mode (raw mode is off).
      'echo TTY=$(stty -a | tr " ;" "\\n\\n" | grep -x -e icanon -e -icanon);',
      "sleep 60",
    ].join(" ");
    const env: NodeJS.ProcessEnv = { ...process.env, LANG: process.env.LANG ?? "C.UTF-8" };
    delete env.TMUX;
    execFileSync(
      "tmux",
      ["-S", this.#socket, "new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "-c", dir, command],
      {
        env,
      },
    );
    cleanups.push(() => {
      try {
        execFileSync("tmux", ["-S", this.#socket, "kill-server"], { stdio: "ignore" });
      } catch {
        // The server is gone already.
      }
    });
  }

  tmux(...args: string[]): string {
    return execFileSync("tmux", ["-S", this.#socket, ...args], { encoding: "utf8" });
  }

  screen(): string {
    return this.tmux("capture-pane", "-p", "-t", "t");
  }

  /** Types `text` literally, then Enter. */
  submit(text: string): void {
    this.tmux("send-keys", "-t", "t", "-l", text);
    this.tmux("send-keys", "-t", "t", "Enter");
  }

  keys(...keys: string[]): void {
    this.tmux("send-keys", "-t", "t", ...keys);
  }

  /** Polls the screen every 50 ms until `test` holds, for up to `ms`; returns that screen. */
  async waitFor(what: string, test: (screen: string) => boolean, ms = 10_000): Promise<string> {
    const deadline = Date.now() + ms;
    let screen = "";
    while (Date.now() < deadline) {
      screen = this.screen();
      if (test(screen)) return screen;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`timed out after ${ms} ms waiting for ${what}; the screen was:\n${screen}`);
  }

  waitForText(text: string, ms?: number): Promise<string> {
    return this.waitFor(JSON.stringify(text), (screen) => screen.includes(text), ms);
  }

  /**
   * Waits until the command has ended and the shell has printed both lines after it, `EXIT=<code>`
   * then `TTY=<mode>` (the last), and returns that screen.
   */
  waitForExit(ms?: number): Promise<string> {
    return this.waitFor("EXIT= and then TTY= (the command ended)", (screen) => /^TTY=-?icanon$/m.test(screen), ms);
  }
}

const lines = (screen: string) => screen.split("\n").map((line) => line.trimEnd());
const count = (screen: string, text: string) => screen.split(text).length - 1;

describe("interactive terminal UI in tmux", () => {
  it("lifeline with no -p on a terminal opens the interactive session, answers, and Ctrl+D exits 0", async () => {
    const pane = new Pane(["--model", "demo/demo-fast"], {}, CLI);
    await pane.waitForText("demo/demo-fast · idle");
    pane.submit("hello from the terminal");
    await pane.waitForText('you said "hello from the terminal"');
    await pane.waitForText("demo/demo-fast · idle");
    pane.keys("C-d");
    const screen = await pane.waitForExit();
    expect(screen).toContain("EXIT=0");
    expect(screen).toContain("TTY=icanon");
  });

  it('regression: prompts on the command line (pi\'s `pi "first" "second"`) are sent in order once the session is on screen', async () => {
    const pane = new Pane(["--model", "demo/demo-fast", "first from argv", "second from argv"], {}, CLI);
    await pane.waitForText('you said "second from argv"');
    const screen = await pane.waitForText("demo/demo-fast · idle");
    expect(screen.indexOf('you said "first from argv"')).toBeGreaterThan(0);
    expect(screen.indexOf('you said "first from argv"')).toBeLessThan(screen.indexOf('you said "second from argv"'));
    pane.submit("and one typed");
    await pane.waitForText('you said "and one typed"');
    pane.keys("C-d");
    expect(await pane.waitForExit()).toContain("EXIT=0");
  });

  it("R10: the loader counts down, Esc cancels the chain with the failure line, and a later prompt is answered", async () => {
    const prompt = scripted("esc cancels the countdown", [503]);
    const pane = new Pane(["mock/mock-1"], { retry: { baseDelayMs: 3000 } });
    await pane.waitForText("mock/mock-1 · idle");
    pane.submit(prompt);
    await pane.waitForText("Retrying (1/3) in 3s… (esc to cancel)");
    await pane.waitForText("Retrying (1/3) in 2s… (esc to cancel)");
    expect(pane.screen()).toContain("mock/mock-1 · retrying 1/3");
    pane.keys("Escape");
    const screen = await pane.waitForText("Retry failed after 1 attempts: Retry cancelled");
    expect(screen).not.toContain("Retrying (");
    expect(screen).toContain("Error: 503");
    await pane.waitForText("mock/mock-1 · aborted");
    // The cancelled chain sent no retry: one request so far.
    expect(server.requests(prompt)).toBe(1);

    pane.submit("and now a second question");
    await pane.waitForText(REPLY);
    await pane.waitForText("mock/mock-1 · idle");
    expect(server.requests(prompt)).toBe(2);
  });

  it("Esc, then Ctrl+C, stop a streaming answer and close its model request", async () => {
    const stall = { type: "stall", afterTokens: 2 };
    // The first prompt's request stalls, then "once more"'s; "a third question" is answered.
    const prompt = scripted("abort while streaming", [stall, stall]);
    const pane = new Pane(["mock/mock-1"]);
    await pane.waitForText("mock/mock-1 · idle");

    for (const [n, key] of [
      [1, "Escape"],
      [2, "C-c"],
    ] as const) {
      const since = server.log.at(-1)?.seq ?? 0;
      const closed = server.waitForRequestEnd((r) => r.conversation.includes(prompt), 10_000, since);
      pane.submit(n === 1 ? prompt : "once more");
      // Two tokens arrived and the stream went silent: the answer is streaming.
      await pane.waitFor("the first tokens", (s) => count(s, "Streaming words") === n && s.includes("· streaming"));
      pane.keys(key);
      await pane.waitFor(`abort ${n}`, (s) => count(s, "Operation aborted") === n && s.includes("· aborted"));
      expect((await within(closed, 10_000, "the stalled request to end")).outcome).toBe("client_closed");
    }
    // Ctrl+C that aborted did not arm exit: the UI is still up and answers.
    pane.submit("a third question");
    await pane.waitForText(REPLY);
    expect(pane.screen()).not.toContain("EXIT=");
  });

  it("Ctrl+D on an empty line exits with 0 and hands the terminal back in line mode with the cursor shown", async () => {
    const pane = new Pane(["demo/demo-fast"]);
    await pane.waitForText("demo/demo-fast · idle");
    pane.submit("hello");
    await pane.waitForText('Demo answer: you said "hello"');
    pane.keys("C-d");
    const screen = await pane.waitForExit();
    expect(screen).toContain("EXIT=0");
    expect(screen).toContain("TTY=icanon");
    expect(pane.tmux("display-message", "-p", "-t", "t", "#{cursor_flag}").trim()).toBe("1");
  });

  it("Ctrl+D while an answer streams exits cleanly too, with nothing left holding the process", async () => {
    const pane = new Pane(["demo/demo-stream"]);
    await pane.waitForText("demo/demo-stream · idle");
    pane.submit("a long answer [words=2000]");
    await pane.waitForText("· streaming");
    pane.keys("C-d");
    const screen = await pane.waitForExit();
    expect(screen).toContain("EXIT=0");
    expect(screen).toContain("TTY=icanon");
  });

  it("Ctrl+C twice on an idle session exits; once only clears the line and shows the hint", async () => {
    const pane = new Pane(["demo/demo-fast"]);
    await pane.waitForText("demo/demo-fast · idle");
    pane.tmux("send-keys", "-t", "t", "-l", "draft text");
    await pane.waitForText("> draft text");
    pane.keys("C-c");
    const armed = await pane.waitForText("press Ctrl+C again to exit");
    expect(armed).not.toContain("draft text");
    pane.keys("C-c");
    const screen = await pane.waitForExit();
    expect(screen).toContain("EXIT=0");
    expect(screen).toContain("TTY=icanon");
  });

  it("SIGTERM ends the UI with exit code 143 and the terminal restored", async () => {
    const pane = new Pane(["demo/demo-stream"]);
    await pane.waitForText("demo/demo-stream · idle");
    pane.submit("a long answer [words=2000]");
    await pane.waitForText("· streaming");
    // The pane's shell runs the launcher as its only child (env execs node).
    const shell = pane.tmux("display-message", "-p", "-t", "t", "#{pane_pid}").trim();
    const child = Number(execFileSync("pgrep", ["-P", shell], { encoding: "utf8" }).trim());
    process.kill(child, "SIGTERM");
    const screen = await pane.waitForExit();
    expect(screen).toContain("EXIT=143");
    expect(screen).toContain("TTY=icanon");
  });

  it("resizing the terminal re-wraps everything once, with no garbled or duplicated lines", async () => {
    const pane = new Pane(["demo/demo-fast"]);
    await pane.waitForText("demo/demo-fast · idle");
    pane.submit("resize me [words=60]");
    await pane.waitFor("the answer", (s) => s.includes("lifeline runs") && s.includes("· idle"));
    const words = (screen: string) => {
      const all = lines(screen);
      const start = all.findIndex((line) => line.includes("› resize me")) + 1;
      const end = all.findIndex((line) => line.startsWith("───"));
      return all.slice(start, end).join(" ").split(/\s+/).filter(Boolean);
    };
    const before = words(pane.screen());

    /** The screen pi-tui draws after a resize: every line fits, nothing is left twice. */
    const redrawn = (screen: string, width: number) => {
      const rows = lines(screen);
      return (
        rows.every((line) => [...line].length <= width) &&
        rows.filter((line) => line.startsWith("───")).join() === "─".repeat(width) &&
        count(screen, "demo/demo-fast · idle") === 1 &&
        count(screen, "› resize me") === 1 &&
        count(screen, "lifeline · demo/demo-fast") === 1
      );
    };
    for (const width of [50, 80]) {
      pane.tmux("resize-window", "-t", "t", "-x", String(width), "-y", "30");
      // tmux first reflows the old lines itself (a 100-column rule becomes two 50-column rows);
      // pi-tui's redraw then replaces them. Wait for the redrawn screen, then check it is stable.
      await pane.waitFor(`a clean redraw at width ${width}`, (screen) => redrawn(screen, width));
      const screen = pane.screen();
      expect(redrawn(screen, width)).toBe(true);
      expect(words(screen)).toEqual(before);
    }
  });

  it("tool activity shows the call and its result", async () => {
    const pane = new Pane(["--tools"]);
    await pane.waitForText("test/tools-1 · idle");
    pane.submit("where does the tool run");
    await pane.waitForText("✓ whereami");
    const screen = await pane.waitForText("the tool said: isMainThread=false");
    expect(screen).toContain("isMainThread=false");
  });

  it("Shift+Tab cycles a reasoning model's thinking level as pi does: the status line shows it and the next request carries it", async () => {
    // A reasoning model of the mock (models.json replaced after the Pane's default one is written).
    const reasoner = (dir: string) =>
      writeFileSync(
        join(dir, "models.json"),
        JSON.stringify({
          providers: {
            mock: {
              baseUrl: `${server.url}/v1`,
              api: "openai-completions",
              apiKey: "k",
              compat: { supportsDeveloperRole: false, supportsReasoningEffort: true },
              models: [{ id: "reasoner", reasoning: true }],
            },
          },
        }),
      );
    const pane = new Pane(["--model", "mock/reasoner", "--thinking", "low"], {}, CLI, reasoner);
    await pane.waitForText("mock/reasoner • low · idle");
    pane.keys("BTab");
    await pane.waitForText("Thinking level: medium");
    await pane.waitForText("mock/reasoner • medium · idle");
    const prompt = scripted("thinking from the terminal", []);
    const since = server.log.at(-1)?.seq ?? 0;
    pane.submit(prompt);
    await pane.waitForText(REPLY);
    await pane.waitForText("mock/reasoner • medium · idle");
    const sent = server.log.filter((record) => record.seq > since && record.conversation === prompt);
    expect(sent.map((record) => record.reasoning)).toEqual([{ reasoning_effort: "medium" }]);
  });

  it("Shift+Tab on a model without reasoning says so and the status line shows no level", async () => {
    const pane = new Pane(["mock/mock-1"]);
    await pane.waitForText("mock/mock-1 · idle");
    pane.keys("BTab");
    const screen = await pane.waitForText("Current model does not support thinking");
    expect(screen).not.toContain("•");
  });

  it("an unknown model is reported on stderr with exit code 2, never entering raw mode", async () => {
    const pane = new Pane(["mock/no-such-model"]);
    const screen = await pane.waitForExit();
    expect(screen).toContain("EXIT=2");
    expect(screen).toMatch(/Error: .*no-such-model/);
    expect(screen).toContain("TTY=icanon");
    expect(screen).not.toContain("· idle");
  });

  describe("-r/--resume", () => {
    /** Runs `lifeline -p <text>` on the demo model in `dir` (LIFELINE_DIR and cwd), saving a session. */
    const print = (dir: string, text: string) =>
      execFileSync(process.execPath, [CLI, "--model", "demo/demo-fast", "-p", text], {
        cwd: dir,
        env: { ...process.env, LIFELINE_DIR: dir },
        stdio: "ignore",
        timeout: 20_000,
      });
    const twoSessions = (dir: string) => {
      print(dir, "the older session");
      print(dir, "the newer session");
    };
    const files = (dir: string) =>
      readdirSync(join(dir, "sessions"), { recursive: true, encoding: "utf8" })
        .filter((name) => name.endsWith(".jsonl"))
        .map((name) => join(dir, "sessions", name));

    it("lists this directory's sessions newest first; the chosen one opens with its history and takes new prompts", async () => {
      const pane = new Pane(["-r"], {}, CLI, twoSessions);
      const list = await pane.waitForText("Resume a session (2 in this directory)");
      const rows = lines(list);
      const newer = rows.findIndex((line) => line.includes("the newer session"));
      const older = rows.findIndex((line) => line.includes("the older session"));
      expect(newer).toBeGreaterThan(-1);
      expect(older).toBeGreaterThan(newer);
      expect(rows[newer]).toContain("2 messages");
      expect(rows[older]).toContain("2 messages");

      pane.keys("Down");
      await pane.waitFor("the older session selected", (s) =>
        lines(s).some((l) => l.startsWith("→ the older session")),
      );
      pane.keys("Enter");
      const opened = await pane.waitForText("demo/demo-fast · idle");
      expect(opened).toContain('you said "the older session"');
      expect(opened).not.toContain("the newer session");
      expect(opened).not.toContain("Resume a session");

      pane.submit("a prompt after resuming");
      await pane.waitForText('you said "a prompt after resuming"');
      await pane.waitForText("demo/demo-fast · idle");
      pane.keys("C-d");
      const screen = await pane.waitForExit();
      expect(screen).toContain("EXIT=0");
      expect(screen).toContain("TTY=icanon");

      // Appended to the file it opened; no third session file.
      const stored = files(pane.dir).map((file) => readFileSync(file, "utf8"));
      expect(stored).toHaveLength(2);
      const olderFile = stored.find((text) => text.includes("the older session")) ?? "";
      expect(olderFile).toContain("a prompt after resuming");
      expect(stored.find((text) => text.includes("the newer session"))).not.toContain("a prompt after resuming");
    });

    for (const key of ["Escape", "C-c"]) {
      it(`${key} in the picker exits 0 with the terminal back in line mode and the sessions untouched`, async () => {
        const pane = new Pane(["-r"], {}, CLI, twoSessions);
        await pane.waitForText("Resume a session (2 in this directory)");
        const before = files(pane.dir).map((file) => readFileSync(file, "utf8"));
        pane.keys(key);
        const screen = await pane.waitForExit();
        expect(screen).toContain("EXIT=0");
        expect(screen).toContain("TTY=icanon");
        expect(files(pane.dir).map((file) => readFileSync(file, "utf8"))).toEqual(before);
      });
    }

    it("with no sessions in the directory says so and exits 0 without entering raw mode", async () => {
      const pane = new Pane(["-r"], {}, CLI);
      const screen = await pane.waitForExit();
      expect(screen).toContain("No sessions to resume in");
      expect(screen).toContain("EXIT=0");
      expect(screen).toContain("TTY=icanon");
      expect(screen).not.toContain("Resume a session");
    });
  });
});
