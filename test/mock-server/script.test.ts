/**
 * The mock server's script: shorthands, defaults, validation errors that name the field, JSONC
 * files, and the step picker's cursors and seeded fault rolls. No HTTP here.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_REPLY, loadMockScript, MockServerError, parseMockScript } from "../../src/mock-server/index.js";
import { wordTokens } from "../../src/mock-server/model-request.js";
import { StepPicker } from "../../src/mock-server/script.js";

function errorOf(fn: () => unknown): MockServerError {
  try {
    fn();
  } catch (error) {
    if (error instanceof MockServerError) return error;
    throw error;
  }
  throw new Error("expected a MockServerError");
}

function tempFile(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "lifeline-mock-")), name);
  writeFileSync(path, text);
  return path;
}

describe("parseMockScript", () => {
  it("applies defaults to an empty script", () => {
    expect(parseMockScript(undefined)).toEqual({
      reply: DEFAULT_REPLY,
      tokenDelayMs: 0,
      conversations: [],
      faults: [],
      seed: 0,
    });
  });

  it("expands shorthands: a number is an error status, a string is a step kind with defaults", () => {
    const script = parseMockScript({
      conversations: [
        { match: "x", steps: [503, "cut", "stall", "ok", { type: "error", status: 429, retryAfter: 2 }] },
      ],
      faults: [{ probability: 0.5, step: "reset" }],
    });
    expect(script.conversations[0]?.steps).toEqual([
      { type: "error", status: 503 },
      { type: "cut", afterTokens: 3 },
      { type: "stall", afterTokens: 0 },
      { type: "ok" },
      { type: "error", status: 429, retryAfter: 2 },
    ]);
    expect(script.faults[0]?.step).toEqual({ type: "reset" });
    expect(parseMockScript(script)).toEqual(script);
  });

  it("refuses an unknown step kind, naming the field and the allowed kinds", () => {
    const error = errorOf(() =>
      parseMockScript({ conversations: [{ match: "a", steps: ["ok", "explode"] }] }, "f.jsonc"),
    );
    expect(error.code).toBe("ERR_MOCK_SCRIPT");
    expect(error.message).toContain("f.jsonc");
    expect(error.message).toContain("conversations.0.steps.1.type");
    expect(error.message).toContain('"explode"');
    expect(error.message).toContain('"context_overflow"');
  });

  it("refuses probabilities that add up to more than 1", () => {
    const error = errorOf(() =>
      parseMockScript({
        faults: [
          { probability: 0.6, step: 503 },
          { probability: 0.5, step: "cut" },
        ],
      }),
    );
    expect(error.code).toBe("ERR_MOCK_SCRIPT");
    expect(error.message).toContain("faults");
  });

  it("refuses a status outside 400-599, a misspelt key and a step of the wrong type", () => {
    const status = errorOf(() => parseMockScript({ conversations: [{ match: "a", steps: [200] }] }));
    expect(status.code).toBe("ERR_MOCK_SCRIPT");
    expect(status.message).toContain("conversations.0.steps.0.status");
    expect(
      errorOf(() => parseMockScript({ faults: [{ probability: 0.1, step: { type: "cut", after: 2 } }] })).message,
    ).toContain("faults.0.step");
    expect(errorOf(() => parseMockScript({ conversations: [{ match: "a", steps: [true] }] })).message).toContain(
      "conversations.0.steps.0",
    );
    expect(errorOf(() => parseMockScript({ seeds: 1 })).message).toContain("seeds");
  });

  it("validates stream_error steps: defaults, a misspelt key and a bad field named", () => {
    expect(parseMockScript({ faults: [{ probability: 1, step: "stream_error" }] }).faults[0]?.step).toEqual({
      type: "stream_error",
      afterTokens: 0,
    });
    const misspelt = errorOf(() =>
      parseMockScript({ conversations: [{ match: "a", steps: [{ type: "stream_error", error_type: "x" }] }] }),
    );
    expect(misspelt.code).toBe("ERR_MOCK_SCRIPT");
    expect(misspelt.message).toContain("unknown key(s) error_type");
    expect(misspelt.message).toContain("errorType");
    const empty = errorOf(() =>
      parseMockScript({ conversations: [{ match: "a", steps: [{ type: "stream_error", errorType: "" }] }] }),
    );
    expect(empty.message).toContain("conversations.0.steps.0.errorType");
    const negative = errorOf(() =>
      parseMockScript({ conversations: [{ match: "a", steps: [{ type: "stream_error", afterTokens: -1 }] }] }),
    );
    expect(negative.message).toContain("conversations.0.steps.0.afterTokens");
  });
});

describe("loadMockScript", () => {
  it("reads JSONC with comments and trailing commas", async () => {
    const path = tempFile(
      "faults.jsonc",
      `{
        // the default answer
        "reply": "hi there",
        "faults": [{ "probability": 0.25, "step": 503 },],
      }`,
    );
    const script = await loadMockScript(path);
    expect(script.reply).toBe("hi there");
    expect(script.faults).toEqual([{ probability: 0.25, step: { type: "error", status: 503 } }]);
  });

  it("names the file and line:column of a syntax error", async () => {
    const path = tempFile("broken.jsonc", '{\n  "reply": "x"\n  "seed": 1\n}');
    const error = await loadMockScript(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MockServerError);
    expect((error as MockServerError).code).toBe("ERR_MOCK_SCRIPT");
    expect((error as MockServerError).message).toContain(`${path}:3:3`);
  });

  it("names the file of a validation error and of a missing file", async () => {
    const path = tempFile("bad.json", '{ "tokenDelayMs": -1 }');
    await expect(loadMockScript(path)).rejects.toMatchObject({
      code: "ERR_MOCK_SCRIPT",
      message: expect.stringContaining(`${path}: tokenDelayMs`),
    });
    await expect(loadMockScript(join(tmpdir(), "no-such-mock-script.jsonc"))).rejects.toMatchObject({
      code: "ERR_MOCK_SCRIPT",
      message: expect.stringContaining("no-such-mock-script.jsonc"),
    });
  });
});

describe("StepPicker", () => {
  it("rateLimit lets `requests` through per window and answers the rest 429 with the time left", () => {
    const picker = new StepPicker(
      parseMockScript({ rateLimit: { requests: 2, windowMs: 1000 }, conversations: [{ match: "s", steps: [503] }] }),
    );
    expect(picker.next("s1", 0, 0)).toEqual({ type: "error", status: 503 });
    expect(picker.next("s2", 0, 10)).toEqual({ type: "error", status: 503 });
    // Over the limit: a 429 that names the rest of the window, and s3's scripted step is kept.
    expect(picker.next("s3", 0, 250)).toEqual({ type: "error", status: 429, retryAfterMs: 750, retryAfter: 1 });
    expect(picker.next("x", 0, 999)).toEqual({ type: "error", status: 429, retryAfterMs: 1, retryAfter: 1 });
    expect(picker.next("s3", 0, 1000)).toEqual({ type: "error", status: 503 });
    expect(picker.next("x", 0, 1001)).toEqual({ type: "ok" });
    expect(picker.next("x", 0, 1002)).toMatchObject({ status: 429, retryAfterMs: 998 });
  });

  it("keeps one cursor per conversation key even when keys share an entry", () => {
    const picker = new StepPicker(parseMockScript({ conversations: [{ match: "job", steps: [500, 502] }] }));
    const kinds = (key: string) => {
      const step = picker.next(key);
      return step.type === "error" ? step.status : step.type;
    };
    expect([kinds("job a"), kinds("job b"), kinds("job a"), kinds("job a"), kinds("other")]).toEqual([
      500,
      500,
      502,
      "ok",
      "ok",
    ]);
  });

  it("answers a request over contextWindow with context_overflow, using no scripted step", () => {
    const picker = new StepPicker(
      parseMockScript({ contextWindow: 100, conversations: [{ match: "big", steps: [503] }] }),
    );
    expect(picker.next("big", 101).type).toBe("context_overflow");
    expect(picker.next("big", 100).type).toBe("error");
    expect(picker.next("big", 5000).type).toBe("context_overflow");
    expect(picker.next("big", 1).type).toBe("ok");
  });

  it("rolls the same faults for the same seed", () => {
    const rolls = (seed: number) => {
      const picker = new StepPicker(parseMockScript({ seed, faults: [{ probability: 0.4, step: "cut" }] }));
      return Array.from({ length: 200 }, (_, i) => picker.next(`k${i}`).type).join(",");
    };
    expect(rolls(42)).toBe(rolls(42));
    expect(rolls(42)).not.toBe(rolls(43));
    const cuts = rolls(42)
      .split(",")
      .filter((kind) => kind === "cut").length;
    expect(cuts).toBeGreaterThan(50);
    expect(cuts).toBeLessThan(110);
  });
});

describe("wordTokens", () => {
  it("splits text into tokens that join back, and repeats or trims to a count", () => {
    expect(wordTokens("Hello from  the mock")).toEqual(["Hello", " from", "  the", " mock"]);
    expect(wordTokens("one two", 5).join("")).toBe("one two one two one");
    expect(wordTokens("one two three", 2)).toEqual(["one", " two"]);
    expect(wordTokens("", 3)).toEqual([]);
  });
});
