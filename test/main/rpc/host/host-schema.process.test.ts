/**
 * The shipped JSON Schema (schema/host-protocol.schema.json) against real traffic: a short exchange
 * with `lifeline --mode host` on stdio, every command sent checked against `HostCommand` and every
 * line written against `HostOutput`. Run `npm run build` first.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv, type ErrorObject } from "ajv";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir, within } from "../../../fixtures/bounded.js";
import { driveRpcChild, type RpcRecord } from "../../../fixtures/rpc-child.js";

const CLI = fileURLToPath(new URL("../../../../dist/main/cli.js", import.meta.url));
const SCHEMA = new URL("../../../../schema/host-protocol.schema.json", import.meta.url);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addSchema(JSON.parse(readFileSync(SCHEMA, "utf8")) as object, "host");

/** The records `definition` refuses, each with ajv's reasons (empty when all pass). */
function refused(definition: string, records: readonly unknown[]): { record: unknown; errors: ErrorObject[] }[] {
  const validate = ajv.getSchema(`host#/definitions/${definition}`);
  if (validate === undefined) throw new Error(`the schema has no definition ${definition}`);
  return records.flatMap((record) => (validate(record) ? [] : [{ record, errors: validate.errors ?? [] }]));
}

describe("schema/host-protocol.schema.json on real traffic", () => {
  it("every command of an exchange is a HostCommand and every line host mode writes a HostOutput", async () => {
    const dir = tempDir(cleanups, "lifeline-host-schema-");
    writeFileSync(`${dir}/settings.json`, JSON.stringify({ retry: { baseDelayMs: 5 } }));
    const child = spawn(process.execPath, [CLI, "--mode", "host", "--model", "demo/demo-1"], {
      cwd: dir,
      env: { ...process.env, LIFELINE_DIR: dir, NO_COLOR: "1" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const host = driveRpcChild(cleanups, child, dir);
    const sent: Record<string, unknown>[] = [];
    let nextId = 0;
    const request = (command: Record<string, unknown> & { type: string }) => {
      const id = `s${++nextId}`;
      const from = host.records.length;
      sent.push({ ...command, id });
      host.send({ ...command, id });
      return host.waitFor((record) => record.type === "response" && record.id === id, command.type, from);
    };

    const opened = await request({ type: "open_session", name: "schema check" });
    expect(opened).toMatchObject({ command: "open_session", success: true });
    const sessionId = (opened.data as { sessionId: string }).sessionId;
    // The demo model fails twice before it answers: the retry chain's events are in the traffic.
    expect(await request({ type: "prompt", sessionId, message: "Hello" })).toMatchObject({ success: true });
    await host.waitFor((record) => record.type === "agent_settled" && record.sessionId === sessionId, "agent_settled");
    expect(await request({ type: "get_state", sessionId })).toMatchObject({ success: true });
    expect(await request({ type: "list_sessions" })).toMatchObject({ success: true });
    expect(await request({ type: "prompt", sessionId, message: "" })).toMatchObject({ success: false });
    const unknown = { type: "no_such_command" };
    expect(await request(unknown)).toMatchObject({ command: "no_such_command", success: false });
    host.send("this is not json\n");
    await host.waitFor((record) => record.command === "parse", "the parse error's response");
    expect(await request({ type: "close_session", sessionId })).toMatchObject({ success: true });
    child.stdin.end();
    expect(await within(host.exited, 15_000, "host mode's exit at EOF")).toBe(0);

    expect(host.problems).toEqual([]);
    const types = host.records.map((record: RpcRecord) => record.type);
    expect(types.filter((type) => type === "auto_retry_start")).toHaveLength(2);
    expect(types).toContain("message_update");
    expect(host.records.filter((record) => record.type === "response")).toHaveLength(sent.length + 1);
    expect(refused("HostOutput", host.records)).toEqual([]);
    // The bad commands are refused by the schema as by the host; every other one passes.
    const bad = sent.filter((command) => command.type === "no_such_command" || command.message === "");
    expect(bad).toHaveLength(2);
    expect(refused("HostCommand", sent).map(({ record }) => record)).toEqual(bad);
    // The check can fail on this traffic: the same events without `seq` are refused.
    const events = host.records.filter((record) => record.type !== "response");
    const unnumbered = events.map(({ seq: _, ...event }) => event);
    expect(refused("HostOutput", unnumbered)).toHaveLength(events.length);
  });
});
