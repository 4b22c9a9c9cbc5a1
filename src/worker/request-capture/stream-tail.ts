/**
 * The last bytes of an event stream, kept so that an error event at its end can be read once the
 * stream is over (provider-errors.ts reads it). In-stream error events are short (a type, a code,
 * a sentence); the last {@link STREAM_TAIL_BYTES} of a stream hold one whole. Bounded, so a long
 * answer costs no more memory than a short one.
 *
 * The bytes are copied into a ring of the tail's own, not kept as references to the chunks: a
 * chunk held until 8 KB of later chunks arrive (about 50 tokens of a streamed answer) outlives
 * several young-generation collections, so with references every chunk of every stream, and its
 * ArrayBuffer, was promoted to the worker's old generation and stayed there as garbage until a
 * full collection. Copied, a chunk dies young, as in an in-process agent loop. Rings are reused
 * across streams (a small free list), and a stream's end allocates nothing unless its tail holds
 * an error event. Measured in docs/performance.md, section (r).
 */

/** How many bytes of a stream's end are kept. */
const STREAM_TAIL_BYTES = 8 * 1024;
const ERROR_BYTES = Buffer.from("error");
const utf8 = new TextDecoder();
/** Rings of ended streams, for the next streams; bounded so that a burst's rings are let go. */
const freeRings: Uint8Array[] = [];
const MAX_FREE_RINGS = 64;
/** A full ring's bytes in stream order, for the search at a stream's end (synchronous, so shared). */
const scratch = new Uint8Array(STREAM_TAIL_BYTES);

/** The last {@link STREAM_TAIL_BYTES} bytes of an event stream, in a ring. */
export class StreamTail {
  /** Made at the first byte; handed back to the free list by {@link take}. */
  #ring: Uint8Array | undefined;
  /** Where the next byte goes. */
  #end = 0;
  /** Bytes held, at most STREAM_TAIL_BYTES. */
  #length = 0;

  /** Keeps the bytes of `chunk`, the latest of the stream, dropping the oldest past the bound. */
  push(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return;
    if (this.#ring === undefined) this.#ring = freeRings.pop() ?? new Uint8Array(STREAM_TAIL_BYTES);
    const ring = this.#ring;
    const bytes = chunk.byteLength > STREAM_TAIL_BYTES ? chunk.subarray(-STREAM_TAIL_BYTES) : chunk;
    const n = bytes.byteLength;
    const first = Math.min(n, STREAM_TAIL_BYTES - this.#end);
    if (first === n) ring.set(bytes, this.#end);
    else {
      ring.set(bytes.subarray(0, first), this.#end);
      ring.set(bytes.subarray(first), 0);
    }
    this.#end = (this.#end + n) % STREAM_TAIL_BYTES;
    this.#length = Math.min(STREAM_TAIL_BYTES, this.#length + n);
  }

  /**
   * The tail as text, if it holds the bytes `error`; empties the tail. A tail without them (every
   * successful answer, nearly) is dropped without decoding.
   */
  take(): string | undefined {
    const ring = this.#ring;
    if (ring === undefined) return undefined;
    let bytes: Uint8Array;
    if (this.#length < STREAM_TAIL_BYTES) bytes = ring.subarray(0, this.#length);
    else {
      // Full: the oldest byte is at #end. Laid out in order so `error` across the seam is found.
      scratch.set(ring.subarray(this.#end), 0);
      scratch.set(ring.subarray(0, this.#end), STREAM_TAIL_BYTES - this.#end);
      bytes = scratch;
    }
    const text =
      Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).indexOf(ERROR_BYTES) === -1
        ? undefined
        : utf8.decode(bytes);
    this.#ring = undefined;
    this.#end = 0;
    this.#length = 0;
    if (freeRings.length < MAX_FREE_RINGS) freeRings.push(ring);
    return text;
  }
}
