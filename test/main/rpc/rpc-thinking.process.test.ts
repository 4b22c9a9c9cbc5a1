/**
 * Thinking levels in RPC mode and on the CLI (docs/rpc.md): `set_thinking_level`,
 * `cycle_thinking_level`, `get_state.thinkingLevel` and the `thinking_level_changed` event through
 * real child processes, compared with pi 0.73.1 itself answering the same commands (installed
 * outside the repository, LIFELINE_PI_PACKAGE); `RpcClient`'s two methods; `--thinking` and the
 * model's `:<level>` suffix. Run `npm run build` first.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { attachJsonlReader } from "../../../dist/main/rpc/jsonl.js";
import { RpcClient } from "../../../dist/main/rpc/rpc-client.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { piPackage } from "../../fixtures/pi-package.js";
import { type RpcRecord, spawnRpc } from "../../fixtures/rpc-child.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));
const LEVELS = "off, minimal, low, medium, high, xhigh";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * One provider, "mock", in the models.json format pi and lifeline share: a reasoning model with
 * pi's xhigh and a model without reasoning. No request is sent by these tests.
 */
const MODELS = JSON.stringify({
  providers: {
    mock: {
      baseUrl: "http://127.0.0.1:9/v1",
      api: "openai-completions",
      apiKey: "dummy",
      compat: { supportsDeveloperRole: false, supportsReasoningEffort: true },
      models: [{ id: "reasoner", reasoning: true, thinkingLevelMap: { xhigh: "xhigh" } }, { id: "plain" }],
    },
  },
});

/** The commands both implementations answer, in order. */
const SCRIPT: (Record<string, unknown> & { id: string; type: string })[] = [
  { id: "s0", type: "get_state" },
  { id: "t1", type: "set_thinking_level", level: "high" },
  { id: "t2", type: "cycle_thinking_level" },
  { id: "t3", type: "cycle_thinking_level" },
  { id: "t4", type: "cycle_thinking_level" },
  { id: "m1", type: "set_model", provider: "mock", modelId: "plain" },
  { id: "t5", type: "cycle_thinking_level" },
  { id: "t6", type: "set_thinking_level", level: "high" },
  { id: "s1", type: "get_state" },
  { id: "m2", type: "set_model", provider: "mock", modelId: "reasoner" },
  { id: "s2", type: "get_state" },
  { id: "n1", type: "new_session" },
  { id: "s3", type: "get_state" },
];

/** A line-driven RPC child, lifeline's or pi's: `request` resolves with the records up to its response. */
interface Driver {
  request(command: Record<string, unknown> & { id: string }): Promise<RpcRecord[]>;
}

function driver(child: ChildProcessWithoutNullStreams): Driver {
  const records: RpcRecord[] = [];
  let wake = () => {};
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  attachJsonlReader(child.stdout, {
    line: (text) => {
      if (!text.startsWith("{")) return;
      records.push(JSON.parse(text) as RpcRecord);
      wake();
    },
  });
  let read = 0;
  return {
    async request(command) {
      child.stdin.write(`${JSON.stringify(command)}\n`);
      const answered = async () => {
        for (;;) {
          const at = records.findIndex((r, i) => i >= read && r.type === "response" && r.id === command.id);
          if (at >= 0) {
            const upTo = records.slice(read, at + 1);
            read = at + 1;
            return upTo;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
      };
      return within(answered(), 30_000, `the response to ${command.id} (stderr: ${stderr.slice(-500)})`);
    },
  };
}

/** What the comparison keeps of a command's records: its thinking events and its response, the model and state reduced to the fields about thinking. */
function thinkingView(records: RpcRecord[]): unknown[] {
  return records
    .filter((record) => record.type === "response" || record.type === "thinking_level_changed")
    .map((record) => {
      if (record.type !== "response" || record.success !== true) return record;
      if (record.command === "set_model") return { ...record, data: { id: (record.data as { id: string }).id } };
      if (record.command === "get_state") {
        return { ...record, data: { thinkingLevel: (record.data as { thinkingLevel: unknown }).thinkingLevel } };
      }
      return record;
    });
}

async function run(target: Driver): Promise<unknown[][]> {
  const seen: unknown[][] = [];
  for (const command of SCRIPT) seen.push(thinkingView(await target.request(command)));
  return seen;
}

function lifelineChild(args: string[]): ChildProcessWithoutNullStreams {
  const dir = tempDir(cleanups, "lifeline-rpc-thinking-");
  writeFileSync(join(dir, "models.json"), MODELS);
  const child = spawn(process.execPath, [CLI, "--mode", "rpc", "--no-session", ...args], {
    cwd: dir,
    env: { ...process.env, LIFELINE_DIR: dir },
  });
  cleanups.push(() => void child.kill("SIGKILL"));
  return child;
}

function piChild(): ChildProcessWithoutNullStreams {
  const dir = tempDir(cleanups, "lifeline-pi-thinking-");
  const agentDir = join(dir, "pi-agent");
  mkdirSync(agentDir);
  writeFileSync(join(agentDir, "models.json"), MODELS);
  const args = ["--mode", "rpc", "--no-session", "--provider", "mock", "--model", "reasoner"];
  const quiet = ["--no-extensions", "--no-skills", "--no-context-files", "--no-tools"];
  const child = spawn(process.execPath, [join(piPackage(), "dist", "cli.js"), ...args, ...quiet], {
    cwd: dir,
    env: { ...process.env, PI_OFFLINE: "1", PI_CODING_AGENT_DIR: agentDir },
  });
  cleanups.push(() => void child.kill("SIGKILL"));
  return child;
}

describe("thinking levels in RPC mode", () => {
  it("set_thinking_level, cycle_thinking_level, get_state and thinking_level_changed answer exactly as pi 0.73.1 answers the same commands", async () => {
    const [ours, pis] = await Promise.all([
      run(driver(lifelineChild(["--provider", "mock", "--model", "reasoner"]))),
      run(driver(piChild())),
    ]);
    expect(ours).toEqual(pis);
    // And what pi answers is what docs/rpc.md promises, field by field.
    const response = (id: string, command: string, data?: unknown) => ({
      id,
      type: "response",
      command,
      success: true,
      ...(data === undefined ? {} : { data }),
    });
    const changed = (level: string) => ({ type: "thinking_level_changed", level });
    expect(ours).toEqual([
      [response("s0", "get_state", { thinkingLevel: "medium" })],
      [changed("high"), response("t1", "set_thinking_level")],
      [changed("xhigh"), response("t2", "cycle_thinking_level", { level: "xhigh" })],
      [changed("off"), response("t3", "cycle_thinking_level", { level: "off" })],
      [changed("minimal"), response("t4", "cycle_thinking_level", { level: "minimal" })],
      [changed("off"), response("m1", "set_model", { id: "plain" })],
      [response("t5", "cycle_thinking_level", null)],
      [response("t6", "set_thinking_level")],
      [response("s1", "get_state", { thinkingLevel: "off" })],
      [changed("minimal"), response("m2", "set_model", { id: "reasoner" })],
      [response("s2", "get_state", { thinkingLevel: "minimal" })],
      [response("n1", "new_session", { cancelled: false })],
      [response("s3", "get_state", { thinkingLevel: "minimal" })],
    ]);
    expect(ours[6]?.[0]).toHaveProperty("data", null);
  }, 60_000);

  it("set_thinking_level with a value that is no level is refused, naming the levels, and the level stays", async () => {
    const rpc = spawnRpc(cleanups, {
      models: MODELS,
      args: ["--no-session", "--provider", "mock", "--model", "reasoner"],
    });
    const refused = await rpc.request({ type: "set_thinking_level", level: "maximal" });
    expect(refused).toMatchObject({ command: "set_thinking_level", success: false });
    expect(refused.error).toBe(`Invalid set_thinking_level: level: must be one of ${LEVELS}.`);
    expect((await rpc.request({ type: "get_state" })).data).toMatchObject({ thinkingLevel: "medium" });
  });

  it("RpcClient.setThinkingLevel and cycleThinkingLevel drive the child, and getState reads the level", async () => {
    const dir = tempDir(cleanups, "lifeline-rpc-thinking-client-");
    writeFileSync(join(dir, "models.json"), MODELS);
    const client = new RpcClient({
      cliPath: CLI,
      cwd: dir,
      env: { LIFELINE_DIR: dir },
      provider: "mock",
      model: "reasoner",
      args: ["--no-session"],
    });
    cleanups.push(() => within(client.stop(), 10_000, "stop()"));
    await within(client.start(), 30_000, "start()");
    await client.setThinkingLevel("low");
    expect((await client.getState()).thinkingLevel).toBe("low");
    expect(await client.cycleThinkingLevel()).toEqual({ level: "medium" });
    await client.setModel("mock", "plain");
    expect(await client.cycleThinkingLevel()).toBeNull();
  });
});

describe("the CLI's thinking level", () => {
  /** The state a child started with `args` reports; the child is ended (its session file closed) before this resolves. */
  const stateOf = async (args: string[], env: Record<string, string> = {}) => {
    const rpc = spawnRpc(cleanups, { models: MODELS, args, env });
    const state = (await rpc.request({ type: "get_state" })).data as { thinkingLevel: string };
    rpc.child.stdin.end();
    expect(await within(rpc.exited, 30_000, "the child's exit")).toBe(0);
    return state;
  };

  it("--model provider/id:level sets the level, and --thinking wins over the suffix (pi's precedence)", async () => {
    expect((await stateOf(["--no-session", "--model", "mock/reasoner:low"])).thinkingLevel).toBe("low");
    expect((await stateOf(["--no-session", "--model", "mock/reasoner:low", "--thinking", "high"])).thinkingLevel).toBe(
      "high",
    );
    expect((await stateOf(["--no-session", "--provider", "mock", "--model", "plain:high"])).thinkingLevel).toBe("off");
  });

  it("a bad --thinking, or a model suffix that is no level, exits 2 with a message naming the levels", async () => {
    const bad = spawnRpc(cleanups, { models: MODELS, args: ["--model", "mock/reasoner", "--thinking", "max"] });
    expect(await within(bad.exited, 30_000, "the exit")).toBe(2);
    expect(bad.stderr()).toContain(`Invalid thinking level "max" (--thinking). Valid values: ${LEVELS}.`);
    const suffix = spawnRpc(cleanups, { models: MODELS, args: ["--no-session", "--model", "mock/reasoner:max"] });
    expect(await within(suffix.exited, 30_000, "the exit")).toBe(2);
    expect(suffix.stderr()).toContain(`If ":max" was meant as a thinking level, use one of: ${LEVELS}.`);
  });

  it("--session resumes a session at its stored level; --thinking replaces it", async () => {
    const first = spawnRpc(cleanups, { models: MODELS, args: ["--model", "mock/reasoner"] });
    await first.request({ type: "set_thinking_level", level: "minimal" });
    const file = ((await first.request({ type: "get_state" })).data as { sessionFile: string }).sessionFile;
    first.child.stdin.end();
    expect(await within(first.exited, 30_000, "the first child's exit")).toBe(0);
    const env = { LIFELINE_DIR: first.dir };
    expect((await stateOf(["--session", file], env)).thinkingLevel).toBe("minimal");
    expect((await stateOf(["--session", file, "--thinking", "high"], env)).thinkingLevel).toBe("high");
  });
});
