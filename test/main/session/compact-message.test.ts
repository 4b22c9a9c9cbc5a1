/**
 * compactMessage as a unit: the copy a session keeps of a message from its worker is the same
 * data (keys, order, values, `undefined` ones and prototypes included), the same copy for the same
 * message, shares the repeating short fields across messages, and keeps whole what it cannot copy
 * faithfully (a cycle, an own `__proto__` key, an array with holes or extra properties).
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import { describe, expect, it } from "vitest";
import { compactMessage } from "../../../src/main/session/runs/compact-message.js";
import { assistantMessage } from "../../fixtures/messages.js";

describe("compactMessage", () => {
  it("copies a cloned reply to the same data, keys in the same order, undefined fields kept", () => {
    // An undefined field, as structured clone carries it (pi's types do not allow one).
    const reply = structuredClone({
      ...assistantMessage("stop", undefined, "hello"),
      responseId: undefined,
    }) as unknown as AgentMessage;
    const copy = compactMessage(reply);
    expect(copy).not.toBe(reply);
    expect(copy).toStrictEqual(reply);
    expect(Object.keys(copy)).toEqual(Object.keys(reply));
    expect(Object.hasOwn(copy, "responseId")).toBe(true);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(reply));
  });

  it("gives back the same copy for the same message, so a batch's identities hold", () => {
    const reply = structuredClone(assistantMessage("stop", undefined, "again"));
    expect(compactMessage(reply)).toBe(compactMessage(reply));
  });

  it("keeps an object reached twice inside a message shared in the copy", () => {
    const part = { type: "text" as const, text: "twice" };
    const message = { role: "user", content: [part, part], timestamp: 1 } as AgentMessage;
    const copy = compactMessage(message) as { content: object[] };
    expect(copy.content[0]).toBe(copy.content[1]);
    expect(copy.content[0]).not.toBe(part);
  });

  it("keeps whole a message with a cycle", () => {
    const details: Record<string, unknown> = { name: "loop" };
    details.self = details;
    const message = {
      role: "toolResult",
      toolCallId: "c1",
      toolName: "t",
      content: [],
      details,
      isError: false,
      timestamp: 1,
    } as AgentMessage;
    expect(compactMessage(message)).toBe(message);
  });

  it("keeps as they are an object with an own __proto__ key and arrays with holes or extra properties", () => {
    const odd = JSON.parse('{"__proto__": {"x": 1}, "y": 2}') as object;
    const holes = [1, 2, 3];
    delete holes[1];
    const extra = Object.assign([1, 2], { note: "kept" });
    const message = { role: "user", content: [], timestamp: 1, odd, holes, extra } as unknown as AgentMessage;
    const copy = compactMessage(message) as unknown as { odd: object; holes: unknown[]; extra: unknown[] };
    expect(copy.odd).toBe(odd);
    expect(copy.holes).toBe(holes);
    expect(copy.extra).toBe(extra);
  });

  it("the role, API, provider, model and stop reason of every copy are one shared string each", () => {
    // Equal strings are indistinguishable in JS; what the sharing buys is measured by bench (d).
    const a = compactMessage(structuredClone(assistantMessage("stop", undefined, "one")));
    const b = compactMessage(structuredClone(assistantMessage("stop", undefined, "two")));
    expect([a.role, a.api, a.provider, a.model, a.stopReason]).toEqual([
      b.role,
      b.api,
      b.provider,
      b.model,
      b.stopReason,
    ]);
  });
});
