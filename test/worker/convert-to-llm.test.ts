import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { fauxAssistantMessage } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { convertToLlm } from "../../src/worker/convert-to-llm.js";

const user = (text: string): AgentMessage => ({ role: "user", content: text, timestamp: 1 });

describe("convertToLlm", () => {
  it("B3: drops failed assistant messages and merges the user turns that become adjacent", () => {
    const failed = fauxAssistantMessage([], { stopReason: "error", errorMessage: "503" });
    const out = convertToLlm([user("first"), failed, user("second")]);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({
      role: "user",
      content: [
        { type: "text", text: "first" },
        { type: "text", text: "\n\n" },
        { type: "text", text: "second" },
      ],
    });
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
});
