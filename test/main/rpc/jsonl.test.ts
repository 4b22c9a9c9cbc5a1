/**
 * Strict JSONL framing, as pi's RPC mode frames records (docs/rpc.md): LF is the only separator, one trailing CR is
 * tolerated, U+2028/U+2029 and lone CR are data, records may be cut anywhere between chunks, and
 * an oversize record is skipped and reported without stopping the records after it.
 */
import { EventEmitter } from "node:events";
import { PassThrough, Readable } from "node:stream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { attachJsonlReader, type JsonlReaderOptions, serializeJsonLine } from "../../../src/main/rpc/jsonl.js";

interface Read {
  lines: string[];
  oversize: { bytes: number; head: string }[];
  partial: string | undefined;
  /** How many `data` events the stream emitted: proves the chunks arrived separately. */
  dataEvents: number;
}

/** Streams `chunks` one `data` event each through a real Readable and collects what the reader reports. */
function read(chunks: readonly (Buffer | string)[], options?: JsonlReaderOptions): Promise<Read> {
  const stream = Readable.from(
    chunks.map((chunk) => (typeof chunk === "string" ? Buffer.from(chunk) : chunk)),
    { objectMode: false },
  );
  const result: Read = { lines: [], oversize: [], partial: undefined, dataEvents: 0 };
  stream.on("data", () => {
    result.dataEvents++;
  });
  return new Promise((resolve) => {
    attachJsonlReader(
      stream,
      {
        line: (text) => result.lines.push(text),
        oversize: (info) => result.oversize.push(info),
        end: (partial) => {
          result.partial = partial;
          resolve(result);
        },
      },
      options,
    );
  });
}

/** `bytes` cut at the given offsets (any order, duplicates and out-of-range values allowed). */
function cut(bytes: Buffer, offsets: readonly number[]): Buffer[] {
  const points = [...new Set(offsets.map((offset) => offset % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let start = 0;
  for (const point of [...points, bytes.length]) {
    if (point > start) chunks.push(bytes.subarray(start, point));
    start = Math.max(start, point);
  }
  return chunks;
}

describe("serializeJsonLine", () => {
  it("writes one LF-terminated line that parses back to the same value", () => {
    const value = { type: "response", id: "req_1", data: { text: "a\nb\r\nc", emoji: "😀" } };
    const line = serializeJsonLine(value);
    expect(line.endsWith("\n")).toBe(true);
    expect(line.indexOf("\n")).toBe(line.length - 1);
    expect(JSON.parse(line)).toEqual(value);
  });

  it("escapes U+2028 and U+2029 so readline-style clients do not split the record", () => {
    const line = serializeJsonLine({ text: "a\u2028b\u2029c" });
    expect(line).not.toMatch(/[\u2028\u2029]/);
    expect(line).toBe('{"text":"a\\u2028b\\u2029c"}\n');
    expect(JSON.parse(line)).toEqual({ text: "a\u2028b\u2029c" });
  });

  it("throws a TypeError for a value with no JSON form instead of writing 'undefined'", () => {
    expect(() => serializeJsonLine(undefined)).toThrow(TypeError);
    expect(() => serializeJsonLine(() => 1)).toThrow(TypeError);
  });
});

describe("attachJsonlReader", () => {
  // Strings full of the characters framing gets wrong: separators that are not LF, CR, LF itself
  // (escaped by JSON), surrogate pairs, and multi-byte UTF-8.
  const trickyString = fc.string({
    unit: fc.constantFrom("a", "\u2028", "\u2029", "\r", "\n", "😀", "é", "中", '"', "\\", "\u0000"),
    maxLength: 20,
  });
  const value = fc.oneof(
    trickyString,
    fc.jsonValue({ maxDepth: 3 }),
    fc.dictionary(trickyString, fc.oneof(trickyString, fc.integer())),
  );

  it("returns exactly the serialized values, in order, however the bytes are cut into chunks", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(value, { maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        async (values, at) => {
          const bytes = Buffer.from(values.map(serializeJsonLine).join(""));
          const result = await read(cut(bytes, at));
          expect(result.lines.map((line) => JSON.parse(line) as unknown)).toEqual(
            values.map((v) => JSON.parse(JSON.stringify(v)) as unknown),
          );
          expect(result.partial).toBeUndefined();
          expect(result.oversize).toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("decodes a multi-byte character cut between chunks at every possible byte", async () => {
    const bytes = Buffer.from("é😀中\n");
    for (let at = 1; at < bytes.length - 1; at++) {
      const result = await read([bytes.subarray(0, at), bytes.subarray(at)]);
      expect(result.dataEvents).toBe(2);
      expect(result.lines).toEqual(["é😀中"]);
    }
  });

  it("reads a stream that was given an encoding (string chunks)", async () => {
    const stream = new PassThrough();
    stream.setEncoding("utf8");
    const lines: string[] = [];
    const ended = new Promise<string | undefined>((resolve) => {
      attachJsonlReader(stream, { line: (text) => lines.push(text), end: resolve });
    });
    const bytes = Buffer.from('{"a":"😀"}\n{"b":2}\ntail');
    stream.write(bytes.subarray(0, 8)); // inside the emoji
    stream.end(bytes.subarray(8));
    expect(await ended).toBe("tail");
    expect(lines).toEqual(['{"a":"😀"}', '{"b":2}']);
  });

  it("strips one trailing CR (CRLF records) and keeps any CR before it", async () => {
    const result = await read(["a\r\n", "b\r", "\n", "c\r\r\n"]);
    expect(result.lines).toEqual(["a", "b", "c\r"]);
  });

  it("keeps lone CR, U+2028 and U+2029 inside a record as data", async () => {
    const result = await read(["one\rtwo\u2028three\u2029four\n", "\rfive\n"]);
    expect(result.lines).toEqual(["one\rtwo\u2028three\u2029four", "\rfive"]);
  });

  it("delivers empty lines as empty strings", async () => {
    const result = await read(["\n\n", "\r\n", "x\n", "\n"]);
    expect(result.lines).toEqual(["", "", "", "x", ""]);
  });

  it("reports the unterminated text after the last LF to end, not to line", async () => {
    expect(await read(["a\nb", "c"])).toMatchObject({ lines: ["a"], partial: "bc" });
    expect(await read(["a\n"])).toMatchObject({ lines: ["a"], partial: undefined });
    expect(await read([])).toMatchObject({ lines: [], partial: undefined });
  });

  it("reassembles a long record that arrives in many small chunks", async () => {
    const record = JSON.stringify({ text: "x".repeat(200_000), emoji: "😀".repeat(1000) });
    const bytes = Buffer.from(`${record}\n{"next":true}\n`);
    const result = await read(
      cut(
        bytes,
        Array.from({ length: bytes.length / 97 }, (_, i) => i * 97),
      ),
    );
    expect(result.dataEvents).toBeGreaterThan(2000);
    expect(result.lines).toEqual([record, '{"next":true}']);
  });

  describe("a record longer than maxLineBytes", () => {
    it("is reported with its size and head, and the records after it are still delivered", async () => {
      const long = `{"id":"req_7","data":"${"y".repeat(80)}"}`;
      const result = await read(
        [`{"id":1}\n${long.slice(0, 30)}`, long.slice(30, 60), `${long.slice(60)}\n{"id":2}\n`],
        {
          maxLineBytes: 32,
        },
      );
      expect(result.lines).toEqual(['{"id":1}', '{"id":2}']);
      expect(result.oversize).toEqual([{ bytes: Buffer.byteLength(long), head: long }]);
    });

    it("is skipped even when it arrives whole in one chunk", async () => {
      const result = await read([`${"z".repeat(40)}\nok\n`], { maxLineBytes: 32 });
      expect(result.lines).toEqual(["ok"]);
      expect(result.oversize).toEqual([{ bytes: 40, head: "z".repeat(40) }]);
    });

    it("counts bytes, not characters, and keeps a record of exactly maxLineBytes", async () => {
      // "é" is two bytes: 16 of them are 32 bytes (kept), 17 are 34 (skipped).
      const result = await read([`${"é".repeat(16)}\n`, `${"é".repeat(17)}\n`], { maxLineBytes: 32 });
      expect(result.lines).toEqual(["é".repeat(16)]);
      expect(result.oversize.map((info) => info.bytes)).toEqual([34]);
    });

    it("gives only the first 256 characters as its head", async () => {
      const long = `{"id":"req_9","pad":"${"😀".repeat(5000)}"}`;
      const result = await read(cut(Buffer.from(`${long}\n`), [5, 600, 1100, 9000]), { maxLineBytes: 1024 });
      const info = result.oversize[0];
      expect(info?.bytes).toBe(Buffer.byteLength(long));
      expect(info?.head.length).toBeLessThanOrEqual(256);
      expect(info?.head.length).toBeGreaterThanOrEqual(255); // at most half a surrogate pair dropped
      expect(long.startsWith(info?.head ?? "-")).toBe(true);
      expect(info?.head).toMatch(/^\{"id":"req_9"/);
    });

    it("is reported when the stream ends before its LF, with no partial text", async () => {
      const result = await read(["ok\n", "w".repeat(50)], { maxLineBytes: 32 });
      expect(result).toMatchObject({ lines: ["ok"], partial: undefined, oversize: [{ bytes: 50 }] });
    });
  });

  it("rejects a maxLineBytes that is not a positive integer", () => {
    expect(() => attachJsonlReader(new PassThrough(), { line: () => {} }, { maxLineBytes: 0 })).toThrow(RangeError);
    expect(() => attachJsonlReader(new PassThrough(), { line: () => {} }, { maxLineBytes: 1.5 })).toThrow(RangeError);
  });

  // A bare emitter makes `data` synchronous, so a rethrown handler error can be caught here
  // instead of surfacing as an uncaught exception inside stream internals.
  function emitterStream(): EventEmitter & NodeJS.ReadableStream {
    return new EventEmitter() as EventEmitter & NodeJS.ReadableStream;
  }

  it("delivers the rest of a chunk when a line handler throws, then rethrows the first error", () => {
    const stream = emitterStream();
    const lines: string[] = [];
    attachJsonlReader(stream, {
      line: (text) => {
        lines.push(text);
        if (text.startsWith("bad")) throw new Error(text);
      },
    });
    expect(() => stream.emit("data", Buffer.from("a\nbad1\nb\nbad2\nc\n"))).toThrow("bad1");
    stream.emit("data", Buffer.from("d\n"));
    expect(lines).toEqual(["a", "bad1", "b", "bad2", "c", "d"]);
  });

  it("calls nothing after it is detached, and detaches itself from the stream", () => {
    const stream = emitterStream();
    const calls: string[] = [];
    const detach = attachJsonlReader(stream, {
      line: (text) => calls.push(`line ${text}`),
      end: (partial) => calls.push(`end ${partial}`),
    });
    stream.emit("data", Buffer.from("a\nhalf"));
    detach();
    stream.emit("data", Buffer.from("more\nb\n"));
    stream.emit("end");
    expect(calls).toEqual(["line a"]);
    expect(stream.listenerCount("data") + stream.listenerCount("end") + stream.listenerCount("close")).toBe(0);
  });

  it("reports end once when a destroyed stream closes without ending", () => {
    const stream = emitterStream();
    const ends: (string | undefined)[] = [];
    attachJsonlReader(stream, { line: () => {}, end: (partial) => ends.push(partial) });
    stream.emit("data", Buffer.from("x\ny"));
    stream.emit("close");
    stream.emit("end");
    expect(ends).toEqual(["y"]);
  });
});
