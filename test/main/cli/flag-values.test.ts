/**
 * The value parsers every flag uses (src/main/cli/flag-values.ts): ports, counts, shares, choices;
 * a refusal is ERR_INVALID_OPTIONS naming the flag. (Durations: groups/load-flags.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { count, oneOf, port, share } from "../../../src/main/cli/flag-values.js";

describe("flag values", () => {
  it("B9: a port is 0 to 65535 (--metrics-port, --port); anything else is refused naming the flag", () => {
    expect(port("0", "--metrics-port")).toBe(0);
    expect(port("9464", "--metrics-port")).toBe(9464);
    for (const bad of ["", "-1", "65536", "12.5", "port"]) {
      expect(() => port(bad, "--metrics-port")).toThrow(
        expect.objectContaining({ code: "ERR_INVALID_OPTIONS", message: expect.stringContaining("--metrics-port") }),
      );
    }
  });

  it("a count is a whole number from 1 to its maximum", () => {
    expect(count(10)("10", "--n")).toBe(10);
    for (const bad of ["0", "11", "1.5", "abc", ""]) expect(() => count(10)(bad, "--n")).toThrow(/--n/);
  });

  it("a share is a fraction or a percentage the flag accepts", () => {
    const level = share((value) => value > 0 && value < 1, "a level in (0, 1)");
    expect(level("0.95", "--confidence")).toBe(0.95);
    expect(level("90%", "--confidence")).toBeCloseTo(0.9, 12);
    for (const bad of ["1", "0", "95", "x%", ""]) expect(() => level(bad, "--confidence")).toThrow(/--confidence/);
  });

  it("a choice is one of its values, and the refusal lists them", () => {
    expect(oneOf(["drop", "delay"] as const)("delay", "--on-cap")).toBe("delay");
    expect(() => oneOf(["drop", "delay"] as const)("wait", "--on-cap")).toThrow(
      /--on-cap "wait" must be one of: drop, delay/,
    );
  });
});
