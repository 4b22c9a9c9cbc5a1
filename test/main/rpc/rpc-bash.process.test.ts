/**
 * `bash` and `abort_bash` over RPC: `RpcClient` against the built CLI (`dist/main/cli.js --mode
 * rpc`) in a child process, running real shells in the session's worker. Every wait is bounded.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { RpcClient } from "../../../src/main/rpc/rpc-client.js";
import { tempDir, within } from "../../fixtures/bounded.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function started(): Promise<{ client: RpcClient; dir: string }> {
  const dir = tempDir(cleanups, "lifeline-rpc-bash-");
  writeFileSync(join(dir, "settings.json"), "{}");
  const client = new RpcClient({ cliPath: CLI, cwd: dir, env: { LIFELINE_DIR: dir }, args: ["--no-session"] });
  cleanups.push(() => within(client.stop(), 10_000, "stop()"));
  await within(client.start(), 20_000, "start()");
  return { client, dir };
}

describe("RPC bash", () => {
  it("answers with pi's BashResult and puts a bashExecution message into the transcript", async () => {
    const { client, dir } = await started();
    const result = await within(client.bash("pwd; exit 4"), 10_000, "bash");
    expect(result).toEqual({ output: `${dir}\n`, exitCode: 4, cancelled: false, truncated: false });
    const messages = await client.getMessages();
    expect(messages).toMatchObject([
      { role: "bashExecution", command: "pwd; exit 4", output: `${dir}\n`, exitCode: 4 },
    ]);
  });

  it("abort_bash reaches a running `sleep 30` past the command queue; bash answers within 2 s with cancelled: true", async () => {
    const { client } = await started();
    const running = client.bash("sleep 30");
    // The state answers while the command runs: bash does not hold up the commands after it.
    await within(client.getState(), 10_000, "get_state while bash runs");
    const aborted = performance.now();
    await within(client.abortBash(), 2000, "abort_bash");
    const result = await within(running, 2000, "the aborted bash's response");
    expect(performance.now() - aborted).toBeLessThan(2000);
    expect(result).toEqual({ output: "", cancelled: true, truncated: false });
  });

  it("a second bash while one runs is refused; a command printing far more than the limit is truncated with its full output in a file", async () => {
    const { client } = await started();
    const long = client.bash("seq 1 300000");
    await expect(within(client.bash("true"), 10_000, "the second bash")).rejects.toMatchObject({
      code: "ERR_RPC_FAILED",
    });
    const result = await within(long, 20_000, "bash");
    expect(result.truncated).toBe(true);
    expect(result.output.split("\n").length).toBeLessThanOrEqual(2000);
    expect(result.output.endsWith("300000\n")).toBe(true);
    const path = result.fullOutputPath as string;
    cleanups.push(() => rmSync(path, { force: true }));
    expect(readFileSync(path, "utf8").split("\n")).toHaveLength(300001);
  });
});
