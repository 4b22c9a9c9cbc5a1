/**
 * A session's compactions (R1 on an overflow, pi's threshold, `compact()`): the in-progress
 * state, cutting the transcript, asking the worker for the summary (a `summarize` run),
 * installing and recording the result, and the `compaction_start`/`compaction_end` events.
 * The session's prompt runner and its runs decide when one runs; what follows it (a continued
 * prompt, settling) goes through the {@link CompactionTarget} the runner implements. What a
 * compaction marks on a prompt is kept here, by prompt.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { AssistantMessage } from "@mariozechner/pi-ai";
import { planCompaction, planKeepingAll } from "../../shared/compaction/plan.js";
import { summaryMessage } from "../../shared/compaction/summary-message.js";
import type { SummaryRequest } from "../../shared/compaction/summary-prompt.js";
import { contextTokens, estimateAll, overThreshold } from "../../shared/compaction/tokens.js";
import type { CompactionReason, CompactionResult, SessionEvent } from "../../shared/events.js";
import { isFailedStop } from "../../shared/failures/classify.js";
import { errorText } from "../../shared/failures/error-text.js";
import type { CompactionSettings } from "../../shared/settings/settings.js";
import type { BatchItem } from "../../shared/wire/protocol.js";
import type { SessionRecorder } from "../session-files/session-recorder.js";
import { type ContextOverflowHook, hookTranscript } from "./context-overflow-hook.js";
import { EntryIds } from "./entry-ids.js";

/** How a compaction ended, for its `compaction_end`. */
export interface CompactionOutcome {
  result: CompactionResult | null;
  aborted: boolean;
  errorMessage?: string;
}

/** How a `summarize` run ended. */
export type SummaryEnd = { summary: string } | { aborted: true } | { error: string };

/**
 * The session's live prompt as a compaction sees it: compared by identity (a compaction outlives
 * no change of prompt) and read for its latest reply. What a compaction marks on a prompt (that
 * it was compacted, that it went on after an overflow) is kept here, by prompt, not on the prompt.
 */
export interface CompactingPrompt {
  /** The prompt's latest reply. */
  readonly lastAssistant: AssistantMessage | undefined;
}

/**
 * The session's prompt lifecycle as a compaction drives it. Declared here, implemented by the
 * session's prompt runner (a layer above, which this one may not import).
 */
export interface CompactionTarget {
  isClosed(): boolean;
  /** The session's live prompt, if any. */
  livePrompt(): CompactingPrompt | undefined;
  /** Posts a `continue` run of the live prompt (it goes on after an overflow compaction). */
  continueRun(): void;
  /** Settles the live prompt if nothing of it is left. */
  maybeSettle(): void;
  /** Posts a `summarize` run; the session reports its end through {@link SessionCompaction.endSummary}. */
  startSummaryRun(request: SummaryRequest): void;
}

/** The session's transcript on main as a compaction reads and replaces it (its `TranscriptMirror`). */
export interface CompactionTranscript {
  /** The runtime transcript, read at each use (replaced by {@link install}). */
  readonly messages: AgentMessage[];
  /** The session's history, the live array (never replaced). */
  readonly history: readonly AgentMessage[];
  /** Installs a transcript in the mirror and the worker; a worker death meanwhile is no failure (X7). */
  install(messages: AgentMessage[]): Promise<void>;
  /** Takes the overflowed reply off the transcript, the mirror's and the worker's. */
  removeFailed(): Promise<void>;
  /** Puts the overflowed reply back when nothing was compacted. */
  restoreFailed(message: AssistantMessage): Promise<void>;
}

/** What a compaction needs of its session: its parts behind narrow interfaces, never the session itself. */
export interface CompactionHost {
  readonly sessionId: string;
  /** The host's `onContextOverflow`: replaces lifeline's summary on an overflow. */
  readonly overflowHook: ContextOverflowHook | undefined;
  readonly recorder: SessionRecorder | undefined;
  /** The session's compaction settings now (`setAutoCompactionEnabled` changes them). */
  settings(): CompactionSettings;
  /** The session's model's context window now. */
  contextWindow(): number;
  /** The session's prompt lifecycle. */
  readonly prompts: CompactionTarget;
  readonly transcript: CompactionTranscript;
  /** Where `compaction_start`/`compaction_end` go (the session's listeners). */
  readonly events: { emit(event: SessionEvent): void };
}

/** One session's compactions; at most one is in progress (the session is busy meanwhile). */
export class SessionCompaction {
  readonly #host: CompactionHost;
  readonly #prompts: CompactionTarget;
  readonly #transcript: CompactionTranscript;
  /** Made by the first compaction that names a kept message (P4: idle sessions keep none; docs/performance.md). */
  #ids: EntryIds | undefined;
  #reason: CompactionReason | undefined;
  #aborted = false;
  /**
   * Prompts a compaction ran for: the threshold is not checked again before they settle. Made by
   * the first compaction, as is `#continued` (P4: a session that never compacts keeps neither).
   */
  #compacted: WeakSet<CompactingPrompt> | undefined;
  /** Prompts that went on after an overflow compaction: a second overflow does not continue them. */
  #continued: WeakSet<CompactingPrompt> | undefined;
  /** Waits for the `run_end` of the active `summarize` run. */
  #summaryWaiter: ((end: SummaryEnd) => void) | undefined;
  /** The history's length when the last compaction installed its transcript: nothing came after it while equal. */
  #compactedAt = -1;

  constructor(host: CompactionHost) {
    this.#host = host;
    this.#prompts = host.prompts;
    this.#transcript = host.transcript;
  }

  /** The reason of the compaction in progress; undefined when none is. */
  get reason(): CompactionReason | undefined {
    return this.#reason;
  }

  /**
   * abort() came during the last compaction: it does not go on to a continued prompt. Reset when
   * the next one starts.
   */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** The session's abort(): a compaction in progress ends as aborted (its summary run is aborted by the session). */
  abort(): void {
    if (this.#reason !== undefined) this.#aborted = true;
  }

  /**
   * `compact()`: a summary now, with the caller's instructions, as pi's explicit compaction makes
   * it: a transcript within `keepRecentTokens` is compacted too (its summary covers nothing new,
   * and every message is kept). As in pi, it fails ("Already compacted") when nothing came after
   * the session's last compaction. Never rejects.
   */
  manual(customInstructions: string | undefined): Promise<CompactionOutcome> {
    return this.#run("manual", async () => {
      if (this.#compactedAt === this.#transcript.history.length) {
        return {
          result: null,
          aborted: false,
          errorMessage: "Already compacted: nothing was added since the last compaction. Prompt first, then compact.",
        };
      }
      return this.#summarizeTranscript("manual", customInstructions);
    });
  }

  /**
   * pi's threshold compaction, just before `pending` settles: when its context leaves less than
   * `reserveTokens` (see {@link thresholdDue}), starts one and returns true; the session settles
   * the prompt once it is over (through `maybeSettle`).
   */
  startThresholdIfDue(pending: CompactingPrompt): boolean {
    if (!this.thresholdDue(pending.lastAssistant, this.#compacted?.has(pending) === true)) return false;
    this.#markCompacted(pending);
    void this.#threshold();
    return true;
  }

  /**
   * R1: an overflow is never retried; it is compacted (by the host's hook, else by a summary from
   * the session's model) and the live prompt goes on once with the compacted transcript, else
   * settles. Nothing happens without a hook when compaction is off. Never rejects.
   */
  async afterOverflow(message: AssistantMessage): Promise<void> {
    const prompts = this.#prompts;
    const hook = this.#host.overflowHook;
    if (hook === undefined && !this.#host.settings().enabled) return;
    const pending = prompts.livePrompt();
    const outcome = await this.#overflow(message, hook);
    if (prompts.isClosed()) return;
    const messages = this.#transcript.messages;
    const willRetry =
      outcome.result !== null &&
      pending !== undefined &&
      prompts.livePrompt() === pending &&
      this.#continued?.has(pending) !== true &&
      !this.#aborted &&
      canContinueFrom(messages[messages.length - 1]);
    if (pending !== undefined) this.#markCompacted(pending);
    this.end("overflow", outcome, willRetry);
    if (willRetry && pending !== undefined) {
      this.#continued ??= new WeakSet();
      this.#continued.add(pending);
      prompts.continueRun();
      return;
    }
    prompts.maybeSettle();
  }

  async #threshold(): Promise<void> {
    const outcome = await this.#run("threshold", () => this.#summarizeTranscript("threshold"));
    if (this.#prompts.isClosed()) return;
    this.end("threshold", outcome, false);
    this.#prompts.maybeSettle();
  }

  /**
   * The overflowed reply `message` is compacted away, by the host's hook if there is one, else by
   * a summary. Never rejects (a hook that throws is a failed compaction).
   */
  #overflow(message: AssistantMessage, hook: ContextOverflowHook | undefined): Promise<CompactionOutcome> {
    return this.#run("overflow", async () => {
      if (hook !== undefined) return this.#hookCompaction(hook, message);
      await this.#transcript.removeFailed();
      const compacted = await this.#summarizeTranscript("overflow");
      // Nothing changed: the transcript keeps its record of the failure (as after a cancelled chain).
      if (compacted.result === null) await this.#transcript.restoreFailed(message);
      return compacted;
    });
  }

  /** Emits the `compaction_end` of a compaction that ended with `outcome`. */
  end(reason: CompactionReason, outcome: CompactionOutcome, willRetry: boolean): void {
    this.#host.events.emit({
      type: "compaction_end",
      reason,
      result: outcome.result,
      aborted: outcome.aborted,
      willRetry,
      ...(outcome.errorMessage === undefined ? {} : { errorMessage: outcome.errorMessage }),
    });
  }

  /** The active `summarize` run ended (its run_end, a refused start, the worker's death, close). */
  endSummary(end: SummaryEnd): void {
    const waiter = this.#summaryWaiter;
    this.#summaryWaiter = undefined;
    waiter?.(end);
  }

  /**
   * Threshold compaction (pi's): due after a successful prompt (last reply `last`) whose context
   * leaves less than `reserveTokens`, unless the prompt was compacted already.
   */
  thresholdDue(last: AssistantMessage | undefined, compacted: boolean): boolean {
    const settings = this.#host.settings();
    if (!settings.enabled || compacted || last === undefined || isFailedStop(last.stopReason)) return false;
    return overThreshold(contextTokens(this.#transcript.messages), this.#host.contextWindow(), settings.reserveTokens);
  }

  /** Marks a compaction in progress for `reason` (synchronously), emits `compaction_start`, runs `work`. */
  async #run(reason: CompactionReason, work: () => Promise<CompactionOutcome>): Promise<CompactionOutcome> {
    this.#reason = reason;
    this.#aborted = false;
    this.#host.events.emit({ type: "compaction_start", reason });
    try {
      return await work();
    } catch (error) {
      return { result: null, aborted: false, errorMessage: errorText(error) };
    } finally {
      this.#reason = undefined;
    }
  }

  /**
   * lifeline's compaction: the session's model summarizes everything older than the newest
   * `keepRecentTokens` (in the worker, as a `summarize` run), and the summary replaces it in the
   * transcript, the worker's and the session file's. An overflow with too little to cut by that
   * rule keeps only the newest turn.
   */
  async #summarizeTranscript(reason: CompactionReason, customInstructions?: string): Promise<CompactionOutcome> {
    const settings = this.#host.settings();
    const messages = this.#transcript.messages;
    const tokensBefore = contextTokens(messages);
    // Automatic compactions keep their rule: nothing older than the kept part, nothing to do (an
    // overflow then keeps only the newest turn). An explicit one does what pi's does.
    const plan =
      planCompaction(messages, settings.keepRecentTokens) ??
      (reason === "overflow"
        ? planCompaction(messages, 0)
        : reason === "manual"
          ? planKeepingAll(messages)
          : undefined);
    if (plan === undefined) {
      return {
        result: null,
        aborted: false,
        errorMessage: `Nothing to compact: the transcript (about ${tokensBefore} tokens) is within compaction.keepRecentTokens (${settings.keepRecentTokens}).`,
      };
    }
    const request: SummaryRequest = { messages: plan.summarize };
    if (plan.previousSummary !== undefined) request.previousSummary = plan.previousSummary;
    if (customInstructions !== undefined) request.customInstructions = customInstructions;
    const maxTokens = Math.floor(settings.reserveTokens * 0.8);
    if (maxTokens > 0) request.maxTokens = maxTokens;
    const end = await this.#summarize(request);
    if ("aborted" in end) return { result: null, aborted: true };
    if ("error" in end) return { result: null, aborted: false, errorMessage: end.error };
    if (this.#aborted) return { result: null, aborted: true };
    const [firstKept] = plan.kept;
    const ids = this.#entryIds();
    const firstKeptEntryId = firstKept === undefined ? ids.fresh() : ids.of(firstKept);
    const compacted = [summaryMessage(end.summary, tokensBefore, Date.now()), ...plan.kept];
    await this.#transcript.install(compacted);
    this.#compactedAt = this.#transcript.history.length;
    const result: CompactionResult = {
      summary: end.summary,
      firstKeptEntryId,
      tokensBefore,
      tokensAfter: estimateAll(compacted),
    };
    this.#host.recorder?.compaction({ ...result });
    return { result, aborted: false };
  }

  /**
   * A host's own compaction. An answer `{ messages }` is installed; it is stored as pi's
   * compaction entry whose summary is the text of the messages the hook added, kept from the
   * first message it kept from the old transcript.
   */
  async #hookCompaction(hook: ContextOverflowHook, message: AssistantMessage): Promise<CompactionOutcome> {
    const before = this.#transcript.messages;
    const tokensBefore = contextTokens(before);
    const answer = await hook({
      sessionId: this.#host.sessionId,
      errorMessage: message.errorMessage ?? "context overflow",
      messages: before,
    });
    const hooked = hookTranscript(answer, before);
    if (hooked === undefined) return { result: null, aborted: false };
    const { messages, firstKept, summary } = hooked;
    await this.#transcript.install(messages);
    this.#compactedAt = this.#transcript.history.length;
    const ids = this.#entryIds();
    const firstKeptEntryId = firstKept === undefined ? ids.fresh() : ids.of(firstKept);
    const result: CompactionResult = { summary, firstKeptEntryId, tokensBefore, tokensAfter: estimateAll(messages) };
    this.#host.recorder?.compaction({ ...result, fromHook: true });
    return { result, aborted: false };
  }

  /** Runs a `summarize` run in the worker and waits for its end. Never rejects. */
  /** A compaction ran for `pending`: the threshold is not checked again before it settles. */
  #markCompacted(pending: CompactingPrompt): void {
    this.#compacted ??= new WeakSet();
    this.#compacted.add(pending);
  }

  /** The session's entry ids, made at first use and kept (a message's local id is stable for its life). */
  #entryIds(): EntryIds {
    this.#ids ??= new EntryIds(this.#host.recorder, this.#transcript.history);
    return this.#ids;
  }

  #summarize(request: SummaryRequest): Promise<SummaryEnd> {
    // abort() came before the summary run could start: there is nothing to cancel in the worker.
    if (this.#aborted) return Promise.resolve({ aborted: true });
    return new Promise<SummaryEnd>((resolve) => {
      this.#summaryWaiter = resolve;
      this.#prompts.startSummaryRun(request);
    });
  }
}

/** pi-agent-core continues only from a user message or a tool result. */
function canContinueFrom(message: AgentMessage | undefined): boolean {
  return message?.role === "user" || message?.role === "toolResult";
}

/** How a `summarize` run's `run_end` reads as its end. */
export function summaryEndOf(item: Extract<BatchItem, { type: "run_end" }>): SummaryEnd {
  if (item.summary !== undefined) return { summary: item.summary };
  if (item.aborted === true) return { aborted: true };
  return { error: item.error?.message ?? "The summary request ended without a summary." };
}
