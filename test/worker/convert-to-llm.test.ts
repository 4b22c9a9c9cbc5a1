import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { fauxAssistantMessage } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { bashExecutionMessage } from "../../src/shared/bash/bash-message.js";
import { convertToLlm } from "../../src/worker/convert-to-llm.js";

const user = (text: string): AgentMessage => ({ role: "user", content: text, timestamp: 1 });

describe("convertToLlm", () => {
  it("B3: drops failed assistant messages and keeps the user messages around them separate, as pi sends them (regression: they were merged into one)", () => {
    const failed = fauxAssistantMessage([], { stopReason: "error", errorMessage: "503" });
    const out = convertToLlm([user("first"), failed, user("second")]);
    expect(out).toEqual([user("first"), user("second")]);
  });

  it("keeps a normal conversation as it is", () => {
    const answer = fauxAssistantMessage("hi");
    const messages = [user("a"), answer, user("b")];
    expect(convertToLlm(messages)).toEqual(messages);
  });

  it("drops aborted assistant messages too", () => {
    const aborted = fauxAssistantMessage("partial", { stopReason: "aborted" });
    expect(convertToLlm([user("a"), aborted]).map((m) => m.role)).toEqual(["user"]);
  });

  it("shows each command the client ran as a user message of its own in pi's wording, before the prompt's (regression: one merged user message)", () => {
    const ran = (command: string, output: string, exitCode: number) =>
      bashExecutionMessage(command, { output, exitCode, cancelled: false, truncated: false }, 1, false);
    const out = convertToLlm([ran("make", "boom", 2), ran("ls", "", 0), user("why?")]);
    expect(out).toEqual([
      {
        role: "user",
        content: [{ type: "text", text: "Ran `make`\n```\nboom\n```\n\nCommand exited with code 2" }],
        timestamp: 1,
      },
      { role: "user", content: [{ type: "text", text: "Ran `ls`\n(no output)" }], timestamp: 1 },
      user("why?"),
    ]);
  });

  it("leaves out a command run with excludeFromContext, and says when one was cancelled or truncated", () => {
    const hidden = bashExecutionMessage(
      "secret",
      { output: "x", exitCode: 0, cancelled: false, truncated: false },
      1,
      true,
    );
    expect(convertToLlm([hidden, user("a")]).map((m) => m.content)).toEqual(["a"]);
    const cut = bashExecutionMessage(
      "yes",
      { output: "", exitCode: undefined, cancelled: true, truncated: true, fullOutputPath: "/tmp/f.log" },
      1,
      false,
    );
    expect(convertToLlm([cut])[0]).toMatchObject({
      content: [
        {
          type: "text",
          text: "Ran `yes`\n(no output)\n\n(command cancelled)\n\n[Output truncated. Full output: /tmp/f.log]",
        },
      ],
    });
  });
});
