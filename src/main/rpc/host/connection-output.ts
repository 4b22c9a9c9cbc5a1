/**
 * One host-mode connection's output, bounded (docs/rpc.md, "Flow control"): records go straight
 * to the connection while it keeps up; once a write is refused (the socket's or pipe's buffer is
 * full) they wait in a queue until it drains, and while they wait a session's text and thinking
 * deltas of one content block merge into one (`coalesced`), so a client that reads slowly costs
 * the host one pending delta per streaming block, not one per token. Every other record (a
 * response, a whole message, a tool's result) waits as it is. Everything that waits counts
 * against `maxQueuedBytes`, a waiting delta at an estimate of what it will write (see
 * {@link deltaBytes}); past that bound the connection is given up (`overflow`), never buffered
 * further.
 *
 * Each connection has its own output, so a slow client holds up nothing but itself.
 */
import type { SessionEvent } from "../../../shared/events.js";
import { serializeJsonLine } from "../jsonl.js";
import type { HostEvent } from "./host-protocol.js";

/** Where a connection's bytes go: a socket, or the process's stdout. */
export interface OutputSink {
  /** Writes `chunk`; false when the sink's buffer is full (a `drain` will follow). */
  write(chunk: string): boolean;
  /** Calls `listener` once, at the sink's next `drain`. */
  onceDrain(listener: () => void): void;
}

/** Limits of a {@link ConnectionOutput}. */
export interface OutputLimits {
  /** Bytes of records that may wait while the client is behind (deltas estimated); past it, `overflow`. @default 64 MiB */
  maxQueuedBytes?: number;
}

/** What a connection that was behind reports when it has caught up (see {@link ConnectionOutput}). */
export interface CatchUpReport {
  /** From the first refused write to the drain that emptied the queue. */
  behindMs: number;
  /** The most bytes that waited at once (deltas estimated). */
  peakQueuedBytes: number;
  /** Deltas merged into others while it was behind. */
  coalesced: number;
}

/** What a {@link ConnectionOutput} tells its owner. */
export interface OutputListeners {
  /** Called once when what waits passes the bound; the owner closes the connection. */
  overflow(queuedBytes: number): void;
  /** Called each time the client has caught up after being behind. */
  caughtUp?(report: CatchUpReport): void;
}

/** 64 MiB: room for a few thousand whole replies, well under a host's memory. */
const DEFAULT_MAX_QUEUED_BYTES = 64 * 1024 * 1024;
/** Queued records are written in chunks of about this many bytes. */
const CHUNK_BYTES = 256 * 1024;

/** A record waiting for the client: a line, or a delta still open to merging (serialized when written). */
interface Queued {
  sessionId: string;
  line?: string;
  delta?: DeltaEvent;
  /** What it counts for in `#queuedBytes`: a line's length, a delta's {@link deltaBytes}. */
  bytes: number;
}

/** See the module comment. */
export class ConnectionOutput {
  readonly #sink: OutputSink;
  readonly #maxQueuedBytes: number;
  readonly #listeners: OutputListeners;
  /** Each session's last `seq` on this connection. */
  readonly #seq = new Map<string, number>();
  #queue: Queued[] = [];
  /** Index into #queue of the next record to write. */
  #head = 0;
  #queuedBytes = 0;
  /** Each session's last queued record, while it is an open delta (the only one a new delta may merge into). */
  readonly #openDelta = new Map<string, Queued>();
  /** A write was refused and its drain has not come. */
  #behind = false;
  #closed = false;
  /** Deltas merged since the connection opened (for tests and diagnostics). */
  #coalescedTotal = 0;
  /** Since when, and from which merge count, the current stretch behind runs; its peak bytes. */
  #behindSince = 0;
  #coalescedBefore = 0;
  #peakQueuedBytes = 0;

  constructor(sink: OutputSink, limits: OutputLimits, listeners: OutputListeners) {
    this.#sink = sink;
    this.#maxQueuedBytes = limits.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
    this.#listeners = listeners;
  }

  /** Whether records are waiting for the client. */
  get behind(): boolean {
    return this.#behind;
  }

  /** Bytes of records waiting (a delta's estimated, see {@link deltaBytes}). */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /** Deltas merged into others so far. */
  get coalescedTotal(): number {
    return this.#coalescedTotal;
  }

  /** Writes a record that belongs to no session's event stream (a response). */
  record(value: object): void {
    this.#push("", serializeJsonLine(value));
  }

  /** Writes `event` of session `sessionId`, with its envelope. */
  event(sessionId: string, event: SessionEvent): void {
    if (this.#closed) return;
    const seq = (this.#seq.get(sessionId) ?? 0) + 1;
    this.#seq.set(sessionId, seq);
    const enveloped = { ...event, sessionId, seq } as HostEvent;
    if (this.#behind && isDelta(enveloped)) {
      const open = this.#openDelta.get(sessionId);
      if (open?.delta !== undefined && merge(open.delta, enveloped)) {
        this.#coalescedTotal++;
        const bytes = deltaBytes(open.delta);
        const growth = bytes - open.bytes;
        open.bytes = bytes;
        this.#count(growth);
        return;
      }
      const queued: Queued = { sessionId, delta: enveloped, bytes: deltaBytes(enveloped) };
      this.#openDelta.set(sessionId, queued);
      this.#queue.push(queued);
      this.#count(queued.bytes);
      return;
    }
    this.#push(sessionId, serializeJsonLine(enveloped));
  }

  /**
   * Drops the sequence count of a session that left this connection, and closes its waiting delta
   * to merging: if the session comes back, its events count from 1 again and never merge into a
   * record of its earlier stay.
   */
  forget(sessionId: string): void {
    this.#seq.delete(sessionId);
    this.#openDelta.delete(sessionId);
  }

  /** Stops writing; what waits is dropped (the connection is gone). */
  close(): void {
    this.#closed = true;
    this.#queue = [];
    this.#head = 0;
    this.#queuedBytes = 0;
    this.#openDelta.clear();
  }

  #push(sessionId: string, line: string): void {
    if (this.#closed) return;
    if (!this.#behind) {
      if (!this.#sink.write(line)) this.#wait();
      return;
    }
    this.#openDelta.delete(sessionId);
    this.#queue.push({ sessionId, line, bytes: line.length });
    this.#count(line.length);
  }

  /** Adds `bytes` to what waits; past the bound, gives the connection up (once: it is closed then). */
  #count(bytes: number): void {
    this.#queuedBytes += bytes;
    if (this.#queuedBytes > this.#peakQueuedBytes) this.#peakQueuedBytes = this.#queuedBytes;
    if (this.#queuedBytes <= this.#maxQueuedBytes) return;
    const queued = this.#queuedBytes;
    this.close();
    this.#listeners.overflow(queued);
  }

  #wait(): void {
    this.#behind = true;
    this.#behindSince = performance.now();
    this.#coalescedBefore = this.#coalescedTotal;
    this.#peakQueuedBytes = 0;
    this.#sink.onceDrain(() => this.#flush());
  }

  /** Writes what waits, in chunks, until the sink refuses again or the queue is empty. */
  #flush(): void {
    if (this.#closed) return;
    while (this.#head < this.#queue.length) {
      let chunk = "";
      while (this.#head < this.#queue.length && chunk.length < CHUNK_BYTES) {
        const queued = this.#queue[this.#head++] as Queued;
        this.#queuedBytes -= queued.bytes;
        if (queued.line !== undefined) {
          chunk += queued.line;
        } else if (queued.delta !== undefined) {
          if (this.#openDelta.get(queued.sessionId) === queued) this.#openDelta.delete(queued.sessionId);
          chunk += serializeJsonLine(queued.delta);
        }
      }
      if (!this.#sink.write(chunk)) {
        this.#compact();
        this.#sink.onceDrain(() => this.#flush());
        return;
      }
    }
    this.#queue = [];
    this.#head = 0;
    this.#behind = false;
    this.#listeners.caughtUp?.({
      behindMs: performance.now() - this.#behindSince,
      peakQueuedBytes: this.#peakQueuedBytes,
      coalesced: this.#coalescedTotal - this.#coalescedBefore,
    });
  }

  /** Drops the written head of the queue, so a long stall does not keep it. */
  #compact(): void {
    if (this.#head < 1024 && this.#head * 2 < this.#queue.length) return;
    this.#queue = this.#queue.slice(this.#head);
    this.#head = 0;
  }
}

type DeltaEvent = HostEvent & {
  type: "message_update";
  assistantMessageEvent: { type: "text_delta" | "thinking_delta"; contentIndex: number; delta: string };
};

/** A text or thinking delta: the only records that merge. */
function isDelta(event: HostEvent): event is DeltaEvent {
  if (event.type !== "message_update") return false;
  const inner = event.assistantMessageEvent.type;
  return inner === "text_delta" || inner === "thinking_delta";
}

/**
 * Merges `next` into `open` when both are deltas of the same block: the text appends, the newest
 * message snapshot and `seq` win, and `coalesced` counts the deltas `open` now stands for.
 */
function merge(open: DeltaEvent, next: DeltaEvent): boolean {
  const a = open.assistantMessageEvent;
  const b = next.assistantMessageEvent;
  if (a.type !== b.type || a.contentIndex !== b.contentIndex) return false;
  open.assistantMessageEvent = { ...b, delta: a.delta + b.delta };
  open.message = next.message;
  open.coalesced = (open.coalesced ?? 1) + 1;
  open.seq = next.seq;
  return true;
}

/** Bytes of a record's fixed part (type, ids, `seq`, field names), over-estimated. */
const RECORD_OVERHEAD_BYTES = 256;

/**
 * What a waiting delta will write, estimated without serializing it (a merge would otherwise cost
 * the whole answer so far, per token): its delta text, plus its message snapshot twice (the event
 * carries it as `message` and as `assistantMessageEvent.partial`), each counted as the lengths of
 * the string fields of its content blocks plus {@link RECORD_OVERHEAD_BYTES} per block. Characters
 * are counted as bytes: text that needs escaping or is not ASCII writes more.
 */
function deltaBytes(event: DeltaEvent): number {
  let snapshot = RECORD_OVERHEAD_BYTES;
  const content = (event.message as { content?: unknown }).content;
  if (Array.isArray(content)) {
    for (const block of content as unknown[]) {
      snapshot += RECORD_OVERHEAD_BYTES;
      if (typeof block !== "object" || block === null) continue;
      for (const value of Object.values(block)) if (typeof value === "string") snapshot += value.length;
    }
  }
  return RECORD_OVERHEAD_BYTES + event.assistantMessageEvent.delta.length + 2 * snapshot;
}
