/**
 * The HTML export's page (pi's export_html) as text: failed attempts and their retry marked, tool
 * calls with arguments and their results, every transcript text escaped, nothing to load. The
 * browser test (test/main/rpc/export-html.browser.test.ts) renders a real one.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import { writeSessionHtml } from "../../../src/main/session/commands/session-html.js";
import { sessionStats } from "../../../src/main/session/state/session-stats.js";
import { tempDir } from "../../fixtures/bounded.js";
import { assistantMessage } from "../../fixtures/messages.js";
import { mockModel } from "../../fixtures/models.mjs";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const user = (text: string): AgentMessage => ({ role: "user", content: [{ type: "text", text }], timestamp: 0 });

async function page(history: AgentMessage[]): Promise<string> {
  const model = mockModel(1);
  const stats = sessionStats({ id: "s1", sessionFile: undefined, model, history, messages: history });
  const path = join(tempDir(cleanups), "out.html");
  await writeSessionHtml({ id: "s1", sessionFile: undefined, sessionName: "a <b> name", model, history, stats }, path);
  return readFileSync(path, "utf8");
}

describe("session HTML export", () => {
  it("marks failed attempts and the retry after them, shows tool calls and results, and escapes every text", async () => {
    const call: AssistantMessage = {
      ...assistantMessage("toolUse", undefined, "let me look"),
      content: [{ type: "toolCall", id: "c1", name: "read_file", arguments: { path: "</pre><script>x()</script>" } }],
    };
    const html = await page([
      user("<script>alert(1)</script> & more"),
      assistantMessage("error", "503 <overloaded>"),
      assistantMessage("error", "429 rate limit"),
      call,
      {
        role: "toolResult",
        toolCallId: "c1",
        toolName: "read_file",
        content: [{ type: "text", text: "<img src=x onerror=y>" }],
        isError: false,
        timestamp: 0,
      },
      assistantMessage("stop", undefined, "done"),
    ]);
    expect(html).toContain("&#60;script&#62;alert(1)&#60;/script&#62; &#38; more");
    expect(html).not.toMatch(/<script|<img/i);
    expect(html).toContain("Failed attempt 1");
    expect(html).toContain("Failed attempt 2");
    expect(html).toContain("503 &#60;overloaded&#62;");
    expect(html).toContain("Retry after 2 failed attempts");
    expect(html).toContain("Tool call <code>read_file</code>");
    expect(html).toContain("&#60;/pre&#62;&#60;script&#62;x()&#60;/script&#62;");
    expect(html).toContain("Tool result: read_file");
    expect(html).toContain("<title>a &#60;b&#62; name</title>");
    // Nothing to load: the policy forbids every fetch, and the page names no URL.
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`);
    expect(html).not.toMatch(/<(link|img|iframe)\b|\s(src|href)="/i);
  });
});
