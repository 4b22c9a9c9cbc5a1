/**
 * schema/host-protocol.schema.json, the JSON Schema of `lifeline --mode host` that the package
 * ships: it is what scripts/host-schema.mjs generates from src/main/rpc/host/host-protocol.ts right
 * now, and it tells good lines from bad ones. Real traffic is checked against it in
 * test/main/rpc/host/host-schema.process.test.ts.
 */
import { readFileSync } from "node:fs";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { hostProtocolSchemaText, SCHEMA_PATH } from "../../scripts/host-schema.mjs";

/** Generating builds a TypeScript program of the protocol's types: tens of seconds on a busy machine. */
const GENERATE_MS = 240_000;

const committed = () => readFileSync(SCHEMA_PATH, "utf8");

function validator(definition: string) {
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addSchema(JSON.parse(committed()) as object, "host");
  const validate = ajv.getSchema(`host#/definitions/${definition}`);
  if (validate === undefined) throw new Error(`the schema has no definition ${definition}`);
  return (value: unknown) => validate(value) === true;
}

describe("schema/host-protocol.schema.json", () => {
  it(
    "is what scripts/host-schema.mjs generates from the protocol's types now",
    async () => {
      const fresh = await hostProtocolSchemaText();
      expect(
        committed() === fresh,
        "schema/host-protocol.schema.json is stale: run `npm run schema:host` and commit the file",
      ).toBe(true);
    },
    GENERATE_MS,
  );

  it("has the definitions a client starts from, each command's and each success line's", () => {
    const { definitions } = JSON.parse(committed()) as { definitions: Record<string, unknown> };
    for (const name of ["HostCommand", "HostOutput", "HostResponse", "HostEvent", "HostSessionInfo"])
      expect(definitions, name).toHaveProperty([name]);
    for (const name of ["HostCommand.open_session", "HostCommand.prompt", "HostSuccessResponse.get_state"])
      expect(definitions, name).toHaveProperty([name]);
  });

  it("accepts pi's commands with or without a sessionId, and host mode's own", () => {
    const isCommand = validator("HostCommand");
    expect(isCommand({ type: "prompt", message: "hi" })).toBe(true);
    expect(isCommand({ id: "1", type: "prompt", message: "hi", sessionId: "abc" })).toBe(true);
    expect(isCommand({ type: "open_session", model: "demo/demo-1", thinkingLevel: "low" })).toBe(true);
    expect(isCommand({ type: "close_session", sessionId: "abc" })).toBe(true);
  });

  it("refuses a command of no known type, one lacking a field, and close_session without its sessionId", () => {
    const isCommand = validator("HostCommand");
    expect(isCommand({ type: "no_such_command" })).toBe(false);
    expect(isCommand({ type: "prompt" })).toBe(false);
    expect(isCommand({ type: "prompt", message: "" })).toBe(false);
    expect(isCommand({ type: "open_session", thinkingLevel: "loud" })).toBe(false);
    expect(isCommand({ type: "close_session" })).toBe(false);
  });

  it("refuses an event without seq or sessionId, and accepts it with both", () => {
    const isOutput = validator("HostOutput");
    const event = { type: "agent_start" };
    expect(isOutput({ ...event, sessionId: "abc", seq: 1 })).toBe(true);
    expect(isOutput({ ...event, sessionId: "abc" })).toBe(false);
    expect(isOutput({ ...event, seq: 1 })).toBe(false);
  });

  it("checks a custom message (the generator's loose part) for its role only", () => {
    const isMessage = validator("AgentMessage");
    expect(isMessage({ role: "bashExecution", command: "ls" })).toBe(true);
    expect(isMessage({ command: "ls" })).toBe(false);
  });

  it("refuses an event without a type (pi's forwarded events are checked for the envelope and type only)", () => {
    const isEvent = validator("HostEvent");
    expect(isEvent({ type: "turn_start", sessionId: "abc", seq: 2 })).toBe(true);
    expect(isEvent({ sessionId: "abc", seq: 2 })).toBe(false);
  });

  it("holds a success line's data to its command's: get_state needs a state, prompt has none", () => {
    const isResponse = validator("HostResponse");
    const ok = { type: "response", success: true, sessionId: "abc" };
    expect(isResponse({ ...ok, command: "prompt" })).toBe(true);
    expect(isResponse({ ...ok, command: "prompt", data: { anything: 1 } })).toBe(false);
    expect(isResponse({ ...ok, command: "get_state" })).toBe(false);
    expect(isResponse({ ...ok, command: "get_state", data: { isIdle: true } })).toBe(false);
    expect(isResponse({ ...ok, command: "list_sessions", data: { sessions: [] } })).toBe(true);
    expect(isResponse({ ...ok, command: "no_such_command" })).toBe(false);
    expect(isResponse({ type: "response", command: "no_such_command", success: false, error: "unknown" })).toBe(true);
    expect(isResponse({ type: "response", command: "parse", success: false })).toBe(false);
  });
});
