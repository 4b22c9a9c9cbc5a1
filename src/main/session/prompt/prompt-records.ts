/**
 * A session's prompts given an id (`prompt(text, { id })`, `resumeRun(id)`): what became of each,
 * read back from its stored session when it was resumed and kept up as they settle. An id lets a
 * caller that delivers prompts at least once (a fleet's queue, whose host may die mid-prompt) make
 * each delivery's effect on the transcript happen once: a prompt already answered is not run
 * again, one whose run was interrupted is finished (`resumeRun`), one never stored is sent.
 */
import type { PromptResult } from "../../../shared/events.js";
import type { SessionRecorder } from "../../session-files/session-recorder.js";
import type { PromptRecord } from "../../session-files/session-transcript.js";

export type { PromptRecord } from "../../session-files/session-transcript.js";

/** One session's prompt records; main thread only. */
export class PromptRecords {
  /** Made by the first prompt given an id (P4: most sessions never give one; docs/performance.md). */
  #records: Map<string, PromptRecord> | undefined;
  readonly #recorder: SessionRecorder | undefined;
  /** The last prompt accepted, if it had an id; undefined after a prompt without one. */
  #last: string | undefined;

  /**
   * @param restored the records of the stored session being resumed, if any.
   * @param lastId the id of its last prompt given an id.
   */
  constructor(
    restored: ReadonlyMap<string, PromptRecord> | undefined,
    lastId: string | undefined,
    recorder: SessionRecorder | undefined,
  ) {
    this.#records = restored === undefined || restored.size === 0 ? undefined : new Map(restored);
    this.#last = lastId;
    this.#recorder = recorder;
  }

  /**
   * The id of the last prompt when it was given one and has not settled: its run was cut off (its
   * host stopped, or its entries could not be stored) and the transcript ends in it. A prompt
   * after it would leave it unanswered in the middle, so it is finished first (`resumeRun(id)`).
   */
  get unfinished(): string | undefined {
    const last = this.#last;
    return last !== undefined && this.#records?.get(last)?.result === undefined ? last : undefined;
  }

  /** What became of the prompt `id`; undefined when no prompt of that id was stored. */
  get(id: string): PromptRecord | undefined {
    const record = this.#records?.get(id);
    return record === undefined ? undefined : { ...record };
  }

  /** The prompt `id` was accepted (its user message stored, or sent when not persisted). */
  stored(id: string | undefined): void {
    this.#last = id;
    if (id === undefined) return;
    this.#records ??= new Map();
    if (!this.#records.has(id)) this.#records.set(id, {});
  }

  /** The prompt `id` settled with `result`: kept, and stored as a `lifeline.prompt_end` entry. */
  settled(id: string | undefined, result: PromptResult): void {
    if (id === undefined) return;
    this.#records ??= new Map();
    this.#records.set(id, { result });
    this.#recorder?.promptEnd(id, result);
  }
}
