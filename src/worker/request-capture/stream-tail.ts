/**
 * The last bytes of an event stream, kept so that an error event at its end can be read once the
 * stream is over (provider-errors.ts reads it). In-stream error events are short (a type, a code,
 * a sentence); the last {@link STREAM_TAIL_BYTES} of a stream hold one whole. Bounded, so a long
 * answer costs no more memory than a short one.
 */

/** How many bytes of a stream's end are kept. */
const STREAM_TAIL_BYTES = 8 * 1024;
const ERROR_BYTES = Buffer.from("error");
const utf8 = new TextDecoder();

/**
 * The last bytes of an event stream. Holds references to the chunks already forwarded (a copy
 * only of an oversized chunk's end), and drops whole chunks from the front past the bound.
 */
export class StreamTail {
  #chunks: Uint8Array[] = [];
  #bytes = 0;

  /** Keeps `chunk`, the latest of the stream, dropping chunks no longer needed to hold the bound. */
  push(chunk: Uint8Array): void {
    const kept = chunk.byteLength > STREAM_TAIL_BYTES ? chunk.slice(-STREAM_TAIL_BYTES) : chunk;
    this.#chunks.push(kept);
    this.#bytes += kept.byteLength;
    let first = this.#chunks[0];
    while (first !== undefined && this.#chunks.length > 1 && this.#bytes - first.byteLength >= STREAM_TAIL_BYTES) {
      this.#chunks.shift();
      this.#bytes -= first.byteLength;
      first = this.#chunks[0];
    }
  }

  /**
   * The tail as text, if it holds the bytes `error`; empties the tail. A tail without them (every
   * successful answer, nearly) is dropped without decoding.
   */
  take(): string | undefined {
    const bytes = Buffer.concat(this.#chunks, this.#bytes);
    this.#chunks = [];
    this.#bytes = 0;
    if (bytes.indexOf(ERROR_BYTES) === -1) return undefined;
    return utf8.decode(bytes);
  }
}
