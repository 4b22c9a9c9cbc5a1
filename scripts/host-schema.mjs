// Writes schema/host-protocol.schema.json: the JSON Schema (draft-07) of `lifeline --mode host`'s
// protocol, generated from src/main/rpc/host/host-protocol.ts, so that it cannot drift from the code.
// Run `node scripts/host-schema.mjs` after changing a protocol type; test/scripts/host-schema.test.ts
// fails until the committed file matches a fresh generation. Needs no build and no network.
//
// Where each part comes from:
// - commands: the zod schemas the host validates with (`hostCommandSchemas`), by zod's own
//   `z.toJSONSchema` (the input side: what a client sends); pi's commands get the envelope's
//   optional `sessionId` (`envelopeSchema`), as the host reads it from every command;
// - responses and events: the TypeScript types, by ts-json-schema-generator. Its conditional types
//   are unreliable (`[T] extends [undefined] ? … : …` came out as the same branch for every T), so
//   the per-command success lines are put together here from generated parts, by the rule of
//   `HostSuccessResponse`: the fields of `HostErrorResponse` but `error`, `command` the command's
//   type, `success: true`, and `data` as `HostResponseData[type]`, required unless that is
//   `undefined` (which the generator writes as an optional `{"not": {}}`: no `data` at all).
// - one documented loose part: pi's `AgentMessage` is `Message | CustomAgentMessages[keyof …]`,
//   and lifeline adds its custom messages (bashExecution, compactionSummary) by declaration merging,
//   which the generator does not follow (it writes `{}`, any value). `customMessages` puts in their
//   place "an object with a string `role`", said in a `$comment` in the file.
// - a second one: pi's agent events reach `SessionEvent` as `Exclude<AgentEvent, …>`
//   (src/shared/events.ts, ForwardedAgentEvent), a conditional type the generator writes as `{}`;
//   so agent_start, turn_*, message_start/update and tool_execution_start/update are checked for
//   the envelope and a string `type` only (`forwardedAgentEvents`, with a `$comment` in the file).
//   agent_end, message_end and tool_execution_end are lifeline's own types and fully spelled out.
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createJiti } from "jiti";
import { createGenerator } from "ts-json-schema-generator";
import * as z from "zod";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const PROTOCOL = "src/main/rpc/host/host-protocol.ts";

/** Where the schema is committed (and shipped: package.json `exports["./host-protocol.schema.json"]`). */
export const SCHEMA_PATH = join(ROOT, "schema", "host-protocol.schema.json");

/** The TypeScript types generated as they are; everything else they reference comes along. */
const GENERATED_TYPES = ["HostEvent", "HostErrorResponse", "HostResponseData", "HostSessionInfo"];

const ref = (name) => ({ $ref: `#/definitions/${name}` });

/** One definition per command, `HostCommand.<type>`, from the schemas the host parses with. */
async function commandDefinitions() {
  const jiti = createJiti(import.meta.url, { fsCache: false });
  const { envelopeSchema, hostCommandSchemas, isHostOnlyCommandType } = await jiti.import(join(ROOT, PROTOCOL));
  const definitions = {};
  for (const [type, schema] of Object.entries(hostCommandSchemas)) {
    const enveloped = isHostOnlyCommandType(type) ? schema : schema.extend(envelopeSchema.shape);
    const { $schema: _, ...json } = z.toJSONSchema(enveloped, { target: "draft-7", io: "input" });
    definitions[`HostCommand.${type}`] = json;
  }
  return definitions;
}

/** The definitions of GENERATED_TYPES and of every type they reference, from one TypeScript program. */
function typeDefinitions() {
  const generator = createGenerator({
    path: join(ROOT, PROTOCOL),
    tsconfig: join(ROOT, "tsconfig.json"),
    type: GENERATED_TYPES[0],
    expose: "export",
    topRef: true,
    jsDoc: "extended",
    skipTypeCheck: true,
    // As pi's clients are told: a field a later version adds must not fail an older client's check.
    additionalProperties: true,
  });
  const definitions = {};
  for (const type of GENERATED_TYPES) Object.assign(definitions, generator.createSchema(type).definitions);
  return definitions;
}

/** `HostSuccessResponse` per command (see the file's comment), in HostResponseData's order. */
function successDefinitions(types) {
  const { error: _, ...fields } = types.HostErrorResponse.properties;
  const data = types.HostResponseData;
  const definitions = {};
  for (const [command, dataSchema] of Object.entries(data.properties)) {
    definitions[`HostSuccessResponse.${command}`] = {
      type: "object",
      properties: {
        ...fields,
        command: { type: "string", const: command },
        success: { type: "boolean", const: true },
        data: dataSchema,
      },
      required: ["type", "command", "success", ...(data.required?.includes(command) ? ["data"] : [])],
    };
  }
  return definitions;
}

/** The loose branch of AgentMessage (see the file's comment), only where the generator left `{}`. */
function customMessages(types) {
  const branches = types.AgentMessage?.anyOf ?? [];
  const at = branches.findIndex((branch) => Object.keys(branch).length === 0);
  if (at < 0) return;
  branches[at] = {
    $comment:
      "pi's custom messages (lifeline's bashExecution and compactionSummary), added by declaration merging, which the schema generator does not follow: only their `role` is checked.",
    type: "object",
    properties: { role: { type: "string" } },
    required: ["role"],
  };
}

/** The loose branch of HostEvent (see the file's comment): an event with no `type` gets a string one. */
function forwardedAgentEvents(types) {
  for (const branch of types.HostEvent?.anyOf ?? []) {
    if (branch.type !== "object" || branch.properties?.type !== undefined) continue;
    branch.$comment =
      "pi's agent events other than agent_end, message_end and tool_execution_end (agent_start, turn_start, turn_end, message_start, message_update, tool_execution_start, tool_execution_update): the schema generator cannot evaluate the Exclude<AgentEvent, …> they come through, so only the envelope and a string `type` are checked.";
    branch.properties = { ...branch.properties, type: { type: "string" } };
    branch.required = [...(branch.required ?? []), "type"];
  }
}

/** The whole schema, as an object. */
export async function hostProtocolSchema() {
  const commands = await commandDefinitions();
  const types = typeDefinitions();
  customMessages(types);
  forwardedAgentEvents(types);
  const successes = successDefinitions(types);
  const { HostResponseData: _, ...kept } = types;
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    title: "lifeline --mode host",
    description: `The protocol of \`lifeline --mode host\` (docs/rpc.md): what a client sends (HostCommand) and what it reads (HostOutput), one JSON object per line. Generated by scripts/host-schema.mjs from ${PROTOCOL}; do not edit.`,
    definitions: {
      HostCommand: {
        description: "Any command a client may send: pi's (each with an optional `sessionId`) and host mode's own.",
        oneOf: Object.keys(commands).map(ref),
      },
      HostOutput: {
        description: "Anything host mode writes to a connection.",
        anyOf: [ref("HostResponse"), ref("HostEvent")],
      },
      HostResponse: {
        description: "A response line: on success, `command` names the command and `data` is that command's.",
        anyOf: [ref("HostSuccessResponse"), ref("HostErrorResponse")],
      },
      HostSuccessResponse: {
        description: "The line answering a command that succeeded, discriminated by `command`.",
        oneOf: Object.keys(successes).map(ref),
      },
      ...commands,
      ...successes,
      ...kept,
    },
  };
}

/** The schema as the committed file holds it. */
export async function hostProtocolSchemaText() {
  return `${JSON.stringify(await hostProtocolSchema(), null, 2)}\n`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  writeFileSync(SCHEMA_PATH, await hostProtocolSchemaText());
  process.stderr.write(`host-schema: wrote ${SCHEMA_PATH}\n`);
}
