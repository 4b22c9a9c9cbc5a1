/**
 * `--prompts-file` contents (src/main/load/options/prompts-file.ts): prompt lines, conversation lines, and
 * the refusal of a bad line with its file and line number (ERR_INVALID_OPTIONS, exit 2).
 */
import { describe, expect, it } from "vitest";
import { conversationTurn, parsePromptsFile } from "../../../../src/main/load/options/prompts-file.js";

function thrown(run: () => unknown): { code?: string; message: string } {
  try {
    run();
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error("expected a refusal");
}

describe("--prompts-file contents", () => {
  it("a file of prompt lines gives texts used round-robin across the run", () => {
    expect(parsePromptsFile('{"prompt": "a"}\n\n{"prompt": "b", "tag": 1}\n', "p.jsonl")).toEqual({
      promptTexts: ["a", "b"],
    });
  });

  it("a conversation line makes every line a session's conversation; a prompt line is one of one turn", () => {
    const file = '{"turns": ["hello", "use the tool", "thanks"]}\n{"prompt": "alone"}\n';
    expect(parsePromptsFile(file, "c.jsonl")).toEqual({
      conversations: [["hello", "use the tool", "thanks"], ["alone"]],
    });
  });

  it.each([
    ['{"prompt":"a"}\n{"text":"b"}\n', /c\.jsonl:2: each line must be/],
    ['{"prompt":"a"}\n\nnot json\n', /c\.jsonl:3: not JSON/],
    ['{"turns": []}\n', /c\.jsonl:1: /],
    ['{"turns": ["a", ""]}\n', /c\.jsonl:1: /],
    ['{"turns": ["a", 2]}\n', /c\.jsonl:1: /],
    ['{"turns": "a"}\n', /c\.jsonl:1: /],
    ['{"prompt": "a", "turns": ["b"]}\n', /c\.jsonl:1: /],
    ['{"prompt": "a"}\n["a"]\n', /c\.jsonl:2: /],
    ["\n\n", /holds no prompt/],
  ])("a bad line is refused with its line number: %j", (text, message) => {
    const error = thrown(() => parsePromptsFile(text, "c.jsonl"));
    expect(error.code).toBe("ERR_INVALID_OPTIONS");
    expect(error.message).toMatch(message);
  });
});

describe("conversations in a run", () => {
  it("session i plays conversation i modulo their number, turn by turn, starting over past its end", () => {
    const conversations = [["a1", "a2", "a3"], ["b1"]];
    const sent = (session: number) => [0, 1, 2, 3, 4].map((prompt) => conversationTurn(conversations, session, prompt));
    expect(sent(0)).toEqual(["a1", "a2", "a3", "a1", "a2"]);
    expect(sent(1)).toEqual(["b1", "b1", "b1", "b1", "b1"]);
    expect(sent(2)).toEqual(sent(0));
  });
});
