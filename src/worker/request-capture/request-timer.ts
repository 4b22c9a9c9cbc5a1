/**
 * Stamps one session's model request where its moments happen (see shared/request-timing.ts):
 * request-capture.ts marks the model call, its HTTP request and its response; the session's agent
 * listener marks each streamed delta and the reply's end. A session has at most one model request
 * in flight, so the timer holds one request at a time.
 *
 * Cost: one clock read and one array push per delta, on the worker; nothing crosses the port until
 * the reply's `message_end`, which carries the result.
 */
import { epochNow, type RequestTiming, roundMicros } from "../../shared/request-timing.js";

/** One session's request timer; see the file comment. */
export class RequestTimer {
  /** Epoch ms of the model call, replaced by its first HTTP request's; undefined between requests. */
  #start: number | undefined;
  #fetched = false;
  #firstByte: number | undefined;
  #firstToken: number | undefined;
  /** `performance.now()` of the latest delta, for the gaps (one clock, no epoch conversion). */
  #lastChunk = 0;
  #gaps: number[] = [];
  #chunks = 0;

  /** The stream function was called: a new model request begins (the fallback start, without fetch). */
  call(): void {
    this.#start = epochNow();
    this.#fetched = false;
    this.#firstByte = undefined;
    this.#firstToken = undefined;
    this.#gaps = [];
    this.#chunks = 0;
  }

  /**
   * True while a model call is in progress whose HTTP request has gone out: the server has it, so
   * cutting it now cannot leave a request the session started but the server never saw.
   */
  get sent(): boolean {
    return this.#start !== undefined && this.#fetched;
  }

  /** An HTTP request of the call goes out; the first one is the request's start (an SDK retry keeps it). */
  fetching(): void {
    if (this.#start === undefined || this.#fetched) return;
    this.#fetched = true;
    this.#start = epochNow();
  }

  /** An HTTP response's status and headers arrived (the latest one wins: it is the one streamed). */
  responded(): void {
    if (this.#start !== undefined) this.#firstByte = epochNow();
  }

  /** A streamed text, thinking or tool-call delta was parsed. */
  chunk(): void {
    if (this.#start === undefined) return;
    const now = performance.now();
    if (this.#chunks === 0) this.#firstToken = roundMicros(performance.timeOrigin + now);
    else this.#gaps.push(roundMicros(now - this.#lastChunk));
    this.#lastChunk = now;
    this.#chunks++;
  }

  /**
   * The reply ended: the request's timing, and the timer is empty again. Undefined when no model
   * call began since the last end (a reply the agent made without calling the provider).
   */
  end(): RequestTiming | undefined {
    const start = this.#start;
    if (start === undefined) return undefined;
    this.#start = undefined;
    const timing: RequestTiming = {
      requestStartMs: start,
      endMs: epochNow(),
      chunks: this.#chunks,
      chunkGapsMs: this.#gaps,
    };
    if (this.#firstByte !== undefined) timing.firstByteMs = this.#firstByte;
    if (this.#firstToken !== undefined) timing.firstTokenMs = this.#firstToken;
    this.#gaps = [];
    return timing;
  }
}
