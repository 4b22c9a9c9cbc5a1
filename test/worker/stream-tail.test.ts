/**
 * The tail of an event stream (src/worker/request-capture/stream-tail.ts): the last 8 KB of the
 * bytes pushed, whatever the chunking, read at the stream's end only when it holds an error
 * event's bytes. The tail copies bytes into a ring reused across streams, so these check what a
 * ring could get wrong: the seam (an error event split across the ring's end), a chunk larger
 * than the tail, and a reused ring that must not show a previous stream's bytes.
 */
import { describe, expect, it } from "vitest";
import { StreamTail } from "../../src/worker/request-capture/stream-tail.js";

const encoder = new TextEncoder();
const TAIL = 8 * 1024;
const bytes = (text: string) => encoder.encode(text);

describe("a stream tail", () => {
  it("reads nothing from a stream without the bytes `error`, and nothing from an empty one", () => {
    const tail = new StreamTail();
    expect(tail.take()).toBeUndefined();
    tail.push(bytes("data: hello\n\n"));
    expect(tail.take()).toBeUndefined();
  });

  it("keeps a short stream whole", () => {
    const tail = new StreamTail();
    tail.push(bytes("data: a\n\n"));
    tail.push(bytes('event: error\ndata: {"type":"error"}\n\n'));
    expect(tail.take()).toBe('data: a\n\nevent: error\ndata: {"type":"error"}\n\n');
  });

  it("keeps exactly the last 8 KB of a long stream, an error event across the ring's seam included", () => {
    const tail = new StreamTail();
    let all = "";
    // Chunks of 100 bytes: the ring wraps mid-chunk, and the final event straddles the seam.
    for (let i = 0; all.length < 3 * TAIL; i++) {
      const chunk = `data: ${String(i).padStart(6, "0")} ${"x".repeat(86)}\n`;
      all += chunk;
      tail.push(bytes(chunk));
    }
    const event = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error"}}\n\n';
    tail.push(bytes(event.slice(0, 7)));
    tail.push(bytes(event.slice(7)));
    all += event;
    expect(tail.take()).toBe(all.slice(-TAIL));
  });

  it("keeps the end of a chunk larger than the tail", () => {
    const tail = new StreamTail();
    tail.push(bytes("data: first\n\n"));
    const big = `${"y".repeat(3 * TAIL)}event: error\n\n`;
    tail.push(bytes(big));
    expect(tail.take()).toBe(big.slice(-TAIL));
  });

  it("empties on take, and a later stream on a reused ring sees only its own bytes", () => {
    const first = new StreamTail();
    first.push(bytes(`${"z".repeat(TAIL)}error`));
    expect(first.take()?.endsWith("error")).toBe(true);
    expect(first.take()).toBeUndefined();
    const second = new StreamTail();
    second.push(bytes("data: error\n\n"));
    expect(second.take()).toBe("data: error\n\n");
    const third = new StreamTail();
    third.push(bytes("data: fine\n\n"));
    expect(third.take()).toBeUndefined();
  });
});
