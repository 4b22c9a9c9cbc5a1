/**
 * A command's output as it streams in, kept bounded: pi's limits (the last 2000 lines or 50 KiB,
 * whichever is smaller, go back to the caller), and once the output passes 50 KiB everything goes
 * to a temporary file as well, whose path the result names. Memory stays at the byte limit plus
 * one pipe read however much the command writes: only a rolling tail is held.
 *
 * Runs in the session's worker (SPEC X1), never on the host's main thread: cleaning and counting
 * 50 MB of output is the worker's work, and only the bounded result crosses the port.
 */
import { randomBytes } from "node:crypto";
import { createWriteStream, type WriteStream } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** pi's limits for command output shown to the model. */
export const OUTPUT_LIMITS = { maxLines: 2000, maxBytes: 50 * 1024 } as const;

/** CSI, OSC and two-character escape sequences (colours, cursor moves, titles). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: escape sequences are what it removes
const ANSI = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)|[@-Z\\-_])/g;
/** Control characters but tab and newline (carriage returns included), and Unicode's interlinear annotation marks. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f\ufff9-\ufffb]/g;

/** Collects one command's output; see the module comment. */
export class BashOutput {
  readonly #decoder = new TextDecoder();
  /** The newest cleaned chunks: the oldest is dropped only while the rest hold `maxBytes` characters or more. */
  readonly #tail: string[] = [];
  #tailChars = 0;
  /** Some output was dropped from the front of the tail: the result is truncated whatever remains. */
  #dropped = false;
  #rawBytes = 0;
  #file: { path: string; stream: WriteStream } | undefined;
  #fileError: Error | undefined;

  /** Takes a chunk of stdout or stderr. */
  push(chunk: Buffer): void {
    this.#rawBytes += chunk.length;
    this.#add(this.#decoder.decode(chunk, { stream: true }));
  }

  /**
   * The output's end, truncated to pi's limits, and the full output's file when there is one (made
   * now when only the line limit truncated it). Resolves once that file is completely written.
   */
  async finish(): Promise<{ output: string; truncated: boolean; fullOutputPath?: string }> {
    this.#add(this.#decoder.decode());
    const whole = this.#tail.join("");
    const tail = tailOf(whole);
    const truncated = tail.truncated || this.#dropped;
    const text = tail.text;
    if (truncated) this.#openFile();
    const file = this.#file;
    if (file === undefined) return { output: whole, truncated: false };
    await new Promise<void>((resolve) => {
      file.stream.end(() => resolve());
      file.stream.once("error", () => resolve());
    });
    const result: { output: string; truncated: boolean; fullOutputPath?: string } = { output: text, truncated };
    if (this.#fileError === undefined) result.fullOutputPath = file.path;
    return result;
  }

  #add(raw: string): void {
    if (raw === "") return;
    const text = clean(raw);
    if (this.#rawBytes > OUTPUT_LIMITS.maxBytes) this.#openFile();
    this.#file?.stream.write(text);
    this.#tail.push(text);
    this.#tailChars += text.length;
    // A character is at least a byte, so what remains still fills the byte limit.
    while (this.#tailChars - (this.#tail[0] as string).length >= OUTPUT_LIMITS.maxBytes) {
      this.#tailChars -= (this.#tail.shift() as string).length;
      this.#dropped = true;
    }
  }

  /** Opens the full-output file once; what the tail still holds is everything so far (it was under the limit). */
  #openFile(): void {
    if (this.#file !== undefined) return;
    const path = join(tmpdir(), `lifeline-bash-${randomBytes(8).toString("hex")}.log`);
    const stream = createWriteStream(path);
    stream.on("error", (error) => {
      this.#fileError = error;
    });
    this.#file = { path, stream };
    for (const text of this.#tail) stream.write(text);
  }
}

function clean(text: string): string {
  return text.replace(ANSI, "").replace(CONTROL, "");
}

/**
 * The end of `text` within pi's limits: whole lines from the end, at most `maxLines` of them and
 * `maxBytes` of UTF-8; when even the last line is longer than `maxBytes`, its last `maxBytes`.
 */
export function tailOf(text: string): { text: string; truncated: boolean } {
  const { maxLines, maxBytes } = OUTPUT_LIMITS;
  const lines = text.split("\n");
  if (lines.length <= maxLines && Buffer.byteLength(text) <= maxBytes) return { text, truncated: false };
  const kept: string[] = [];
  let bytes = 0;
  for (let i = lines.length - 1; i >= 0 && kept.length < maxLines; i--) {
    const line = lines[i] as string;
    const size = Buffer.byteLength(line) + (kept.length > 0 ? 1 : 0);
    if (bytes + size > maxBytes) {
      if (kept.length === 0) kept.push(lastBytes(line, maxBytes));
      break;
    }
    kept.unshift(line);
    bytes += size;
  }
  return { text: kept.join("\n"), truncated: true };
}

/** The last `max` bytes of `line`'s UTF-8, starting on a character boundary. */
function lastBytes(line: string, max: number): string {
  const buffer = Buffer.from(line);
  let start = buffer.length - max;
  // Skip UTF-8 continuation bytes (10xxxxxx) so the cut never splits a character.
  while (start < buffer.length && ((buffer[start] as number) & 0xc0) === 0x80) start++;
  return buffer.subarray(start).toString();
}
