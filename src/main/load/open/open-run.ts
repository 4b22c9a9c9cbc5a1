/**
 * The open model and the sweep, in real time: plays the arrival schedule (arrivals.ts) against
 * the clock, hands each arrival to the conversation pool (conversation-pool.ts), and for a sweep
 * runs its steps (sweep.ts). Measures as the closed model does (load-metrics.ts, timeline.ts)
 * and adds what happened to the arrivals.
 *
 * Timing: one timer waits for the next scheduled arrival; when it fires, every arrival due by
 * then is started, in order. A late timer (a busy event loop) therefore never skips an arrival:
 * it starts late, and the lateness is reported (`totals.arrivals.scheduleLagMs`). When a step's
 * time is up, arrivals still due before its end are started before the step closes.
 */
import { setMaxListeners } from "node:events";
import { performance } from "node:perf_hooks";
import { abortableSleep } from "../../retry/sleep.js";
import type { AgentSession } from "../../session/agent-session.js";
import type { LoadProgress } from "../metrics/load-metrics.js";
import { type MeterOutcome, RunMeter } from "../metrics/run-meter.js";
import { summarize } from "../metrics/stats.js";
import { Timeline } from "../metrics/timeline.js";
import { LOAD_DEFAULTS, type LoadOptions, sliceIndex } from "../options/load-options.js";
import { arrivalStages, OPEN_DEFAULTS } from "../options/open-options.js";
import { conversationTurn } from "../options/prompts-file.js";
import type { Slo } from "../verdicts/slo.js";
import type { ArrivalCounts, ArrivalTotals, SweepReport, SweepStage } from "./arrival-report.js";
import { startRateOf } from "./arrival-report.js";
import { arrivalTimes, profileDurationMs } from "./arrivals.js";
import { ConversationPool, emptyCounts } from "./conversation-pool.js";
import { runSweep, type StepRunner } from "./sweep.js";
import { stepResult } from "./sweep-step.js";

/** What {@link driveOpenRun} resolves with: the closed run's outcome plus the arrivals and the sweep. */
export interface OpenOutcome extends MeterOutcome {
  status: "completed" | "interrupted";
  startedAt: Date;
  endedAt: Date;
  durationMs: number;
  timeline: { intervalMs: number; points: Timeline["points"] };
  loopDelayMs: ReturnType<Timeline["loopDelay"]>;
  arrivals: ArrivalTotals;
  sweep: SweepReport | null;
}

/**
 * Runs `options.arrival` or `options.sweep` with sessions from `open` (the host's createSession
 * with the run's model and key). One session is opened and closed first, so a bad model or key
 * fails once, before any arrival. Aborting `options.signal` ends the run (status `interrupted`).
 * `slo` is `options.slo` as runLoad parsed it: each sweep step's goodput is judged against it.
 * @throws what `open` throws for that first session.
 */
export async function driveOpenRun(
  options: LoadOptions,
  slo: Slo | undefined,
  open: (conversation: number) => Promise<AgentSession>,
): Promise<OpenOutcome> {
  // A first session starts the host's worker, so that the schedule's first arrival does not pay for it.
  await (await open(0)).dispose();
  await options.beforeStart?.();
  return new OpenRun(options, slo, open).drive();
}

/** A drain may last at most this long after a sweep step's schedule, in ms (and at most a step). */
const MAX_DRAIN_MS = 30_000;

class OpenRun implements StepRunner {
  readonly #options: LoadOptions;
  readonly #slo: Slo | undefined;
  readonly #t0 = performance.now();
  readonly #meter = new RunMeter(() => this.#now(), performance.timeOrigin + this.#t0);
  readonly #pool: ConversationPool;
  readonly #stop = new AbortController();
  readonly #steps: ArrivalCounts[] = [];
  #interrupted = false;
  #stage = "starting";
  #nextText = 0;

  constructor(options: LoadOptions, slo: Slo | undefined, open: (conversation: number) => Promise<AgentSession>) {
    this.#options = options;
    this.#slo = slo;
    const thinkTimeMs = options.thinkTimeMs ?? LOAD_DEFAULTS.thinkTimeMs;
    this.#pool = new ConversationPool({
      open,
      meter: this.#meter,
      now: () => this.#now(),
      prompts: options.prompts ?? OPEN_DEFAULTS.promptsPerArrival,
      think: (signal) => (thinkTimeMs > 0 ? this.#sleep(thinkTimeMs, signal) : Promise.resolve(true)),
      text: (conversation, prompt) => this.#text(conversation, prompt),
      cap: options.sessions,
      onCap: options.arrival?.onCap ?? OPEN_DEFAULTS.onCap,
    });
    setMaxListeners(0, this.#stop.signal);
  }

  get interrupted(): boolean {
    return this.#interrupted;
  }

  async drive(): Promise<OpenOutcome> {
    const options = this.#options;
    const startedAt = new Date();
    const sampleIntervalMs = options.sampleIntervalMs ?? LOAD_DEFAULTS.sampleIntervalMs;
    const timeline = new Timeline(this.#meter.metrics.counters);
    timeline.sample(0);
    const sampler = setInterval(() => timeline.sample(this.#now()), sampleIntervalMs);
    const progress =
      options.onProgress === undefined
        ? undefined
        : setInterval(
            () => options.onProgress?.(this.#progress(timeline)),
            options.progressIntervalMs ?? LOAD_DEFAULTS.progressIntervalMs,
          );
    const onSignal = () => {
      this.#interrupted = true;
      this.#meter.runEnded();
      this.#stop.abort();
    };
    if (options.signal?.aborted === true) onSignal();
    else options.signal?.addEventListener("abort", onSignal, { once: true });
    let sweep: SweepReport | null = null;
    try {
      if (options.sweep !== undefined) {
        sweep = await runSweep(this, {
          rates: options.sweep.rates ?? OPEN_DEFAULTS.sweepRates,
          sessions: options.sessions,
        });
      } else if (options.arrival !== undefined) {
        const stages = arrivalStages(options.arrival, options.durationMs);
        this.#stage = "open";
        await this.#step(profileDurationMs(stages), { startRate: startRateOf(options.arrival), stages }, false);
      }
    } finally {
      clearInterval(sampler);
      clearInterval(progress);
      options.signal?.removeEventListener("abort", onSignal);
    }
    const durationMs = this.#now();
    timeline.sample(durationMs);
    timeline.stop();
    options.onProgress?.(this.#progress(timeline, true));
    const totals = emptyCounts();
    for (const counts of this.#steps) {
      for (const key of Object.keys(totals) as (keyof ArrivalCounts)[]) totals[key] += counts[key];
    }
    return {
      status: this.#interrupted ? "interrupted" : "completed",
      startedAt,
      endedAt: new Date(),
      durationMs,
      ...this.#meter.outcome(),
      timeline: { intervalMs: sampleIntervalMs, points: timeline.points },
      loopDelayMs: timeline.loopDelay(),
      arrivals: {
        ...totals,
        scheduleLagMs: summarize(this.#pool.scheduleLagMs),
        capWaitMs: summarize(this.#pool.capWaitMs),
      },
      sweep,
    };
  }

  async closed(kind: "baseline" | "probe", lanes: number): Promise<SweepStage> {
    this.#stage = kind;
    return this.#sweepStep(kind, null, lanes);
  }

  async open(rate: number): Promise<SweepStage> {
    this.#stage = `${rate.toFixed(1)}/s`;
    return this.#sweepStep("rate", rate, rate);
  }

  async #sweepStep(kind: SweepStage["kind"], offeredRate: number | null, load: number): Promise<SweepStage> {
    const stepMs = this.#options.sweep?.stepMs ?? OPEN_DEFAULTS.sweepStepMs;
    const schedule = kind === "rate" ? { startRate: load, stages: [{ durationMs: stepMs, rate: load }] } : load;
    const { counts, startMs, endMs } = await this.#step(stepMs, schedule, true);
    const within = (record: { startMs: number }) => record.startMs >= startMs && record.startMs < endMs;
    return stepResult({
      kind,
      offeredRate,
      startMs,
      durationMs: endMs - startMs,
      scheduleMs: stepMs,
      counts,
      requests: this.#meter.metrics.requests.filter(within),
      prompts: this.#meter.metrics.prompts.filter(within),
      ...(this.#slo === undefined ? {} : { slo: this.#slo }),
    });
  }

  /**
   * One step of `scheduleMs`: arrivals from a schedule (open) or `lanes` back-to-back lanes
   * (closed). With `drain`, open conversations may finish for up to a step (at most
   * {@link MAX_DRAIN_MS}) after the schedule before they are cut; without, they are cut at once.
   */
  async #step(
    scheduleMs: number,
    load: number | { startRate: number; stages: { durationMs: number; rate: number }[] },
    drain: boolean,
  ): Promise<{ counts: ArrivalCounts; startMs: number; endMs: number }> {
    const counts = emptyCounts();
    this.#steps.push(counts);
    const startMs = this.#now();
    this.#pool.beginStep();
    const lanes =
      typeof load === "number" ? Promise.all(Array.from({ length: load }, () => this.#pool.lane(counts))) : undefined;
    const player =
      typeof load === "number"
        ? undefined
        : this.#play(
            arrivalTimes({
              ...load,
              process: this.#options.arrival?.process ?? OPEN_DEFAULTS.process,
              seed: (this.#options.seed ?? LOAD_DEFAULTS.seed) + this.#steps.length - 1,
              phase: this.#options.arrival?.phase ?? 0,
            }),
            startMs,
            counts,
          );
    const full = await this.#sleep(scheduleMs, this.#stop.signal);
    if (full) player?.finish();
    else player?.cancel();
    this.#pool.stopArrivals();
    if (drain && full && this.#pool.inFlight > 0) {
      const drained = new AbortController();
      const until = this.#sleep(
        Math.min(scheduleMs, MAX_DRAIN_MS),
        AbortSignal.any([this.#stop.signal, drained.signal]),
      );
      await Promise.race([this.#pool.idle(), until]);
      drained.abort();
    }
    await this.#pool.endStep();
    await lanes;
    return { counts, startMs, endMs: this.#now() };
  }

  /**
   * Plays `times` (ms from `originMs`): one timer for the next arrival; each tick starts every
   * arrival due by then. `finish` starts those still due before the schedule's end (the step's
   * timer can fire before the last arrival's); `cancel` (an interrupt) drops the rest unplayed.
   */
  #play(times: Iterator<number, void>, originMs: number, counts: ArrivalCounts) {
    let next = times.next();
    let timer: NodeJS.Timeout | undefined;
    const startDue = (until: number) => {
      while (next.done !== true && next.value <= until) {
        this.#pool.arrive(originMs + next.value, counts);
        next = times.next();
      }
    };
    const tick = () => {
      startDue(this.#now() - originMs);
      if (next.done !== true) timer = setTimeout(tick, Math.max(0, next.value - (this.#now() - originMs)));
    };
    tick();
    return {
      finish: () => {
        clearTimeout(timer);
        startDue(Number.POSITIVE_INFINITY);
      },
      cancel: () => clearTimeout(timer),
    };
  }

  /** Sleeps `ms` unless `signal` aborts first; false when it did. */
  async #sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    try {
      await abortableSleep(ms, AbortSignal.any([signal, this.#stop.signal]));
      return true;
    } catch {
      return false;
    }
  }

  #now(): number {
    return performance.now() - this.#t0;
  }

  #text(conversation: number, prompt: number): string {
    const conversations = this.#options.conversations;
    const slice = this.#options.promptSlice;
    if (conversations !== undefined) return conversationTurn(conversations, sliceIndex(slice, conversation), prompt);
    const texts = this.#options.promptTexts;
    if (texts !== undefined && texts.length > 0)
      return texts[sliceIndex(slice, this.#nextText++) % texts.length] as string;
    return `Load test, conversation ${conversation}, prompt ${prompt}: answer in a few words.`;
  }

  /** Live counters, as the closed run's, with the current step. */
  #progress(timeline: Timeline, final = false): LoadProgress {
    const intervalMs = this.#options.sampleIntervalMs ?? LOAD_DEFAULTS.sampleIntervalMs;
    const plan = { plannedPrompts: null, durationMs: plannedMs(this.#options) };
    return { ...this.#meter.progress(timeline, this.#now(), intervalMs, plan, final), stage: this.#stage };
  }
}

/** The run's planned length: the stages', or a sweep's steps at most (it may stop early). */
function plannedMs(options: LoadOptions): number | null {
  if (options.arrival !== undefined) return profileDurationMs(arrivalStages(options.arrival, options.durationMs));
  if (options.sweep === undefined) return null;
  const steps = 2 + (options.sweep.rates ?? OPEN_DEFAULTS.sweepRates);
  return steps * (options.sweep.stepMs ?? OPEN_DEFAULTS.sweepStepMs);
}
