/**
 * What the server remembers about requests: records, counters, listeners and waits. Single-threaded
 * and synchronous; the server calls `begin` and `end`, tests read the rest.
 */
import { MockServerError } from "./errors.js";
import type { StepKind } from "./script.js";
import type { MockUsage, WireApi } from "./wire.js";

/**
 * How a request ended:
 * - `completed`: a normal answer was fully sent;
 * - `fault`: a scripted error status, reset, cut or stall was delivered, or `close()` cut the response;
 * - `client_closed`: the client closed the connection before the response finished;
 * - `invalid`: the request was refused with a 4xx (malformed, oversize, unknown route, wrong method).
 */
export type Outcome = "completed" | "fault" | "client_closed" | "invalid";

/** One model request as the server saw it. The server updates `status`, `outcome` and `endedAt` in place. */
export interface MockRequestRecord {
  /** 1, 2, 3, … for the server's lifetime; `reset()` does not restart it. */
  readonly seq: number;
  /** The conversation key; "" for a malformed request. */
  readonly conversation: string;
  readonly api: WireApi;
  readonly stream: boolean;
  /** The model the request named; "" for a malformed request. */
  readonly model?: string;
  /** The key the request carried (Bearer token or `x-api-key`), so tests can tell which key was used. */
  readonly apiKey?: string;
  /** The resolved step; "none" for a malformed request. */
  readonly step: StepKind | "none";
  /** The request's rough size in tokens (4 characters of its `messages` JSON a token); 0 for a malformed request. */
  readonly promptTokens: number;
  /**
   * The reasoning parameters the body carried, by their wire names (`reasoning_effort`,
   * `reasoning`, `thinking`, `output_config`); absent when it carried none.
   */
  readonly reasoning?: Readonly<Record<string, unknown>>;
  /**
   * The token usage the response reported to the client so far, as its SDK adds it up: set by a
   * stream's preamble when it reports one (Anthropic's `message_start`, which a stream that
   * fails later leaves standing), replaced by the end of a stream or a non-streaming answer.
   * Absent when the response reported none (errors, OpenAI streams without `include_usage`).
   */
  readonly usage?: MockUsage;
  /** The tool calls a `tool_calls` answer carries; absent for every other step. */
  readonly toolCalls?: number;
  /** The HTTP status sent, once headers are out; absent for `reset` and for requests closed before headers. */
  readonly status?: number;
  /** Set when the request ends. */
  readonly outcome?: Outcome;
  /** Epoch milliseconds. */
  readonly startedAt: number;
  readonly endedAt?: number;
}

/** Counters since start or the last `reset()`. */
export interface MockStats {
  /** Well-formed model requests, whatever step they got. */
  total: number;
  /** Requests refused with a 4xx: malformed body, oversize, unknown route, wrong method. */
  invalid: number;
  /** Well-formed model requests per conversation key. */
  conversations: Record<string, number>;
  /** Ended requests per outcome; refusals of unknown routes count as `invalid` too. */
  outcomes: Record<Outcome, number>;
  /**
   * The most model requests in flight at once (logged, not yet ended), malformed ones included:
   * what a client-side concurrency limit must keep at or below its limit.
   */
  maxInFlight: number;
}

/** The server's writable view of a record. */
export type MutableRecord = { -readonly [K in keyof MockRequestRecord]: MockRequestRecord[K] };

/** A listener of `request_start` or `request_end`. */
export type RecordListener = (record: MockRequestRecord) => void;

const LOG_LIMIT = 10_000;

/** Records, counters and listeners of one server. */
export class RequestLog {
  readonly #inFlight = new Set<MutableRecord>();
  readonly #listeners = { request_start: new Set<RecordListener>(), request_end: new Set<RecordListener>() };
  #records: MutableRecord[] = [];
  #stats = emptyStats();
  #seq = 0;

  /** The next sequence number; never reused, not even after `reset()`. */
  nextSeq(): number {
    return ++this.#seq;
  }

  /** The last 10 000 records, oldest first; a new array after `reset()`. */
  get records(): readonly MockRequestRecord[] {
    return this.#records;
  }

  /** Counts a well-formed model request for `total` and its conversation. */
  countRequest(conversation: string): void {
    this.#stats.total++;
    this.#stats.conversations[conversation] = (this.#stats.conversations[conversation] ?? 0) + 1;
  }

  /** Counts a refusal that has no record (an unknown route, a wrong method on a control route). */
  countRefusal(): void {
    this.#stats.invalid++;
    this.#stats.outcomes.invalid++;
  }

  /** Logs a record as in flight and emits `request_start`. */
  begin(record: MutableRecord): void {
    this.#inFlight.add(record);
    if (this.#inFlight.size > this.#stats.maxInFlight) this.#stats.maxInFlight = this.#inFlight.size;
    this.#records.push(record);
    if (this.#records.length > LOG_LIMIT) this.#records.splice(0, this.#records.length - LOG_LIMIT);
    this.#emit("request_start", record);
  }

  /** Ends a record once; later calls are ignored. A record begun before the last `reset()` is not counted. */
  end(record: MutableRecord, outcome: Outcome): void {
    if (record.outcome !== undefined) return;
    record.outcome = outcome;
    record.endedAt = Date.now();
    if (this.#inFlight.delete(record)) {
      this.#stats.outcomes[outcome]++;
      if (outcome === "invalid") this.#stats.invalid++;
    }
    this.#emit("request_end", record);
  }

  /** A copy of the counters. */
  stats(): MockStats {
    const { total, invalid, conversations, outcomes, maxInFlight } = this.#stats;
    return { total, invalid, conversations: { ...conversations }, outcomes: { ...outcomes }, maxInFlight };
  }

  /** Well-formed requests whose conversation key contains `match`; all of them without it. */
  requests(match?: string): number {
    if (match === undefined) return this.#stats.total;
    let count = 0;
    for (const [key, n] of Object.entries(this.#stats.conversations)) if (key.includes(match)) count += n;
    return count;
  }

  /** Adds a listener; returns its remover. */
  on(event: "request_start" | "request_end", listener: RecordListener): () => void {
    this.#listeners[event].add(listener);
    return () => this.#listeners[event].delete(listener);
  }

  /** See `MockServer.waitForRequestEnd`. `where` names the server in the timeout message. */
  waitForRequestEnd(
    predicate: (record: MockRequestRecord) => boolean,
    timeoutMs: number,
    since: number | undefined,
    where: string,
  ): Promise<MockRequestRecord> {
    return new Promise((resolve, reject) => {
      try {
        const earlier =
          since === undefined
            ? undefined
            : this.#records.find((r) => r.seq > since && r.endedAt !== undefined && predicate(r));
        if (earlier !== undefined) return resolve(earlier);
      } catch (error) {
        return reject(error);
      }
      const timer = setTimeout(() => {
        off();
        const message = `No model request ended matching the predicate within ${timeoutMs} ms (${this.#inFlight.size} in flight). Check that the request goes to ${where}, or raise timeoutMs.`;
        reject(new MockServerError("ERR_MOCK_SERVER", message));
      }, timeoutMs);
      const off = this.on("request_end", (record) => {
        let matched: boolean;
        try {
          matched = predicate(record);
        } catch (error) {
          clearTimeout(timer);
          off();
          return reject(error);
        }
        if (!matched) return;
        clearTimeout(timer);
        off();
        resolve(record);
      });
    });
  }

  /** Clears counters and records; records still in flight will end uncounted. Listeners stay. */
  reset(): void {
    this.#stats = emptyStats();
    this.#records = [];
    this.#inFlight.clear();
  }

  #emit(event: "request_start" | "request_end", record: MockRequestRecord): void {
    for (const listener of [...this.#listeners[event]]) {
      try {
        listener(record);
      } catch (error) {
        // A test's listener must not break the server's bookkeeping or crash the process.
        process.emitWarning(`A mock server ${event} listener threw: ${String(error)}`, "MockServerWarning");
      }
    }
  }
}

function emptyStats(): MockStats {
  return {
    total: 0,
    invalid: 0,
    conversations: {},
    outcomes: { completed: 0, fault: 0, client_closed: 0, invalid: 0 },
    maxInFlight: 0,
  };
}
