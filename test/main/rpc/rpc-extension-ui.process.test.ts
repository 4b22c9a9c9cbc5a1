/**
 * pi's extension UI sub-protocol in RPC mode, on the real stack: the built CLI in a child process
 * with an extension loaded by `-e`, whose tool (run in the session's worker) asks `confirm` and
 * `select` through `ctx.ui`, and whose `agent_settled` handler (main thread) sends a notice. The
 * model is a small OpenAI-compatible server on 127.0.0.1 that calls the tool, then answers with
 * its result. Every wait is bounded.
 */

import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { RpcClient } from "../../../src/main/rpc/rpc-client.js";
import type { RpcEvent, RpcExtensionUiRequest } from "../../../src/main/rpc/rpc-protocol.js";
import { tempDir, within } from "../../fixtures/bounded.js";
import { mockModelsJson, SSE_HEADERS, sseChunk } from "../../fixtures/models.mjs";
import { type RpcRecord, spawnRpc } from "../../fixtures/rpc-child.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The extension: its tool asks confirm then select (with `UI_TIMEOUT_MS` as their timeout, if set). */
const EXTENSION = `
import { Type } from "typebox";
type Ui = {
  confirm(title: string, message: string, opts?: { timeout?: number }): Promise<boolean>;
  select(title: string, options: string[], opts?: { timeout?: number }): Promise<string | undefined>;
  notify(message: string, type?: string): void;
  setStatus(key: string, text: string | undefined): void;
};
type Ctx = { hasUI: boolean; ui: Ui };
export default function (pi: any): void {
  pi.on("agent_settled", (_event: unknown, ctx: Ctx) => ctx.ui.notify(\`settled hasUI=\${ctx.hasUI}\`, "info"));
  pi.registerTool({
    name: "ask",
    label: "Ask",
    description: "Asks the user",
    parameters: Type.Object({}),
    async execute(_id: string, _params: unknown, _signal: unknown, _onUpdate: unknown, ctx: Ctx) {
      const ms = Number(process.env.UI_TIMEOUT_MS ?? "0");
      const opts = ms > 0 ? { timeout: ms } : undefined;
      const confirmed = await ctx.ui.confirm("Proceed?", "The tool wants to go on", opts);
      const choice = await ctx.ui.select("Pick one", ["Alpha", "Beta"], opts);
      ctx.ui.setStatus("ask", "asked");
      return { content: [{ type: "text", text: \`hasUI=\${ctx.hasUI} confirmed=\${confirmed} choice=\${choice}\` }], details: {} };
    },
  });
}
`;

/** An OpenAI chat-completions server whose model calls the tool `ask`, then repeats the tool's result. */
async function toolModel(): Promise<string> {
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on("end", () => {
      const messages = (JSON.parse(body) as { messages: { role: string; content?: unknown }[] }).messages;
      const last = messages[messages.length - 1];
      res.writeHead(200, SSE_HEADERS);
      if (last?.role === "tool") {
        const text = typeof last.content === "string" ? last.content : JSON.stringify(last.content);
        res.write(sseChunk({ role: "assistant", content: `the tool said: ${text}` }));
        res.write(sseChunk({}, "stop"));
      } else {
        const call = { index: 0, id: "call_1", type: "function", function: { name: "ask", arguments: "{}" } };
        res.write(sseChunk({ role: "assistant", tool_calls: [call] }));
        res.write(sseChunk({}, "tool_calls"));
      }
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A LIFELINE_DIR with models.json for the tool model, and the extension file. */
async function setup(): Promise<{ dir: string; extension: string; models: string }> {
  const url = await toolModel();
  const dir = tempDir(cleanups, "lifeline-rpc-ui-");
  const extension = join(dir, "ask.ts");
  writeFileSync(extension, EXTENSION);
  const models = mockModelsJson(url);
  writeFileSync(join(dir, "models.json"), models);
  writeFileSync(join(dir, "settings.json"), "{}");
  return { dir, extension, models };
}

async function client(env: Record<string, string> = {}): Promise<RpcClient> {
  const { dir, extension } = await setup();
  const rpc = new RpcClient({
    cliPath: CLI,
    cwd: dir,
    env: { LIFELINE_DIR: dir, ...env },
    provider: "mock",
    model: "mock-1",
    args: ["--no-session", "-e", extension],
  });
  cleanups.push(() => within(rpc.stop(), 10_000, "stop()"));
  await within(rpc.start(), 20_000, "start()");
  return rpc;
}

/** The text the tool returned, from its tool_execution_end event. */
function toolText(events: RpcEvent[]): string {
  const end = events.find((event) => event.type === "tool_execution_end") as
    | { result: { content: { text: string }[] } }
    | undefined;
  return end?.result.content.map((block) => block.text).join("") ?? "(no tool_execution_end)";
}

describe("extension UI in RPC mode", () => {
  it("a tool's confirm and select get the client's answers; notices need none", async () => {
    const rpc = await client();
    const requests: RpcExtensionUiRequest[] = [];
    const notified = new Promise<RpcExtensionUiRequest>((resolve) => {
      rpc.onExtensionUiRequest((request) => {
        requests.push(request);
        if (request.method === "notify") resolve(request);
        if (request.method === "confirm") return { confirmed: true };
        if (request.method === "select") return { value: request.options[1] as string };
        return undefined;
      });
    });
    const { events, settled } = await within(rpc.promptAndWait("use the tool"), 20_000, "the prompt");
    expect(settled.stopReason).toBe("stop");
    expect(toolText(events)).toBe("hasUI=true confirmed=true choice=Beta");
    expect(requests.slice(0, 3)).toEqual([
      {
        type: "extension_ui_request",
        id: expect.any(String),
        method: "confirm",
        title: "Proceed?",
        message: "The tool wants to go on",
      },
      {
        type: "extension_ui_request",
        id: expect.any(String),
        method: "select",
        title: "Pick one",
        options: ["Alpha", "Beta"],
      },
      {
        type: "extension_ui_request",
        id: expect.any(String),
        method: "setStatus",
        statusKey: "ask",
        statusText: "asked",
      },
    ]);
    // A handler on the main thread reaches the same UI.
    expect(await within(notified, 5000, "the handler's notify")).toMatchObject({
      method: "notify",
      message: "settled hasUI=true",
      notifyType: "info",
    });
    // UI requests never reach onEvent listeners.
    expect(events.some((event) => (event.type as string) === "extension_ui_request")).toBe(false);
  });

  it("dialogs left unanswered resolve with pi's defaults after their timeout: false and undefined", async () => {
    const rpc = await client({ UI_TIMEOUT_MS: "300" });
    const dialogs: RpcExtensionUiRequest[] = [];
    rpc.onExtensionUiRequest((request) => {
      if (request.method === "confirm" || request.method === "select") dialogs.push(request);
      return undefined;
    });
    const { events } = await within(rpc.promptAndWait("use the tool"), 20_000, "the prompt");
    expect(toolText(events)).toBe("hasUI=true confirmed=false choice=undefined");
    expect(dialogs.map((request) => [request.method, (request as { timeout?: number }).timeout])).toEqual([
      ["confirm", 300],
      ["select", 300],
    ]);
  });

  it("malformed extension_ui_response lines get pi's handling: a parse error answers, unknown ids and missing fields are ignored or defaulted", async () => {
    const { extension, models } = await setup();
    const child = spawnRpc(cleanups, {
      args: ["--no-session", "--provider", "mock", "--model", "mock-1", "-e", extension],
      models,
      settings: {},
    });
    const ready = await child.request({ type: "get_state" }, 20_000);
    expect(ready.success).toBe(true);
    const from = child.records.length;
    child.send({ id: "p", type: "prompt", message: "use the tool" });
    const confirm = await child.waitFor(
      (r) => r.type === "extension_ui_request" && r.method === "confirm",
      "confirm",
      from,
      20_000,
    );
    const before = child.records.length;
    child.send('{"type": "extension_ui_response", "id": \n');
    const parseError = await child.waitFor(
      (r) => r.type === "response" && r.command === "parse",
      "the parse error",
      before,
    );
    expect(parseError.success).toBe(false);
    child.send({ type: "extension_ui_response", value: "no id" });
    child.send({ type: "extension_ui_response", id: "nobody-asked", confirmed: true });
    // The right id with the wrong field: the dialog resolves with its default, false.
    child.send({ type: "extension_ui_response", id: confirm.id, value: "yes" });
    const select = await child.waitFor(
      (r) => r.type === "extension_ui_request" && r.method === "select",
      "select",
      before,
    );
    child.send({ type: "extension_ui_response", id: select.id, cancelled: true });
    const settled = await child.waitFor((r) => r.type === "agent_settled", "agent_settled", before, 20_000);
    expect(settled.stopReason).toBe("stop");
    const end = child.records.find((r, i) => i >= from && r.type === "tool_execution_end") as RpcRecord & {
      result: { content: { text: string }[] };
    };
    expect(end.result.content[0]?.text).toBe("hasUI=true confirmed=false choice=undefined");
    // The bad JSON got its response; the four answers none.
    const responses = child.records.slice(before).filter((r) => r.type === "response" && r.command !== "prompt");
    expect(responses.map((r) => r.command)).toEqual(["parse"]);
    expect(child.stderr()).toContain("matches no open dialog");
    expect((await child.request({ type: "get_state" })).success).toBe(true);
  });
});
