/**
 * Strict JSONL framing for RPC mode and its client (docs/rpc.md, "Framing"):
 * one JSON value per record, LF the only separator, one trailing CR tolerated.
 *
 * node:readline is not usable here: it also splits on U+2028 and U+2029, which JSON allows raw
 * inside strings, so a record carrying them would be cut in two.
 */

/** Records longer than this many bytes are skipped. 8 MiB. */
const DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024;
/** `oversize` reports this many characters of the discarded record, enough to find its `id`. */
const HEAD_CHARS = 256;
/** Any 256 code points fit in this many UTF-8 bytes. */
const HEAD_BYTES = HEAD_CHARS * 4;
const LF = 0x0a;
const CR = 0x0d;

/**
 * One JSON value as a JSONL record: `JSON.stringify` plus "\n". U+2028/U+2029 are written as
 * `\u2028`/`\u2029` escapes so line-splitting clients that also split on them (Node's readline)
 * stay safe; the JSON is unchanged in meaning.
 *
 * Called by RPC mode for every response and event, and by `RpcClient` for every command.
 * @throws TypeError when `value` has no JSON form (`undefined`, a function, a symbol), and
 *   whatever `JSON.stringify` throws (a cycle, a BigInt).
 */
export function serializeJsonLine(value: unknown): string {
  const json: string | undefined = JSON.stringify(value);
  if (json === undefined) throw new TypeError(`serializeJsonLine: a ${typeof value} has no JSON form`);
  // JSON.stringify leaves these two raw, and they can only occur inside string literals, where the
  // escape means the same character.
  return `${json.replace(/[\u2028\u2029]/g, (char) => (char === "\u2028" ? "\\u2028" : "\\u2029"))}\n`;
}

/** What `attachJsonlReader` calls. Handlers run synchronously inside the stream's `data` event. */
export interface JsonlReaderHandlers {
  /** A complete record, without its LF (and without one trailing CR, which is tolerated). Called in order. */
  line(text: string): void;
  /** A record longer than maxLineBytes was discarded up to its LF. `head` is its first 256 characters (to find an id). */
  oversize?(info: { bytes: number; head: string }): void;
  /** The stream ended. `partial` is the unterminated text after the last LF, if any (not delivered to `line`). */
  end?(partial: string | undefined): void;
}

/** Limits of `attachJsonlReader`. */
export interface JsonlReaderOptions {
  /**
   * Longest record kept, in UTF-8 bytes, counting a trailing CR but not the LF. A longer record is
   * skipped and reported to `oversize`.
   * @default 8 MiB
   */
  maxLineBytes?: number;
}

/**
 * Reads LF-delimited records from a byte stream. LF is the only separator: U+2028/U+2029 and lone
 * CR inside a record are data. Multi-byte UTF-8 split across chunks is decoded correctly: records
 * are cut at the byte level (an LF byte never occurs inside a multi-byte UTF-8 sequence) and each
 * record's bytes are decoded whole. Never buffers more than maxLineBytes of one record: the rest of
 * an oversize record is skipped without being held. Never uses node:readline (it splits on U+2028/2029).
 *
 * Each chunk is scanned once, from where the previous scan stopped, so a long record arriving in
 * many chunks costs linear time. String chunks (a stream with `setEncoding`) are read as UTF-8.
 *
 * A handler that throws does not lose records: the rest of the chunk is still delivered, then the
 * first error is rethrown from the `data` event (where the stream's owner sees it).
 * `end` is called once, on the stream's `end` or, failing that, its `close` (a destroyed stream).
 *
 * Returns a function that detaches the reader: no handler is called after it, and the buffered
 * partial record is dropped. The reader never calls `pause`, `resume` or `destroy` on the stream.
 * @throws RangeError when `maxLineBytes` is not a positive integer.
 */
export function attachJsonlReader(
  stream: NodeJS.ReadableStream,
  handlers: JsonlReaderHandlers,
  options: JsonlReaderOptions = {},
): () => void {
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 1) {
    throw new RangeError(`attachJsonlReader: maxLineBytes must be a positive integer, got ${maxLineBytes}`);
  }
  // The current record's bytes so far (`pending[0, pendingBytes)`), when it spans chunks. The buffer
  // grows by doubling up to maxLineBytes, so appending is amortised linear however small the chunks
  // are, and it is dropped after each record so one long record does not pin its memory.
  let pending: Buffer | undefined;
  let pendingBytes = 0;
  // While skipping an oversize record: its byte count so far and a copy of its first HEAD_BYTES bytes.
  let skipping: { bytes: number; head: Buffer } | undefined;
  let attached = true;
  let ended = false;

  const reset = (): void => {
    pending = undefined;
    pendingBytes = 0;
    skipping = undefined;
  };

  const reportOversize = (skipped: { bytes: number; head: Buffer }): void => {
    const head = skipped.head.subarray(0, Math.min(skipped.bytes, HEAD_BYTES));
    handlers.oversize?.({ bytes: skipped.bytes, head: headText(head) });
  };

  /** Adds bytes of the current record (one with no LF yet, or the last piece before its LF). */
  const take = (bytes: Buffer): void => {
    if (bytes.length === 0) return;
    if (skipping !== undefined) {
      if (skipping.bytes < HEAD_BYTES) bytes.copy(skipping.head, skipping.bytes);
      skipping.bytes += bytes.length;
      return;
    }
    const total = pendingBytes + bytes.length;
    if (total > maxLineBytes) {
      // Keep only a head for the report and count the rest without holding it.
      const head = Buffer.alloc(HEAD_BYTES);
      if (pending !== undefined) pending.copy(head, 0, 0, Math.min(pendingBytes, HEAD_BYTES));
      if (pendingBytes < HEAD_BYTES) bytes.copy(head, pendingBytes);
      reset();
      skipping = { bytes: total, head };
      return;
    }
    if (pending === undefined || pending.length < total) {
      const grown = Buffer.allocUnsafe(Math.min(maxLineBytes, Math.max(total, 2 * (pending?.length ?? 0), 4096)));
      pending?.copy(grown, 0, 0, pendingBytes);
      pending = grown;
    }
    bytes.copy(pending, pendingBytes);
    pendingBytes = total;
  };

  const onData = (chunk: Buffer | string): void => {
    if (!attached) return;
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    let failed = false;
    let failure: unknown;
    let start = 0;
    while (attached) {
      const lf = bytes.indexOf(LF, start);
      if (lf === -1) {
        take(bytes.subarray(start));
        break;
      }
      const piece = bytes.subarray(start, lf);
      start = lf + 1;
      let record: Buffer | undefined;
      if (pending === undefined && skipping === undefined && piece.length <= maxLineBytes) {
        record = piece; // the whole record is in this chunk: decode it in place, no copy
      } else {
        take(piece);
        if (pending !== undefined) record = pending.subarray(0, pendingBytes);
      }
      // Reset the record state before calling out, so a throwing handler leaves the reader consistent.
      const skipped = skipping;
      reset();
      try {
        if (skipped !== undefined) reportOversize(skipped);
        else handlers.line(decodeRecord(record));
      } catch (error) {
        if (!failed) {
          failed = true;
          failure = error;
        }
      }
    }
    if (failed) throw failure;
  };

  const onEnd = (): void => {
    if (!attached || ended) return;
    ended = true;
    const skipped = skipping;
    const rest = pending === undefined ? undefined : pending.toString("utf8", 0, pendingBytes);
    detach();
    // An oversize record cut off by EOF is still reported; there is no partial text to give.
    try {
      if (skipped !== undefined) reportOversize(skipped);
    } finally {
      handlers.end?.(rest);
    }
  };

  function detach(): void {
    attached = false;
    reset();
    stream.removeListener("data", onData);
    stream.removeListener("end", onEnd);
    stream.removeListener("close", onEnd);
  }

  stream.on("data", onData);
  stream.on("end", onEnd);
  stream.on("close", onEnd);
  return detach;
}

/** A record's text: its bytes decoded as UTF-8, without one trailing CR. */
function decodeRecord(record: Buffer | undefined): string {
  if (record === undefined) return "";
  const end = record.length > 0 && record[record.length - 1] === CR ? record.length - 1 : record.length;
  return record.toString("utf8", 0, end);
}

/** The first HEAD_CHARS characters of an oversize record, never ending in half a surrogate pair. */
function headText(head: Buffer): string {
  let text = head.toString("utf8").slice(0, HEAD_CHARS);
  const last = text.charCodeAt(text.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) text = text.slice(0, -1);
  return text;
}
