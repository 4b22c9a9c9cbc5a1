/**
 * connection-output.ts, host mode's bounded output per connection (flow control),
 * against a fake sink that, like a socket, takes every chunk but answers false while it is "full",
 * until the test drains it. The envelope's rule (host-protocol.ts): each session's events carry
 * `seq` from 1; an event with `coalesced: n` stands for n text or thinking deltas of one content
 * block and carries the last one's `seq`.
 *
 * The property at the end prints fast-check's `{ seed, path }` on failure; `FC_SEED=<seed>
 * FC_PATH=<path> npx vitest run <this file>` replays it (test/fast-check-seed.ts).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type CatchUpReport,
  ConnectionOutput,
  type OutputSink,
} from "../../../../src/main/rpc/host/connection-output.js";
import type { SessionEvent } from "../../../../src/shared/events.js";

/**
 * A sink that takes every chunk and answers false from `fill()` until `drain()`, or once more than
 * `capacity` characters were written since the last drain.
 */
class FakeSink implements OutputSink {
  readonly chunks: string[] = [];
  readonly #capacity: number;
  #taken = 0;
  #full = false;
  #drains: (() => void)[] = [];

  constructor(capacity = Number.POSITIVE_INFINITY) {
    this.#capacity = capacity;
  }

  write(chunk: string): boolean {
    this.chunks.push(chunk);
    this.#taken += chunk.length;
    if (this.#taken > this.#capacity) this.#full = true;
    return !this.#full;
  }

  onceDrain(listener: () => void): void {
    this.#drains.push(listener);
  }

  /** From now on, writes answer false (the buffer is full). */
  fill(): void {
    this.#full = true;
  }

  /** The buffer emptied: writes answer true again and the drain listeners run. */
  drain(): void {
    this.#full = false;
    this.#taken = 0;
    for (const listener of this.#drains.splice(0)) listener();
  }

  get waiting(): number {
    return this.#drains.length;
  }

  /** Every record written so far, parsed. */
  records(): Record<string, unknown>[] {
    const text = this.chunks.join("");
    expect(text === "" || text.endsWith("\n"), "the sink only gets whole lines").toBe(true);
    return text
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

type Kind = "text" | "thinking";

/** An assistant message snapshot whose block `index` holds `text` (earlier blocks empty). */
function snapshot(index: number, kind: Kind, text: string): object {
  const content = Array.from({ length: index + 1 }, (_, i) =>
    i < index
      ? { type: "text", text: "" }
      : kind === "text"
        ? { type: "text", text }
        : { type: "thinking", thinking: text },
  );
  return { role: "assistant", content };
}

/** A text or thinking delta of block `index`, with the message snapshot as the host's events carry it. */
function delta(delta: string, index = 0, kind: Kind = "text", soFar = delta): SessionEvent {
  const message = snapshot(index, kind, soFar);
  return {
    type: "message_update",
    message,
    assistantMessageEvent: { type: `${kind}_delta`, contentIndex: index, delta, partial: message },
  } as unknown as SessionEvent;
}

/** Any other record of a session's stream (not a text or thinking delta). */
function other(type: string, extra: object = {}): SessionEvent {
  return { type, ...extra } as unknown as SessionEvent;
}

function output(sink: FakeSink, maxQueuedBytes?: number) {
  const overflows: number[] = [];
  const caughtUp: CatchUpReport[] = [];
  const out = new ConnectionOutput(sink, maxQueuedBytes === undefined ? {} : { maxQueuedBytes }, {
    overflow: (bytes) => overflows.push(bytes),
    caughtUp: (report) => caughtUp.push(report),
  });
  return { out, overflows, caughtUp };
}

describe("ConnectionOutput while the client keeps up", () => {
  it("writes each record straight through, one line per write, with the session's seq and no coalesced", () => {
    const sink = new FakeSink();
    const { out } = output(sink);
    out.event("s1", other("agent_start"));
    out.event("s1", delta("a"));
    out.event("s1", delta("b", 0, "text", "ab"));
    out.record({ type: "response", command: "prompt", success: true });
    expect(sink.chunks).toHaveLength(4);
    expect(sink.records()).toEqual([
      { type: "agent_start", sessionId: "s1", seq: 1 },
      expect.objectContaining({
        sessionId: "s1",
        seq: 2,
        assistantMessageEvent: expect.objectContaining({ delta: "a" }),
      }),
      expect.objectContaining({
        sessionId: "s1",
        seq: 3,
        assistantMessageEvent: expect.objectContaining({ delta: "b" }),
      }),
      { type: "response", command: "prompt", success: true },
    ]);
    expect(sink.records().some((record) => "coalesced" in record)).toBe(false);
    expect(out.behind).toBe(false);
    expect(out.queuedBytes).toBe(0);
  });

  it("counts seq per session, each from 1", () => {
    const sink = new FakeSink();
    const { out } = output(sink);
    out.event("a", other("agent_start"));
    out.event("b", other("agent_start"));
    out.event("a", other("turn_start"));
    out.event("b", other("turn_start"));
    out.event("b", other("agent_end"));
    expect(sink.records().map((record) => `${record.sessionId}:${record.seq}`)).toEqual([
      "a:1",
      "b:1",
      "a:2",
      "b:2",
      "b:3",
    ]);
  });
});

describe("ConnectionOutput while the client is behind", () => {
  it("queues every record after a refused write and writes them in order at the drain", () => {
    const sink = new FakeSink();
    const { out } = output(sink);
    sink.fill();
    out.event("s1", other("agent_start"));
    expect(out.behind).toBe(true);
    out.event("s1", other("turn_start"));
    out.record({ type: "response", command: "get_state", success: true });
    expect(sink.chunks).toHaveLength(1);
    expect(out.queuedBytes).toBeGreaterThan(0);
    expect(sink.waiting).toBe(1);
    sink.drain();
    expect(sink.records().map((record) => record.type)).toEqual(["agent_start", "turn_start", "response"]);
    expect(out.behind).toBe(false);
    expect(out.queuedBytes).toBe(0);
    // Caught up: the next record goes straight through again.
    out.event("s1", other("turn_end"));
    expect(sink.records().at(-1)).toEqual({ type: "turn_end", sessionId: "s1", seq: 3 });
  });

  it("merges one block's deltas: the texts concatenated, the newest snapshot, the last seq, coalesced = how many", () => {
    const sink = new FakeSink();
    const { out } = output(sink);
    sink.fill();
    out.event("s1", other("message_start"));
    out.event("s1", delta("Hel", 0, "text", "Hel"));
    out.event("s1", delta("lo, ", 0, "text", "Hello, "));
    out.event("s1", delta("world", 0, "text", "Hello, world"));
    expect(out.coalescedTotal).toBe(2);
    sink.drain();
    const [, merged] = sink.records();
    expect(merged).toEqual({
      type: "message_update",
      sessionId: "s1",
      seq: 4,
      coalesced: 3,
      message: snapshot(0, "text", "Hello, world"),
      assistantMessageEvent: {
        type: "text_delta",
        contentIndex: 0,
        delta: "Hello, world",
        partial: snapshot(0, "text", "Hello, world"),
      },
    });
  });

  it("reports, once caught up, the peak bytes that waited and the deltas merged meanwhile", () => {
    const sink = new FakeSink();
    const { out, caughtUp } = output(sink);
    sink.fill();
    out.event("s1", other("message_start"));
    out.event("s1", delta("a"));
    out.event("s1", delta("b", 0, "text", "ab"));
    const peak = out.queuedBytes;
    out.event("s2", other("agent_start"));
    const peakWithOther = out.queuedBytes;
    expect(peakWithOther).toBeGreaterThan(peak);
    expect(caughtUp).toEqual([]);
    sink.drain();
    expect(caughtUp).toEqual([{ behindMs: expect.any(Number), peakQueuedBytes: peakWithOther, coalesced: 1 }]);
    // A second stretch behind reports only its own figures.
    sink.fill();
    out.event("s1", other("message_end"));
    out.record({ type: "response", command: "get_state", success: true });
    sink.drain();
    expect(caughtUp[1]?.coalesced).toBe(0);
    expect(caughtUp[1]?.peakQueuedBytes).toBe('{"type":"response","command":"get_state","success":true}\n'.length);
  });

  it("merges a session's deltas across other sessions' records, but not across its own", () => {
    const sink = new FakeSink();
    const { out } = output(sink);
    sink.fill();
    out.event("a", other("message_start"));
    out.event("a", delta("1"));
    out.event("b", other("agent_start"));
    out.record({ type: "response", command: "prompt", sessionId: "b", success: true });
    out.event("a", delta("2", 0, "text", "12"));
    out.event("a", other("message_update", { assistantMessageEvent: { type: "toolcall_delta", contentIndex: 1 } }));
    out.event("a", delta("3", 0, "text", "123"));
    sink.drain();
    const mine = sink.records().filter((record) => record.sessionId === "a");
    expect(mine.map((record) => [record.seq, record.coalesced, deltaText(record)])).toEqual([
      [1, undefined, undefined],
      [3, 2, "12"],
      [4, undefined, undefined],
      [5, undefined, "3"],
    ]);
  });

  it("does not merge deltas of different blocks, of text and thinking, or of different sessions", () => {
    const sink = new FakeSink();
    const { out } = output(sink);
    sink.fill();
    out.event("a", other("message_start"));
    out.event("a", delta("t0"));
    out.event("a", delta("t1", 1));
    out.event("a", delta("h1", 1, "thinking"));
    out.event("b", delta("b0"));
    out.event("a", delta("h1'", 1, "thinking", "h1h1'"));
    expect(out.coalescedTotal).toBe(1);
    sink.drain();
    expect(sink.records().map((record) => `${record.sessionId}:${record.seq}:${deltaText(record)}`)).toEqual([
      "a:1:undefined",
      "a:2:t0",
      "a:3:t1",
      "a:5:h1h1'",
      "b:1:b0",
    ]);
  });

  it("never merges into a delta that has been written", () => {
    // Every write is refused: each drain writes one chunk, then the output waits again.
    const sink = new FakeSink(1);
    const { out } = output(sink);
    out.event("s1", other("message_start"));
    out.event("s1", delta("a"));
    sink.drain();
    expect(out.behind).toBe(true);
    out.event("s1", delta("b", 0, "text", "ab"));
    out.event("s1", delta("c", 0, "text", "abc"));
    sink.drain();
    expect(sink.records().map((record) => [record.seq, record.coalesced, deltaText(record)])).toEqual([
      [1, undefined, undefined],
      [2, undefined, "a"],
      [4, 2, "bc"],
    ]);
  });

  it("writes a long queue in chunks, each after the drain of the one before", () => {
    // Every write is refused: the sink takes one chunk per drain.
    const sink = new FakeSink(1);
    const { out } = output(sink);
    out.record({ type: "response", command: "prompt", success: true });
    const big = "x".repeat(100_000);
    for (let i = 0; i < 10; i++) out.record({ type: "response", command: "get_state", success: true, data: big });
    expect(sink.chunks).toHaveLength(1);
    let drains = 0;
    while (out.behind && drains < 20) {
      const before = sink.chunks.length;
      sink.drain();
      drains++;
      expect(sink.chunks.length - before).toBeLessThanOrEqual(1);
    }
    expect(out.behind).toBe(false);
    // About 1 MB in chunks of at least 256 KiB: 3 or 4 of them (the last drain finds the queue empty).
    expect(sink.chunks.length - 1).toBeGreaterThanOrEqual(3);
    expect(sink.chunks.length - 1).toBeLessThanOrEqual(4);
    expect(sink.records()).toHaveLength(11);
    expect(out.queuedBytes).toBe(0);
  });
});

describe("ConnectionOutput's bound", () => {
  it("gives the connection up once when what waits passes maxQueuedBytes, and writes nothing after", () => {
    const sink = new FakeSink();
    const { out, overflows } = output(sink, 10_000);
    sink.fill();
    out.event("s1", other("agent_start"));
    const before = sink.chunks.length;
    for (let i = 0; i < 20; i++) out.event("s1", other("message_end", { text: "y".repeat(1000) }));
    expect(overflows).toHaveLength(1);
    expect(overflows[0]).toBeGreaterThan(10_000);
    expect(out.queuedBytes).toBe(0);
    out.event("s1", other("agent_end"));
    out.record({ type: "response", command: "prompt", success: true });
    sink.drain();
    out.event("s1", other("agent_settled"));
    expect(sink.chunks.length).toBe(before);
    expect(overflows).toHaveLength(1);
  });

  it("counts a waiting delta's text and snapshot, so merged deltas alone pass the bound", () => {
    const sink = new FakeSink();
    const { out, overflows } = output(sink, 50_000);
    sink.fill();
    out.event("s1", other("message_start"));
    let text = "";
    for (let i = 0; i < 1000 && overflows.length === 0; i++) {
      text += "z".repeat(100);
      out.event("s1", delta("z".repeat(100), 0, "text", text));
      // The delta's text once, its snapshot twice (message and partial).
      if (overflows.length === 0) expect(out.queuedBytes).toBeGreaterThanOrEqual(3 * text.length);
    }
    expect(overflows).toHaveLength(1);
    expect(text.length).toBeLessThan(50_000 / 2);
  });
});

describe("ConnectionOutput.forget", () => {
  it("restarts a returning session's seq at 1 and never merges its deltas into its earlier stay's", () => {
    const sink = new FakeSink();
    const { out } = output(sink);
    out.event("s1", other("agent_start"));
    sink.fill();
    out.event("s1", other("message_start"));
    out.event("s1", delta("old"));
    out.forget("s1");
    out.event("s1", delta("new"));
    out.event("s1", delta("er", 0, "text", "newer"));
    sink.drain();
    expect(sink.records().map((record) => [record.seq, record.coalesced, deltaText(record)])).toEqual([
      [1, undefined, undefined],
      [2, undefined, undefined],
      [3, undefined, "old"],
      [2, 2, "newer"],
    ]);
  });
});

function deltaText(record: Record<string, unknown>): string | undefined {
  const inner = record.assistantMessageEvent as { type?: string; delta?: string } | undefined;
  return inner?.type === "text_delta" || inner?.type === "thinking_delta" ? inner.delta : undefined;
}

/** One session's stream: messages of text and thinking blocks, each streamed in deltas. */
const streamSpec = fc.array(
  fc.array(
    fc.record({
      kind: fc.constantFrom<Kind>("text", "thinking"),
      deltas: fc.array(fc.string({ minLength: 1, maxLength: 4, unit: "grapheme" }), { maxLength: 6 }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  { minLength: 1, maxLength: 3 },
);

type Spec = { kind: Kind; deltas: string[] }[][];

/** The events of one session's stream, as the host's sessions emit them. */
function streamEvents(spec: Spec): SessionEvent[] {
  const events: SessionEvent[] = [other("agent_start")];
  for (const blocks of spec) {
    events.push(other("message_start"));
    const content: { type: Kind; text: string }[] = [];
    blocks.forEach((block, index) => {
      events.push(
        other("message_update", { assistantMessageEvent: { type: `${block.kind}_start`, contentIndex: index } }),
      );
      let soFar = "";
      for (const piece of block.deltas) {
        soFar += piece;
        events.push(delta(piece, index, block.kind, soFar));
      }
      events.push(
        other("message_update", {
          assistantMessageEvent: { type: `${block.kind}_end`, contentIndex: index, content: soFar },
        }),
      );
      content.push({ type: block.kind, text: soFar });
    });
    events.push(other("message_end", { content }));
  }
  events.push(other("agent_settled"));
  return events;
}

/** What the driver does next: a session's next event, a response, the sink filling, or draining. */
const step = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant("event" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ op: "response" as const }) },
  { weight: 1, arbitrary: fc.constant({ op: "fill" as const }) },
  { weight: 1, arbitrary: fc.constant({ op: "drain" as const }) },
);

describe("ConnectionOutput, any interleaving and any stalls", () => {
  /*
   * The invariant checked, per session, on what the client receives:
   *  - seq: the k-th record has seq = Σ_{i≤k} (coalesced_i ?? 1), so the last seq is the number of
   *    events the session emitted, and every jump from one record to the next equals the next's
   *    `coalesced` (1 when absent): a gap is exactly the deltas merged into the record closing it;
   *  - only text and thinking deltas carry `coalesced`, and it is ≥ 2;
   *  - every other event arrives exactly once, in the order emitted, unchanged but for the envelope;
   *  - concatenating the deltas received of each block gives the block's whole text (its `*_end`);
   *  - the merged count the output reports is Σ (coalesced − 1) over all records.
   */
  it("the client rebuilds every block's text and accounts for every seq by coalesced", () => {
    // Across the runs some deltas merge, or the property would say nothing about merging.
    let mergedInAllRuns = 0;
    fc.assert(
      fc.property(
        fc.array(streamSpec, { minLength: 1, maxLength: 4 }),
        fc.array(step, { maxLength: 200 }),
        (specs, steps) => {
          const sink = new FakeSink();
          const { out, overflows } = output(sink);
          const streams = specs.map((spec) => streamEvents(spec));
          const next = streams.map(() => 0);
          let responses = 0;
          const emit = (session: number) => {
            out.event(`s${session}`, streams[session]?.[next[session] ?? 0] as SessionEvent);
            next[session] = (next[session] ?? 0) + 1;
          };
          const live = () => streams.map((_, i) => i).filter((i) => (next[i] ?? 0) < (streams[i]?.length ?? 0));
          for (const s of steps) {
            if (s.op === "fill") sink.fill();
            else if (s.op === "drain") sink.drain();
            else if (s.op === "response") out.record({ type: "response", command: "get_state", id: `r${++responses}` });
            else {
              const sessions = live();
              if (sessions.length > 0) emit(sessions[s.pick % sessions.length] as number);
            }
          }
          for (let sessions = live(); sessions.length > 0; sessions = live()) emit(sessions[0] as number);
          sink.drain();
          expect(out.behind).toBe(false);
          expect(overflows).toEqual([]);

          const records = sink.records();
          expect(records.filter((record) => record.type === "response").map((record) => record.id)).toEqual(
            Array.from({ length: responses }, (_, i) => `r${i + 1}`),
          );
          let merged = 0;
          streams.forEach((emitted, session) => {
            const mine = records.filter((record) => record.sessionId === `s${session}`);
            let seq = 0;
            const texts = new Map<string, string>();
            let message = 0;
            const others: unknown[] = [];
            for (const record of mine) {
              const coalesced = record.coalesced as number | undefined;
              if (coalesced !== undefined) {
                expect(deltaText(record)).toBeDefined();
                expect(coalesced).toBeGreaterThanOrEqual(2);
                merged += coalesced - 1;
              }
              seq += coalesced ?? 1;
              expect(record.seq).toBe(seq);
              const inner = record.assistantMessageEvent as { type: string; contentIndex: number; content?: string };
              const text = deltaText(record);
              if (record.type === "message_start") message++;
              if (text !== undefined) {
                const key = `${message}/${inner.contentIndex}/${inner.type}`;
                texts.set(key, (texts.get(key) ?? "") + text);
                continue;
              }
              if (inner?.type === "text_end" || inner?.type === "thinking_end") {
                const key = `${message}/${inner.contentIndex}/${inner.type.replace("_end", "_delta")}`;
                expect(texts.get(key) ?? "").toBe(inner.content);
              }
              const { sessionId: _id, seq: _seq, ...event } = record;
              others.push(event);
            }
            expect(seq).toBe(emitted.length);
            expect(others).toEqual(emitted.filter((event) => deltaText(event as never) === undefined));
          });
          expect(out.coalescedTotal).toBe(merged);
          mergedInAllRuns += merged;
        },
      ),
    );
    expect(mergedInAllRuns).toBeGreaterThan(0);
  });
});
