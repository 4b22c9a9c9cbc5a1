/**
 * B7 in the interactive terminal: a resumed session (`lifeline -c`, `--session`) shows what was
 * said before, not an empty screen.
 */
import { fauxAssistantMessage } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { TranscriptView } from "../../../src/main/tui/transcript-view.js";

describe("the transcript of a resumed session (B7)", () => {
  it("B7: shows the earlier user prompts and answers, and nothing for a failed attempt", () => {
    const view = new TranscriptView();
    view.showHistory([
      { role: "user", content: [{ type: "text", text: "earlier question" }], timestamp: 1 },
      { ...fauxAssistantMessage([], { stopReason: "error", errorMessage: "503" }), timestamp: 2 },
      { ...fauxAssistantMessage("earlier answer"), timestamp: 3 },
      { role: "user", content: "second question", timestamp: 4 },
    ]);
    const screen = view.render(80).join("\n");
    expect(screen).toContain("› earlier question");
    expect(screen).toContain("earlier answer");
    expect(screen).toContain("› second question");
    expect(screen).not.toContain("503");
  });
});
