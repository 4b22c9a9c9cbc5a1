/**
 * Answers of `lifeline --mode rpc` that must be pi 0.73.1's, checked side by side with pi itself
 * (installed outside the repository, LIFELINE_PI_PACKAGE; see test/fixtures/pi-package.ts), both
 * children on the same mock model server: `get_last_assistant_text` before any answer, a command
 * carrying a field it does not have, and the path `export_html` answers. Run `npm run build` first.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { mockServerSuite } from "../../fixtures/mock-server-suite.js";
import { mockModelsJson } from "../../fixtures/models.mjs";
import { spawnPiRpc } from "../../fixtures/pi-rpc-child.js";
import { type RpcChild, type RpcRecord, spawnRpc } from "../../fixtures/rpc-child.js";

const suite = mockServerSuite({ script: { reply: "Mock reply." } });
const { cleanups } = suite;

const MODEL = ["--provider", "mock", "--model", "mock-1"];

/** lifeline and pi, each with the mock model and the given session flags. */
function both(sessionArgs: (dir: string) => string[]): { lifeline: RpcChild; pi: RpcChild } {
  const models = mockModelsJson(suite.server.url);
  const lifeline = spawnRpc(cleanups, { models, args: [...MODEL, ...sessionArgs("sessions")] });
  const pi = spawnPiRpc(cleanups, { models, args: [...MODEL, ...sessionArgs("sessions")] });
  return { lifeline, pi };
}

/** Sends a prompt and waits for the end of its run (pi has no agent_settled: its last agent_end). */
async function answer(child: RpcChild, message: string): Promise<void> {
  const from = child.records.length;
  expect(await child.request({ type: "prompt", message }, 20_000)).toMatchObject({ success: true });
  await child.waitFor((record) => record.type === "agent_end", "agent_end", from, 20_000);
}

/** A response without its id (each child numbers its own). */
function answered(response: RpcRecord): RpcRecord {
  const { id: _id, ...rest } = response;
  return rest;
}

describe("answers as pi 0.73.1 gives them", () => {
  it("get_last_assistant_text answers {} before any answer, as pi (regression: it answered {text: null})", async () => {
    const { lifeline, pi } = both(() => ["--no-session"]);
    const command = { type: "get_last_assistant_text" };
    const [ours, theirs] = await Promise.all([lifeline.request(command, 20_000), pi.request(command, 20_000)]);
    expect(answered(theirs)).toEqual({ type: "response", command: "get_last_assistant_text", success: true, data: {} });
    expect(answered(ours)).toEqual(answered(theirs));

    await Promise.all([answer(lifeline, "say something"), answer(pi, "say something")]);
    const [after, piAfter] = await Promise.all([lifeline.request(command), pi.request(command)]);
    expect(answered(after)).toEqual(answered(piAfter));
    expect(after.data).toEqual({ text: "Mock reply." });
  });

  it("runs a command carrying a field it does not have, as pi (regression: it refused it), and still refuses a mistyped one", async () => {
    const { lifeline, pi } = both(() => ["--no-session"]);
    const command = { type: "set_auto_retry", enabled: false, fromANewerClient: { any: "thing" } };
    const [ours, theirs] = await Promise.all([lifeline.request(command, 20_000), pi.request(command, 20_000)]);
    expect(answered(theirs)).toEqual({ type: "response", command: "set_auto_retry", success: true });
    expect(answered(ours)).toEqual(answered(theirs));
    const state = await lifeline.request({ type: "get_state", verbose: true });
    expect(state).toMatchObject({ success: true, data: { autoRetryEnabled: false } });

    // lifeline checks what pi does not: a required field that is missing or of the wrong type.
    const mistyped = await lifeline.request({ type: "set_auto_retry", enabled: "no", extra: 1 });
    expect(mistyped).toMatchObject({ success: false, command: "set_auto_retry" });
    expect(String(mistyped.error)).toMatch(/^Invalid set_auto_retry: enabled: /);
  });

  it("export_html answers the path as given, relative, as pi (regression: it answered it absolute)", async () => {
    const { lifeline, pi } = both((dir) => ["--session-dir", dir]);
    await Promise.all([answer(lifeline, "export me"), answer(pi, "export me")]);
    const given = { type: "export_html", outputPath: "out.html" };
    const [ours, theirs] = await Promise.all([lifeline.request(given), pi.request(given)]);
    expect(answered(theirs)).toEqual({
      type: "response",
      command: "export_html",
      success: true,
      data: { path: "out.html" },
    });
    expect(answered(ours)).toEqual(answered(theirs));
    expect(existsSync(join(lifeline.dir, "out.html"))).toBe(true);

    // The default name: `<app>-session-<session file's base name>.html`, in the cwd, answered relative.
    const [byDefault, piByDefault] = await Promise.all([
      lifeline.request({ type: "export_html" }),
      pi.request({ type: "export_html" }),
    ]);
    const fileOf = async (child: RpcChild) =>
      ((await child.request({ type: "get_state" })).data as { sessionFile: string }).sessionFile;
    const base = (file: string) => (file.split("/").pop() ?? "").replace(/\.jsonl$/, "");
    expect(piByDefault.data).toEqual({ path: `pi-session-${base(await fileOf(pi))}.html` });
    expect(byDefault.data).toEqual({ path: `lifeline-session-${base(await fileOf(lifeline))}.html` });
    expect(existsSync(join(lifeline.dir, (byDefault.data as { path: string }).path))).toBe(true);
  });
});
