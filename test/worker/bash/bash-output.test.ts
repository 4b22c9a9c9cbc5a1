/**
 * A command's output kept bounded in the worker (pi's limits: the last 2000 lines or 50 KiB, the
 * whole of it in a temp file beyond that), fed as a pipe feeds it: in chunks.
 */
import { readFileSync, rmSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { BashOutput, OUTPUT_LIMITS, tailOf } from "../../../src/worker/bash/bash-output.js";

const files: string[] = [];
afterEach(() => {
  for (const file of files.splice(0)) rmSync(file, { force: true });
});

/** `bytes` bytes of 100-byte lines (99 letters and a newline): the byte limit is reached before the line limit. */
function lines(bytes: number, letter: string): Buffer {
  return Buffer.from(`${letter.repeat(99)}\n`.repeat(Math.ceil(bytes / 100)).slice(0, bytes));
}

async function finish(output: BashOutput) {
  const result = await output.finish();
  if (result.fullOutputPath !== undefined) files.push(result.fullOutputPath);
  return result;
}

describe("BashOutput", () => {
  it("removes ANSI escapes, carriage returns and control characters, keeping tabs and newlines", async () => {
    const output = new BashOutput();
    output.push(Buffer.from("\u001b[31mred\u001b[0m\tend\r\n\u0007bell\u001b]0;title\u0007\n"));
    expect(await finish(output)).toEqual({ output: "red\tend\nbell\n", truncated: false });
  });

  it("regression: a short last read after a long output still reports truncated and keeps the last 50 KiB", async () => {
    // Two full pipe reads, then a short one: dropping old reads down to the short one alone lost
    // most of the tail and reported the output as complete.
    const output = new BashOutput();
    output.push(lines(65_500, "a"));
    output.push(lines(65_500, "b"));
    output.push(lines(40_000, "c"));
    const result = await finish(output);
    expect(result.truncated).toBe(true);
    expect(Buffer.byteLength(result.output)).toBeGreaterThan(OUTPUT_LIMITS.maxBytes - 100);
    expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(OUTPUT_LIMITS.maxBytes);
    expect(result.output).toContain(`${"b".repeat(20)}\n${"c".repeat(20)}`);
    expect(readFileSync(result.fullOutputPath as string).length).toBe(65_500 * 2 + 40_000);
  });

  it("over 2000 short lines: the last 2000, and the whole output written to a file", async () => {
    const output = new BashOutput();
    const text = Array.from({ length: 3000 }, (_, i) => `${i + 1}`).join("\n");
    output.push(Buffer.from(text));
    const result = await finish(output);
    expect(result.truncated).toBe(true);
    expect(result.output.split("\n")).toHaveLength(2000);
    expect(result.output.startsWith("1001\n")).toBe(true);
    expect(readFileSync(result.fullOutputPath as string, "utf8")).toBe(text);
  });

  it("a multi-byte character split across two reads arrives whole", async () => {
    const output = new BashOutput();
    const bytes = Buffer.from("é");
    output.push(bytes.subarray(0, 1));
    output.push(bytes.subarray(1));
    expect((await finish(output)).output).toBe("é");
  });
});

describe("tailOf", () => {
  it("keeps the end of a single line longer than the byte limit, cut on a character boundary", () => {
    const line = `${"é".repeat(OUTPUT_LIMITS.maxBytes)}z`;
    const { text, truncated } = tailOf(line);
    expect(truncated).toBe(true);
    expect(text.endsWith("éz")).toBe(true);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(OUTPUT_LIMITS.maxBytes);
    expect(text.includes("\ufffd")).toBe(false);
  });
});
