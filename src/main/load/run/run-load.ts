/**
 * `runLoad()`: the library call behind `lifeline load`. It drives `sessions` concurrent sessions,
 * each sending `prompts` prompts one after another (or prompting until `durationMs`), against
 * the built-in mock server or a real model, measures them (load-metrics.ts, timeline.ts), and
 * writes the reports (report-files.ts).
 *
 * The run's sessions are never persisted: the host is created with `sessions: false`. It still
 * reads the settings files and models.json, as any host does, with `settings` over them.
 */
import { setMaxListeners } from "node:events";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { type Api, getEnvApiKey, type Model } from "@mariozechner/pi-ai";
import { LifelineError } from "../../../shared/errors.js";
import { resolveLifelineDir } from "../../config/settings-store.js";
import { RequestSemaphore } from "../../coordination/request-semaphore.js";
import type { SessionHostOptions, SessionOptions } from "../../host/host-options.js";
import { createSessionHost, type SessionHost } from "../../host/session-host.js";
import { abortableSleep } from "../../retry/sleep.js";
import type { AgentSession } from "../../session/agent-session.js";
import type { LoadProgress, PromptRecord, RequestRecord } from "../metrics/load-metrics.js";
import { RunMeter } from "../metrics/run-meter.js";
import { Timeline } from "../metrics/timeline.js";
import { withMockIdleTimeout } from "../mock/mock-idle-timeout.js";
import { type MockTargetStats, startMockTarget } from "../mock/mock-target.js";
import { driveOpenRun } from "../open/open-run.js";
import { checkLoadOptions, LOAD_DEFAULTS, type LoadOptions, sliceIndex } from "../options/load-options.js";
import { loadToolSessionOptions } from "../options/load-tools.js";
import { conversationTurn } from "../options/prompts-file.js";
import { buildReport, type LoadReport } from "../report/load-report.js";
import { reportConfig } from "../report/report-config.js";
import { type ReportFiles, writeReportFiles } from "../report/report-files.js";
import { checkSloOption } from "../verdicts/slo.js";

/** What {@link runLoad} resolves with. */
export interface LoadResult {
  report: LoadReport;
  /** The files written; undefined with `outDir: false`. */
  files: ReportFiles | undefined;
  /** True when every threshold held (also with no thresholds). */
  thresholdsPassed: boolean;
  /** The run's records, as records.jsonl holds them (also with `outDir: false`). */
  requests: readonly RequestRecord[];
  prompts: readonly PromptRecord[];
}

/** Key handed to the built-in mock, which accepts any. */
const MOCK_API_KEY = "lifeline-load";

/**
 * Runs a load test; see the file comment and docs/load.md.
 *
 * Aborting `options.signal` stops the run: prompts in flight are aborted, and the promise
 * resolves with a report whose `status` is `interrupted` (files written as usual).
 * @throws ERR_INVALID_OPTIONS (a bad option, threshold or SLO), ERR_INVALID_SETTINGS,
 *   ERR_INVALID_MODELS, ERR_UNKNOWN_MODEL, ERR_MISSING_API_KEY (before any prompt is sent), and
 *   ERR_LOAD_FAILED when the run itself cannot go on (the mock cannot start, or its thread died).
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const thresholds = checkLoadOptions(options);
  const slo = checkSloOption(
    options.slo,
    thresholds.map((threshold) => threshold.metric),
  );
  const cwd = options.cwd ?? process.cwd();
  const faults = [...(options.faults ?? [])];
  const seed = options.seed ?? LOAD_DEFAULTS.seed;
  const tokenDelayMs = options.mock?.tokenDelayMs ?? LOAD_DEFAULTS.mockTokenDelayMs;
  // Against the mock, a stall must end within the run (mock-idle-timeout.ts), unless the user said otherwise.
  const settings =
    options.model === undefined
      ? await withMockIdleTimeout(options.settings, tokenDelayMs, {
          lifelineDir: options.lifelineDir ?? resolveLifelineDir(),
          cwd,
        })
      : options.settings;
  const target =
    options.model === undefined
      ? await startMockTarget({
          faults,
          seed,
          tokens: options.mock?.tokens ?? LOAD_DEFAULTS.mockTokens,
          tokenDelayMs,
          ...(options.mock?.rateLimit === undefined ? {} : { rateLimit: options.mock.rateLimit }),
          ...(options.mock?.tools === undefined ? {} : { tools: options.mock.tools }),
        })
      : undefined;
  let host: SessionHost | undefined;
  let mockStats: MockTargetStats | null = null;
  try {
    const hostOptions: SessionHostOptions = { cwd, sessions: false };
    if (options.threads !== undefined) hostOptions.threads = options.threads;
    if (options.lifelineDir !== undefined) hostOptions.lifelineDir = options.lifelineDir;
    if (options.workerEntry !== undefined) hostOptions.workerEntry = options.workerEntry;
    if (settings !== undefined) hostOptions.settings = settings;
    if (options.telemetry !== undefined) hostOptions.telemetry = options.telemetry;
    host = createSessionHost(hostOptions);
    const model: string | Model<Api> = target?.model ?? (options.model as string);
    const apiKey = target === undefined ? options.apiKey : MOCK_API_KEY;
    // Load sessions get the load tool when the mock calls it or its behaviour is set.
    const tools = options.tools ?? (options.mock?.tools === undefined ? undefined : {});
    const level = options.thinkingLevel === undefined ? {} : { thinkingLevel: options.thinkingLevel };
    const perSession = (index: number) => ({
      ...level,
      ...(tools === undefined ? {} : loadToolSessionOptions(tools, seed, index)),
    });
    const open = host;
    // The open model and the sweep open a session per arrival (open-run.ts); the closed model all up front.
    const outcome =
      options.arrival === undefined && options.sweep === undefined
        ? await driveClosedRun(
            options,
            await openSessions(host, options.sessions, model, apiKey, options.signal, perSession),
          )
        : await driveOpenRun(options, slo, (index) =>
            open.createSession({
              model,
              sessions: false,
              ...(apiKey === undefined ? {} : { apiKey }),
              ...perSession(index),
            }),
          );
    const watchdogTerminations = host.watchdogTerminations;
    await host.close();
    host = undefined;
    if (target !== undefined) mockStats = await target.close();
    const report = buildReport({
      ...outcome,
      config: reportConfig(options, settings ?? {}),
      watchdogTerminations,
      thresholds,
      mock: mockStats,
      ...(slo === undefined ? {} : { slo }),
      secrets: knownKeys(options),
      tools: outcome.tools,
    });
    const files =
      options.outDir === false
        ? undefined
        : await writeReportFiles(
            options.outDir ?? defaultOutDir(cwd, outcome.startedAt),
            report,
            outcome.requests,
            outcome.prompts,
            { csv: options.csv ?? false },
          );
    return {
      report,
      files,
      thresholdsPassed: report.thresholds.every((threshold) => threshold.passed),
      requests: outcome.requests,
      prompts: outcome.prompts,
    };
  } finally {
    await host?.close();
    if (target !== undefined && mockStats === null) await target.close().catch(() => {});
  }
}

/**
 * The keys the run knows, redacted from the report's failure examples: the mock's, `apiKey`, and
 * the environment key of `model`'s provider. A key from models.json stays the worker's (X6),
 * which redacts it before any error text leaves it.
 */
function knownKeys(options: LoadOptions): string[] {
  const provider = options.model?.split("/")[0];
  const env = provider === undefined ? undefined : getEnvApiKey(provider);
  return [MOCK_API_KEY, options.apiKey, env].filter((key): key is string => key !== undefined && key !== "");
}

/** `lifeline-load-<UTC timestamp>` in `cwd`, the default report folder. */
export function defaultOutDir(cwd: string, at: Date): string {
  const stamp = at
    .toISOString()
    .replace(/\.\d+Z$/, "Z")
    .replace(/[-:]/g, "");
  return join(cwd, `lifeline-load-${stamp}`);
}

/**
 * Opens the run's sessions; the first alone, so a bad model or key fails once, before any prompt.
 * `perSession` adds a session's own options (its load tool).
 */
async function openSessions(
  host: SessionHost,
  count: number,
  model: string | Model<Api>,
  apiKey: string | undefined,
  signal: AbortSignal | undefined,
  perSession: (index: number) => Pick<SessionOptions, "workerModule" | "workerModuleOptions" | "thinkingLevel">,
): Promise<AgentSession[]> {
  const open = (index: number) =>
    host.createSession({ model, sessions: false, ...(apiKey === undefined ? {} : { apiKey }), ...perSession(index) });
  const first = await open(0);
  const rest: Promise<AgentSession>[] = [];
  for (let i = 1; i < count && signal?.aborted !== true; i++) rest.push(open(i));
  return [first, ...(await Promise.all(rest))];
}

/** The closed model: its sessions are open; the load begins once `beforeStart` resolves. */
async function driveClosedRun(options: LoadOptions, sessions: AgentSession[]) {
  await options.beforeStart?.();
  return new LoadRun(options, sessions).drive();
}

/** One run over open sessions: the prompting loops, the clock, the samplers and the stop. */
class LoadRun {
  readonly #options: LoadOptions;
  readonly #sessions: AgentSession[];
  readonly #stop = new AbortController();
  /** `--concurrency`: one permit per prompt in flight, owned by this run; closed when it ends. */
  readonly #permits: RequestSemaphore;
  readonly #t0 = performance.now();
  readonly #meter = new RunMeter(() => performance.now() - this.#t0, performance.timeOrigin + this.#t0);
  #interrupted = false;
  #nextText = 0;

  constructor(options: LoadOptions, sessions: AgentSession[]) {
    this.#options = options;
    this.#sessions = sessions;
    this.#permits = new RequestSemaphore(options.concurrency ?? options.sessions);
    // Every session's ramp-up or think-time sleep listens to the stop signal at once.
    setMaxListeners(0, this.#stop.signal);
  }

  async drive() {
    const options = this.#options;
    const startedAt = new Date();
    const sampleIntervalMs = options.sampleIntervalMs ?? LOAD_DEFAULTS.sampleIntervalMs;
    const timeline = new Timeline(this.#meter.metrics.counters);
    const elapsed = () => performance.now() - this.#t0;
    const unsubscribes = this.#sessions.map((session, index) =>
      session.subscribe((event) => this.#meter.onEvent(index, event)),
    );
    timeline.sample(0);
    const sampler = setInterval(() => {
      const point = timeline.sample(elapsed());
      options.onSample?.({ point, counters: this.#meter.metrics.counters, requests: this.#meter.metrics.requests });
    }, sampleIntervalMs);
    const progress =
      options.onProgress === undefined
        ? undefined
        : setInterval(
            () => options.onProgress?.(this.#progress(elapsed(), timeline)),
            options.progressIntervalMs ?? LOAD_DEFAULTS.progressIntervalMs,
          );
    const deadline = options.durationMs === undefined ? undefined : setTimeout(() => this.#end(), options.durationMs);
    const onSignal = () => {
      this.#interrupted = true;
      this.#end();
    };
    if (options.signal?.aborted === true) onSignal();
    else options.signal?.addEventListener("abort", onSignal, { once: true });
    try {
      await Promise.all(this.#sessions.map((session, index) => this.#loop(session, index)));
    } finally {
      clearInterval(sampler);
      clearInterval(progress);
      clearTimeout(deadline);
      options.signal?.removeEventListener("abort", onSignal);
      for (const unsubscribe of unsubscribes) unsubscribe();
    }
    const durationMs = elapsed();
    timeline.sample(durationMs);
    timeline.stop();
    options.onProgress?.(this.#progress(durationMs, timeline, true));
    return {
      status: this.#interrupted ? ("interrupted" as const) : ("completed" as const),
      startedAt,
      endedAt: new Date(),
      durationMs,
      ...this.#meter.outcome(),
      timeline: { intervalMs: sampleIntervalMs, points: timeline.points },
      loopDelayMs: timeline.loopDelay(),
    };
  }

  /** The run ends (duration over, or interrupted): no new prompt starts, prompts in flight are aborted. */
  #end(): void {
    if (this.#stop.signal.aborted) return;
    this.#meter.runEnded();
    const ended = new LifelineError("ERR_ABORTED", "The load run ended.");
    this.#stop.abort(ended);
    this.#permits.close(ended);
    for (const session of this.#sessions) void session.abort().catch(() => {});
  }

  async #loop(session: AgentSession, index: number): Promise<void> {
    const options = this.#options;
    const stop = this.#stop.signal;
    const rampUpMs = options.rampUpMs ?? LOAD_DEFAULTS.rampUpMs;
    if (rampUpMs > 0 && index > 0 && !(await this.#pause((rampUpMs * index) / options.sessions))) return;
    const thinkTimeMs = options.thinkTimeMs ?? LOAD_DEFAULTS.thinkTimeMs;
    for (let sent = 0; options.prompts === undefined || sent < options.prompts; sent++) {
      if (sent > 0 && thinkTimeMs > 0 && !(await this.#pause(thinkTimeMs))) return;
      if (stop.aborted) return;
      let permit: number;
      try {
        permit = await this.#permits.acquire(this);
      } catch {
        return; // refused: the run ended (the semaphore closed) while this session waited
      }
      if (stop.aborted) {
        this.#permits.release(permit);
        return;
      }
      const text = this.#text(index, sent);
      const start = performance.now() - this.#t0;
      this.#meter.promptStarted(index);
      try {
        const result = await session.prompt(text);
        this.#meter.promptEnded(index, start, { result }, stop.aborted);
      } catch (error) {
        this.#meter.promptEnded(index, start, { error }, stop.aborted);
        // A session given up (ERR_SESSION_CRASHED) or closed takes no more prompts.
        if (session.isClosed) return;
      } finally {
        this.#permits.release(permit);
      }
    }
  }

  /** Sleeps unless the run ends first; false when it ended. */
  async #pause(ms: number): Promise<boolean> {
    try {
      await abortableSleep(ms, this.#stop.signal);
      return true;
    } catch {
      return false;
    }
  }

  #text(session: number, prompt: number): string {
    const conversations = this.#options.conversations;
    const slice = this.#options.promptSlice;
    if (conversations !== undefined) return conversationTurn(conversations, sliceIndex(slice, session), prompt);
    const texts = this.#options.promptTexts;
    if (texts !== undefined && texts.length > 0)
      return texts[sliceIndex(slice, this.#nextText++) % texts.length] as string;
    return `Load test, session ${session}, prompt ${prompt}: answer in a few words.`;
  }

  /** Live counters; `final` gives the whole run's tokens/s instead of the last interval's. */
  #progress(elapsedMs: number, timeline: Timeline, final = false): LoadProgress {
    const options = this.#options;
    return this.#meter.progress(
      timeline,
      elapsedMs,
      options.sampleIntervalMs ?? LOAD_DEFAULTS.sampleIntervalMs,
      {
        plannedPrompts: options.prompts === undefined ? null : options.prompts * options.sessions,
        durationMs: options.durationMs ?? null,
      },
      final,
    );
  }
}
