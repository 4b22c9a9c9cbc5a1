/**
 * The appends of one session file, batched and written off the host's critical path.
 *
 * `append(lines)` only queues the lines and returns (batched-appends.ts); one write at a time runs
 * through the libuv thread pool (`FileHandle.write`, never `appendFileSync` on the main thread),
 * taking every line queued meanwhile as one batch. A caller that needs the line durable
 * (write-ahead of a prompt) awaits the promise, which resolves once its batch is written and
 * synced as `fsync` says. A write that fails fails the queue for good with ERR_SESSION_FILE.
 */
import type { FileHandle } from "node:fs/promises";
import { LifelineError } from "../../shared/errors.js";
import { BatchedAppends } from "./batched-appends.js";

/**
 * When the data reaches the disk:
 * - `never`: written to the OS only; survives the host process being killed, not a power loss.
 * - `batch`: one `fdatasync` after each batch write; a prompt is sent only after its sync.
 * - `always`: each line written and synced on its own (slowest; for tests of the disk itself).
 */
export type FsyncPolicy = "never" | "batch" | "always";

/** Queued appends to one open file (opened for append by the caller). */
export class PersistenceQueue {
  readonly #handle: FileHandle;
  readonly #file: string;
  readonly #fsync: FsyncPolicy;
  readonly #appends: BatchedAppends<string>;
  /** A torn last line ends without a newline: the first write starts a fresh line. */
  #needsNewline: boolean;

  /** `needsNewline`: the file's last byte is not a newline (see session-reader.ts). */
  constructor(handle: FileHandle, file: string, fsync: FsyncPolicy, needsNewline: boolean) {
    this.#handle = handle;
    this.#file = file;
    this.#fsync = fsync;
    this.#needsNewline = needsNewline;
    this.#appends = new BatchedAppends({
      store: (lines) => this.#write(lines),
      failure: (error) =>
        new LifelineError(
          "ERR_SESSION_FILE",
          `Could not append to session file ${this.#file}: ${String(error)}. Later entries of this session are not saved; check the disk and start a new session.`,
          { cause: error },
        ),
      closed: () =>
        new LifelineError("ERR_SESSION_FILE", `Session file ${this.#file} is closed; nothing more is written to it.`),
    });
  }

  /**
   * Queues complete lines (each ending in "\n"). Resolves when they are written (and synced, per
   * policy); rejects with ERR_SESSION_FILE if the write fails or the queue is closed or failed.
   * `lazy` lines (nobody waits for them) may wait up to 50 ms to go out in one write with what
   * follows (batched-appends.ts).
   */
  append(lines: readonly string[], lazy = false): Promise<void> {
    return this.#appends.append(lines, lazy);
  }

  /** Resolves when everything queued so far is written (or has failed). Never rejects. */
  flush(): Promise<void> {
    return this.#appends.flush();
  }

  /** Flushes, then closes the file. Later appends reject. Idempotent. */
  async close(): Promise<void> {
    this.#appends.close();
    await this.flush();
    await this.#handle.close().catch(() => {});
  }

  async #write(lines: string[]): Promise<void> {
    await ioSlots.acquire();
    try {
      await this.#writeNow(lines);
    } finally {
      ioSlots.release();
    }
  }

  async #writeNow(lines: string[]): Promise<void> {
    const prefix = this.#needsNewline ? "\n" : "";
    if (this.#fsync === "always") {
      for (const [index, line] of lines.entries()) {
        await writeAll(this.#handle, (index === 0 ? prefix : "") + line);
        this.#needsNewline = false;
        await this.#handle.datasync();
      }
      return;
    }
    await writeAll(this.#handle, prefix + lines.join(""));
    this.#needsNewline = false;
    if (this.#fsync === "batch") await this.#handle.datasync();
  }
}

/** Writes all of `text` (a write may be partial). The file is open in append mode. */
async function writeAll(handle: FileHandle, text: string): Promise<void> {
  let buffer = Buffer.from(text, "utf8");
  while (buffer.length > 0) {
    const { bytesWritten } = await handle.write(buffer, 0, buffer.length);
    buffer = buffer.subarray(bytesWritten);
  }
}

/**
 * The file operations of every session queue of the process share a few slots. libuv runs them on
 * its thread pool, and on a host with few cores a burst of writes and syncs from many sessions at
 * once takes CPU time from the main thread (its event loop stalls while runnable). A session's
 * writes are already batched, so queueing them behind a couple of others costs little latency.
 */
class Slots {
  readonly #max: number;
  #used = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(max: number) {
    this.#max = max;
  }

  acquire(): Promise<void> {
    if (this.#used < this.#max) {
      this.#used++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next !== undefined) next();
    else this.#used--;
  }
}

const ioSlots = new Slots(2);
