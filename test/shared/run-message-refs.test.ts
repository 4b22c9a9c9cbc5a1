/**
 * run-message-refs.ts both ways, on the events a real pi-agent-core `Agent` emits (pi-ai's faux
 * provider, a tool call and its result, then a text reply), cut into batches at random points.
 * Each batch is structured-cloned as a whole, as posting it does, and the receiver keeps its own
 * copy of each `message_end`'s message, as the host does.
 */
import { Agent, type AgentEvent, type AgentMessage } from "@mariozechner/pi-agent-core";
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider, Type } from "@mariozechner/pi-ai";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunMessageRefs, RunMessages } from "../../src/shared/wire/run-message-refs.js";

type Wire = ReturnType<typeof encode>[number];

let events: AgentEvent[] = [];
let unregister = () => {};

beforeAll(async () => {
  const faux = registerFauxProvider({ api: "refs-test", provider: "refs-test" });
  unregister = faux.unregister;
  faux.setResponses([
    fauxAssistantMessage(fauxToolCall("echo", { text: "ping" }), { stopReason: "toolUse" }),
    fauxAssistantMessage("the tool said ping"),
  ]);
  const agent = new Agent({
    initialState: {
      model: faux.getModel(),
      tools: [
        {
          name: "echo",
          label: "Echo",
          description: "Echoes its text.",
          parameters: Type.Object({ text: Type.String() }),
          execute: async (_id, params) => ({
            content: [{ type: "text", text: (params as { text: string }).text }],
            details: {},
          }),
        },
      ],
    },
  });
  agent.subscribe((event) => void events.push(event));
  await agent.prompt("call the tool");
  // A second run: indexes start again at its agent_start.
  faux.setResponses([fauxAssistantMessage("again")]);
  const first = events;
  events = [];
  await agent.prompt("once more");
  events = [...first, ...events];
});

afterAll(() => unregister());

/** The sender's side: every event in order, the two that repeat messages in wire form. */
function encode(all: AgentEvent[]) {
  const refs = new RunMessageRefs();
  return all.map((event) => {
    refs.note(event);
    if (event.type === "turn_end") return refs.turnEnd(event);
    if (event.type === "agent_end") return refs.agentEnd(event);
    return event;
  });
}

/** The receiver's side; `cuts` splits the wire events into batches, each cloned as one message. */
function decode(wire: Wire[], cuts: number[]) {
  const bounds = [...new Set([0, ...cuts.map((c) => c % (wire.length + 1)), wire.length])].sort((a, b) => a - b);
  const received = bounds.slice(1).flatMap((end, i) => structuredClone(wire.slice(bounds[i], end)));
  const messages = new RunMessages();
  const ended: AgentMessage[] = [];
  const decoded = received.map((event) => {
    if (event.type === "agent_start") messages.started();
    if (event.type === "message_end") {
      const copy = structuredClone(event.message);
      ended.push(copy);
      messages.ended(copy);
      return { ...event, message: copy };
    }
    if (event.type === "turn_end") return messages.turnEnd(event);
    if (event.type === "agent_end") return { type: "agent_end" as const, messages: messages.agentEnd(event) };
    return event;
  });
  return { decoded, ended };
}

describe("turn_end and agent_end on the wire", () => {
  it("the agent's runs have what the test needs: a tool result, two turns, two runs", () => {
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === "agent_end")).toHaveLength(2);
    expect(types.filter((t) => t === "turn_end")).toHaveLength(3);
    const turnEnd = events.find((e) => e.type === "turn_end" && e.toolResults.length > 0);
    expect(turnEnd).toBeDefined();
  });

  it("every message a run ended crosses again as its index only", () => {
    const wire = encode(events);
    const ends = wire.filter((e) => e.type === "turn_end" || e.type === "agent_end");
    for (const event of ends) {
      const carried = event.type === "turn_end" ? [event.message, ...event.toolResults] : event.messages;
      for (const message of carried) expect(typeof message).toBe("number");
    }
    // The second run counts from 0 again: its user message and its reply.
    expect(ends.at(-1)).toEqual({ type: "agent_end", messages: [0, 1] });
  });

  it("the receiver rebuilds the agent's events, and its message_end copies are the very objects in them, whatever the batches", () => {
    const wire = encode(events);
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 8 }), (cuts) => {
        const { decoded, ended } = decode(wire, cuts);
        expect(decoded).toStrictEqual(events);
        for (const event of decoded) {
          if (event.type === "turn_end") {
            expect(ended).toContain(event.message);
            for (const result of event.toolResults) expect(ended).toContain(result);
          }
          if (event.type === "agent_end") for (const message of event.messages) expect(ended).toContain(message);
        }
      }),
      { numRuns: 50 },
    );
  });

  it("a message no message_end carried (a thrown run's failure) crosses whole", () => {
    const refs = new RunMessageRefs();
    const failure = fauxAssistantMessage("", { stopReason: "error", errorMessage: "boom" });
    refs.note({ type: "agent_start" });
    expect(refs.agentEnd({ type: "agent_end", messages: [failure] })).toEqual({
      type: "agent_end",
      messages: [failure],
    });
  });
});
