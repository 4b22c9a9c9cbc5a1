/**
 * `lifeline load`'s flags, as commander hands them over (strings), turned into {@link LoadOptions}.
 * Every refusal is ERR_INVALID_OPTIONS naming the flag, the value and what is allowed, so the
 * command can exit 2 with that message.
 */
import { resolve } from "node:path";
import { LifelineError } from "../../shared/errors.js";
import type { SettingsInput } from "../../shared/settings.js";
import { MAX_TIMER_MS } from "../../shared/timer-ms.js";
import { FAULT_KINDS, type FaultKind, type LoadFault, type LoadOptions } from "./load-options.js";
import { isOpenModel, type OpenFlags, openOptionsFromFlags } from "./open-flags.js";
import { readPromptsFile } from "./prompts-file.js";
import { checkSloOption } from "./slo.js";
import { parseThreshold } from "./thresholds.js";

/** The flags of `lifeline load` (commander's camelCase names; values as typed); the open model's in {@link OpenFlags}. */
export interface LoadFlags extends OpenFlags {
  sessions?: string;
  prompts?: string;
  duration?: string;
  model?: string;
  apiKey?: string;
  faults?: string;
  seed?: string;
  threshold?: string[];
  slo?: string;
  out?: string;
  /** `--csv`: also records.csv and summary.csv. */
  csv?: boolean;
  rampUp?: string;
  concurrency?: string;
  promptsFile?: string;
  thinkTime?: string;
  threads?: string;
  retryBudget?: string;
  coordinate?: boolean;
  maxConcurrent?: string;
  idleTimeout?: string;
  mockTokens?: string;
  mockTokenDelay?: string;
  mockRateLimit?: string;
  /** `<p>[:<calls>]`: the mock answers with tool calls (load-tools.ts). */
  toolCalls?: string;
  toolTurns?: string;
  toolLatency?: string;
  toolCpu?: string;
  toolFailure?: string;
  /** B9: serve `/metrics` (Prometheus) on this port while the run lasts; read by load-cli.ts. */
  metricsPort?: string;
}

/**
 * `retry.budget` when `--retry-budget on` gives no figures: Finagle's default budget, 20 % of
 * first attempts plus 10 retries a second, over 10 s.
 */
export const DEFAULT_RETRY_BUDGET = { ratio: 0.2, minPerSecond: 10, windowMs: 10_000 } as const;

/**
 * The options of a `lifeline load` command line. Reads `--prompts-file` (relative to `cwd`;
 * prompts-file.ts), which sets `promptTexts` or `conversations`.
 * @throws ERR_INVALID_OPTIONS naming the flag and what it allows.
 */
export async function loadOptionsFromFlags(flags: LoadFlags, cwd: string): Promise<LoadOptions> {
  if (flags.sessions === undefined) usage("--sessions <n> is required: the number of concurrent sessions.");
  if (flags.prompts === undefined && flags.duration === undefined && !isOpenModel(flags)) {
    usage("give --prompts <n> (prompts per session), --duration <time> (for example 60s), or both.");
  }
  const options: LoadOptions = { sessions: parseCount("--sessions", flags.sessions, 100_000) };
  if (flags.prompts !== undefined) options.prompts = parseCount("--prompts", flags.prompts, 1_000_000);
  if (flags.duration !== undefined) options.durationMs = parseDuration("--duration", flags.duration, 1);
  if (flags.model !== undefined) {
    if (!/^[^/\s]+\/\S+$/.test(flags.model)) {
      usage(`--model "${flags.model}" is not "provider/id", for example openai/gpt-4o-mini.`);
    }
    options.model = flags.model;
  }
  if (flags.apiKey !== undefined && flags.apiKey !== "") options.apiKey = flags.apiKey;
  if (flags.faults !== undefined) {
    if (flags.model !== undefined) {
      usage("--faults configures the built-in mock server; it cannot be combined with --model.");
    }
    options.faults = parseFaults(flags.faults);
  }
  if (flags.seed !== undefined) options.seed = parseInteger("--seed", flags.seed, -(2 ** 31), 2 ** 32 - 1);
  if (flags.threshold !== undefined && flags.threshold.length > 0) {
    for (const expression of flags.threshold) parseThreshold(expression);
    options.thresholds = flags.threshold;
  }
  // A bad --slo, or a threshold on an SLO figure without one, is refused here, naming the flag.
  checkSloOption(
    flags.slo,
    (options.thresholds ?? []).map((expression) => parseThreshold(expression).metric),
  );
  if (flags.slo !== undefined) options.slo = flags.slo;
  if (flags.out !== undefined) options.outDir = resolve(cwd, flags.out);
  if (flags.csv === true) options.csv = true;
  if (flags.rampUp !== undefined) options.rampUpMs = parseDuration("--ramp-up", flags.rampUp, 0);
  if (flags.concurrency !== undefined) options.concurrency = parseCount("--concurrency", flags.concurrency, 100_000);
  if (flags.promptsFile !== undefined) Object.assign(options, await readPromptsFile(resolve(cwd, flags.promptsFile)));
  if (flags.thinkTime !== undefined) options.thinkTimeMs = parseDuration("--think-time", flags.thinkTime, 0);
  if (flags.threads !== undefined) options.threads = parseCount("--threads", flags.threads, 64);
  const settings = retrySettingsOverrides(flags);
  if (settings !== undefined) options.settings = settings;
  const mock: NonNullable<LoadOptions["mock"]> = {};
  if (flags.mockTokens !== undefined) mock.tokens = parseCount("--mock-tokens", flags.mockTokens, 100_000);
  if (flags.mockTokenDelay !== undefined)
    mock.tokenDelayMs = parseDuration("--mock-token-delay", flags.mockTokenDelay, 0);
  if (flags.mockRateLimit !== undefined) mock.rateLimit = parseRateLimit(flags.mockRateLimit);
  if (flags.toolTurns !== undefined && flags.toolCalls === undefined) {
    usage("--tool-turns bounds the mock's tool calls; give --tool-calls <p>[:<calls>] with it.");
  }
  if (flags.toolCalls !== undefined) {
    if (flags.model !== undefined) usage("--tool-calls and --tool-turns script the built-in mock; not with --model.");
    mock.tools = parseToolCalls(flags.toolCalls);
    if (flags.toolTurns !== undefined) mock.tools.maxTurns = parseCount("--tool-turns", flags.toolTurns, 1000);
  }
  const tools = toolBehaviourFromFlags(flags);
  if (tools !== undefined) options.tools = tools;
  if (Object.keys(mock).length > 0) {
    if (flags.model !== undefined)
      usage("--mock-tokens, --mock-token-delay and --mock-rate-limit apply to the built-in mock; not with --model.");
    options.mock = mock;
  }
  Object.assign(options, openOptionsFromFlags(flags));
  options.cwd = cwd;
  return options;
}

/**
 * The settings the retry flags set, over the settings files: `--retry-budget` → `retry.budget`,
 * `--coordinate`/`--no-coordinate` → `retry.coordinate`, `--max-concurrent` →
 * `retry.maxConcurrentRequests`, `--idle-timeout` → `retry.provider.idleTimeoutMs`. Undefined
 * when no such flag was given.
 *
 * `--retry-budget` takes `off`, `on` ({@link DEFAULT_RETRY_BUDGET}) or
 * `<ratio>[,<minPerSecond>[,<window>]]` such as `0.2,10,10s`; figures left out keep the defaults.
 * @throws ERR_INVALID_OPTIONS for a malformed value.
 */
export function retrySettingsOverrides(
  flags: Pick<LoadFlags, "retryBudget" | "coordinate" | "maxConcurrent" | "idleTimeout">,
): SettingsInput | undefined {
  const retry: Record<string, unknown> = {};
  if (flags.retryBudget !== undefined) retry.budget = parseRetryBudget(flags.retryBudget);
  if (flags.coordinate !== undefined) retry.coordinate = flags.coordinate;
  if (flags.maxConcurrent !== undefined) {
    retry.maxConcurrentRequests = parseCount("--max-concurrent", flags.maxConcurrent, 1_000_000);
  }
  if (flags.idleTimeout !== undefined) {
    retry.provider = { idleTimeoutMs: parseDuration("--idle-timeout", flags.idleTimeout, 1) };
  }
  // These keys belong to the retry budget and provider gate (B8); the settings schema validates
  // them when the host merges the settings.
  return Object.keys(retry).length === 0 ? undefined : ({ retry } as SettingsInput);
}

function parseRetryBudget(text: string): false | { ratio: number; minPerSecond: number; windowMs: number } {
  const value = text.trim().toLowerCase();
  if (value === "off" || value === "false") return false;
  if (value === "on" || value === "true") return { ...DEFAULT_RETRY_BUDGET };
  const parts = value.split(",").map((part) => part.trim());
  const [ratioText, floorText, windowText] = parts;
  const allowed = 'allowed: off, on (0.2,10,10s), or <ratio>[,<minPerSecond>[,<window>]], for example "0.2,10,10s"';
  const ratio = Number(ratioText);
  if (parts.length > 3 || ratioText === undefined || ratioText === "" || !(ratio >= 0) || !Number.isFinite(ratio)) {
    usage(`--retry-budget "${text}" is not a budget; ${allowed}.`);
  }
  const minPerSecond = floorText === undefined ? DEFAULT_RETRY_BUDGET.minPerSecond : Number(floorText);
  if (floorText === "" || !(minPerSecond >= 0) || !Number.isFinite(minPerSecond)) {
    usage(`--retry-budget "${text}": minPerSecond must be a number of at least 0; ${allowed}.`);
  }
  const windowMs =
    windowText === undefined ? DEFAULT_RETRY_BUDGET.windowMs : parseDuration("--retry-budget window", windowText, 1);
  return { ratio, minPerSecond, windowMs };
}

/**
 * `--faults 503:0.1,429:0.05,reset:0.02,stall:0.01`: statuses 400–599 and the mock's step kinds,
 * each with a probability in [0, 1]; together at most 1. A status may carry a retry hint,
 * `429@2s:0.05`: the mock then sends `retry-after-ms` with it (what the provider gate acts on).
 * @throws ERR_INVALID_OPTIONS naming the bad entry.
 */
export function parseFaults(text: string): LoadFault[] {
  const allowed = `a status from 400 to 599 (with an optional retry hint, 429@2s) or one of ${FAULT_KINDS.join(", ")}`;
  const faults = text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map((entry): LoadFault => {
      const [name, probabilityText, extra] = entry.split(":").map((part) => part.trim());
      const probability = Number(probabilityText);
      if (name === undefined || probabilityText === undefined || probabilityText === "" || extra !== undefined) {
        usage(`--faults entry "${entry}" is not <fault>:<probability>, for example 503:0.1 or reset:0.02.`);
      }
      if (!(probability >= 0 && probability <= 1)) {
        usage(`--faults entry "${entry}": the probability must be a number from 0 to 1.`);
      }
      const hinted = /^(\d+)(?:@(.+))?$/.exec(name);
      if (hinted !== null) {
        const status = Number(hinted[1]);
        if (status < 400 || status > 599) usage(`--faults entry "${entry}": the fault must be ${allowed}.`);
        const hint = hinted[2];
        if (hint === undefined) return { step: status, probability };
        return {
          step: status,
          probability,
          retryAfterMs: parseDuration(`--faults entry "${entry}": the retry hint`, hint, 0),
        };
      }
      if (!(FAULT_KINDS as readonly string[]).includes(name)) {
        usage(`--faults entry "${entry}": unknown fault "${name}"; use ${allowed}.`);
      }
      return { step: name as FaultKind, probability };
    });
  if (faults.length === 0) usage(`--faults "${text}" names no fault; for example 503:0.1,reset:0.02.`);
  const total = faults.reduce((sum, fault) => sum + fault.probability, 0);
  if (total > 1 + 1e-9) usage(`--faults "${text}": the probabilities add up to ${total}, more than 1.`);
  return faults;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration with its unit: `500ms`, `60s`, `2m`, `1.5h`, rounded to whole ms.
 * @throws ERR_INVALID_OPTIONS naming `flag` when the text is not one or is below `minMs`.
 */
export function parseDuration(flag: string, text: string, minMs: number): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/.exec(text);
  const unit = match?.[2];
  const ms = match === null || unit === undefined ? Number.NaN : Math.round(Number(match[1]) * (UNITS[unit] ?? 0));
  if (!Number.isFinite(ms)) {
    usage(`${flag} "${text}" is not a duration; use a number and a unit: ms, s, m or h (for example 500ms, 60s, 2m).`);
  }
  if (ms < minMs) usage(`${flag} "${text}" is too short; it must be at least ${minMs} ms.`);
  if (ms > MAX_TIMER_MS) usage(`${flag} "${text}" is too long; at most about 24 days.`);
  return ms;
}

/**
 * `--mock-rate-limit <requests>/<window>`, such as `50/1s`: the built-in mock answers at most that
 * many model requests per window and a 429 with the time left to the others, as a provider at
 * its limit does. @throws ERR_INVALID_OPTIONS for a malformed value.
 */
function parseRateLimit(text: string): { requests: number; windowMs: number } {
  const slash = text.indexOf("/");
  if (slash < 0) {
    usage(`--mock-rate-limit "${text}" is not <requests>/<window>; for example 50/1s (50 requests a second).`);
  }
  return {
    requests: parseCount("--mock-rate-limit", text.slice(0, slash), 1_000_000),
    windowMs: parseDuration("--mock-rate-limit", text.slice(slash + 1), 1),
  };
}

/**
 * `--tool-calls <p>[:<calls>]`, such as `0.3:2`: the chance that the mock answers a request with
 * tool calls instead of text, and how many calls such an answer carries (default 1).
 * @throws ERR_INVALID_OPTIONS for a malformed value.
 */
function parseToolCalls(text: string): NonNullable<NonNullable<LoadOptions["mock"]>["tools"]> {
  const [probabilityText, callsText, extra] = text.split(":");
  if (probabilityText === undefined || extra !== undefined) {
    usage(`--tool-calls "${text}" is not <probability>[:<calls>]; for example 0.3:2 (30 % of turns call 2 tools).`);
  }
  const probability = parseProbability("--tool-calls", probabilityText);
  return callsText === undefined
    ? { probability }
    : { probability, calls: parseCount("--tool-calls (calls)", callsText, 64) };
}

/** `--tool-latency`, `--tool-cpu`, `--tool-failure` as the load tool's behaviour; undefined when none is given. */
function toolBehaviourFromFlags(flags: LoadFlags): LoadOptions["tools"] {
  const tools: NonNullable<LoadOptions["tools"]> = {};
  if (flags.toolLatency !== undefined) tools.latencyMs = parseDuration("--tool-latency", flags.toolLatency, 0);
  if (flags.toolCpu !== undefined) tools.cpuMs = parseDuration("--tool-cpu", flags.toolCpu, 0);
  if (flags.toolFailure !== undefined) tools.failureRate = parseProbability("--tool-failure", flags.toolFailure);
  return Object.keys(tools).length === 0 ? undefined : tools;
}

/** A number from 0 to 1. @throws ERR_INVALID_OPTIONS naming `flag`. */
function parseProbability(flag: string, text: string): number {
  const value = /^\s*\d*\.?\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= 0 && value <= 1)) usage(`${flag} "${text}" must be a probability, a number from 0 to 1.`);
  return value;
}

/** A whole number from 1 to `max`. @throws ERR_INVALID_OPTIONS naming `flag`. */
function parseCount(flag: string, text: string, max: number): number {
  return parseInteger(flag, text, 1, max);
}

function parseInteger(flag: string, text: string, min: number, max: number): number {
  const value = /^\s*-?\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    usage(`${flag} "${text}" must be a whole number from ${min} to ${max}.`);
  }
  return value;
}

function usage(message: string): never {
  throw new LifelineError("ERR_INVALID_OPTIONS", message);
}
