/**
 * What reaches the model when user messages follow one another, side by side with pi 0.73.1
 * (installed outside the repository, LIFELINE_PI_PACKAGE; see test/fixtures/pi-package.ts): the
 * built CLI and pi in RPC mode, each against its own OpenAI chat-completions server on 127.0.0.1
 * that keeps the requests. Commands run with `bash` before a prompt, and steering and follow-ups
 * queued in `all` mode, are separate user messages in pi's requests, and must be in lifeline's.
 * The APIs that refuse adjacent user turns get them merged in their payload only
 * (test/worker/session/alternating-turns.test.ts). Run `npm run build` first.
 */
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../fixtures/bounded.js";
import {
  type HoldingModel,
  holdingModel,
  promptAndHold,
  release,
  type SentMessage,
  writeHoldExtension,
} from "../../fixtures/held-tool.js";
import { spawnPiRpc } from "../../fixtures/pi-rpc-child.js";
import { type RpcChild, spawnRpc } from "../../fixtures/rpc-child.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const MODEL = ["--provider", "mock", "--model", "mock-1"];

/** lifeline's child and pi's, each on a holding model of its own, with the `hold` extension. */
async function sideBySide(): Promise<{ lifeline: [RpcChild, HoldingModel]; pi: [RpcChild, HoldingModel] }> {
  const extension = writeHoldExtension(tempDir(cleanups, "lifeline-hold-"));
  const ours = await holdingModel(cleanups);
  const theirs = await holdingModel(cleanups);
  const args = [...MODEL, "-e", extension];
  const lifeline = spawnRpc(cleanups, { models: ours.models, args: ["--no-session", ...args] });
  const pi = spawnPiRpc(cleanups, { models: theirs.models, args, tools: "--no-builtin-tools" });
  return { lifeline: [lifeline, ours], pi: [pi, theirs] };
}

/** A request's messages without the system prompt (each side has its own), as role and text. */
function conversation(messages: SentMessage[]): [string, string][] {
  return messages
    .filter((message) => message.role !== "system")
    .map((message) => {
      const { content } = message;
      const text = Array.isArray(content)
        ? content.map((part: { text?: string }) => part.text ?? "").join("")
        : typeof content === "string"
          ? content
          : message.tool_calls !== undefined
            ? "(tool call)"
            : "";
      return [message.role, text];
    });
}

/** Resolves once the child's run is over: pi's last `agent_end` has no `agent_settled` after it in lifeline's protocol. */
async function runOver(child: RpcChild, from: number, end: "agent_end" | "agent_settled"): Promise<void> {
  await child.waitFor((record) => record.type === end, end, from, 20_000);
}

describe("adjacent user messages on the wire, as pi sends them", () => {
  it("two bash commands and a prompt are three user messages, as in pi (regression: one user message of 5 parts)", async () => {
    const { lifeline, pi } = await sideBySide();
    const run = async ([child, model]: [RpcChild, HoldingModel], end: "agent_end" | "agent_settled") => {
      for (const command of ["echo one", "echo two; exit 3"]) {
        expect(await child.request({ type: "bash", command }, 20_000)).toMatchObject({ success: true });
      }
      const from = child.records.length;
      const held = await promptAndHold(child, "why?");
      release(child, held);
      await runOver(child, from, end);
      return model.requests.map(conversation);
    };
    const [ours, theirs] = await Promise.all([run(lifeline, "agent_settled"), run(pi, "agent_end")]);
    expect(theirs[0]).toEqual([
      ["user", "Ran `echo one`\n```\none\n\n```"],
      ["user", "Ran `echo two; exit 3`\n```\ntwo\n\n```\n\nCommand exited with code 3"],
      ["user", "why?"],
    ]);
    expect(ours).toEqual(theirs);
  });

  it("steering and follow-ups queued in all mode are a user message each, as in pi (regression: merged into one)", async () => {
    const { lifeline, pi } = await sideBySide();
    const run = async ([child, model]: [RpcChild, HoldingModel], end: "agent_end" | "agent_settled") => {
      await child.request({ type: "set_steering_mode", mode: "all" });
      await child.request({ type: "set_follow_up_mode", mode: "all" });
      const from = child.records.length;
      const held = await promptAndHold(child, "use the tool");
      for (const [type, message] of [
        ["steer", "steer one"],
        ["steer", "steer two"],
        ["follow_up", "later one"],
        ["follow_up", "later two"],
      ] as const) {
        expect(await child.request({ type, message })).toMatchObject({ success: true });
      }
      release(child, held);
      await runOver(child, from, end);
      return model.requests.map(conversation);
    };
    const [ours, theirs] = await Promise.all([run(lifeline, "agent_settled"), run(pi, "agent_end")]);
    expect(theirs).toEqual([
      [["user", "use the tool"]],
      [
        ["user", "use the tool"],
        ["assistant", "(tool call)"],
        ["tool", "released"],
        ["user", "steer one"],
        ["user", "steer two"],
      ],
      [
        ["user", "use the tool"],
        ["assistant", "(tool call)"],
        ["tool", "released"],
        ["user", "steer one"],
        ["user", "steer two"],
        ["assistant", "ok"],
        ["user", "later one"],
        ["user", "later two"],
      ],
    ]);
    expect(ours).toEqual(theirs);
  });
});
