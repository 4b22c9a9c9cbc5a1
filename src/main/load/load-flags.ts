/**
 * `lifeline load`'s flags, as commander hands them over (strings), turned into {@link LoadOptions}.
 * Every refusal is ERR_INVALID_OPTIONS naming the flag, the value and what is allowed, so the
 * command can exit 2 with that message.
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { LifelineError } from "../../shared/errors.js";
import type { SettingsInput } from "../../shared/settings.js";
import { MAX_TIMER_MS } from "../../shared/timer-ms.js";
import { FAULT_KINDS, type FaultKind, type LoadFault, type LoadOptions } from "./load-options.js";
import { parseThreshold } from "./thresholds.js";

/** The flags of `lifeline load` (commander's camelCase names; values as typed). */
export interface LoadFlags {
  sessions?: string;
  prompts?: string;
  duration?: string;
  model?: string;
  apiKey?: string;
  faults?: string;
  seed?: string;
  threshold?: string[];
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
  /** B9: serve `/metrics` (Prometheus) on this port while the run lasts; read by load-cli.ts. */
  metricsPort?: string;
}

/**
 * `retry.budget` when `--retry-budget on` gives no figures: Finagle's default budget, 20 % of
 * first attempts plus 10 retries a second, over 10 s.
 */
export const DEFAULT_RETRY_BUDGET = { ratio: 0.2, minPerSecond: 10, windowMs: 10_000 } as const;

/**
 * The options of a `lifeline load` command line. Reads `--prompts-file` (relative to `cwd`).
 * @throws ERR_INVALID_OPTIONS naming the flag and what it allows.
 */
export async function loadOptionsFromFlags(flags: LoadFlags, cwd: string): Promise<LoadOptions> {
  if (flags.sessions === undefined) usage("--sessions <n> is required: the number of concurrent sessions.");
  if (flags.prompts === undefined && flags.duration === undefined) {
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
  if (flags.out !== undefined) options.outDir = resolve(cwd, flags.out);
  if (flags.csv === true) options.csv = true;
  if (flags.rampUp !== undefined) options.rampUpMs = parseDuration("--ramp-up", flags.rampUp, 0);
  if (flags.concurrency !== undefined) options.concurrency = parseCount("--concurrency", flags.concurrency, 100_000);
  if (flags.promptsFile !== undefined) options.promptTexts = await readPromptsFile(resolve(cwd, flags.promptsFile));
  if (flags.thinkTime !== undefined) options.thinkTimeMs = parseDuration("--think-time", flags.thinkTime, 0);
  if (flags.threads !== undefined) options.threads = parseCount("--threads", flags.threads, 64);
  const settings = retrySettingsOverrides(flags);
  if (settings !== undefined) options.settings = settings;
  const mock: NonNullable<LoadOptions["mock"]> = {};
  if (flags.mockTokens !== undefined) mock.tokens = parseCount("--mock-tokens", flags.mockTokens, 100_000);
  if (flags.mockTokenDelay !== undefined)
    mock.tokenDelayMs = parseDuration("--mock-token-delay", flags.mockTokenDelay, 0);
  if (flags.mockRateLimit !== undefined) mock.rateLimit = parseRateLimit(flags.mockRateLimit);
  if (Object.keys(mock).length > 0) {
    if (flags.model !== undefined)
      usage("--mock-tokens, --mock-token-delay and --mock-rate-limit apply to the built-in mock; not with --model.");
    options.mock = mock;
  }
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

/**
 * The prompts of a JSONL file, one `{"prompt": "…"}` per line; blank lines are skipped.
 * @throws ERR_INVALID_OPTIONS naming the file and line of a bad entry, or an unreadable or empty file.
 */
async function readPromptsFile(path: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    return usage(`--prompts-file ${path} cannot be read: ${(error as Error).message}.`);
  }
  return parsePromptsJsonl(text, path);
}

/** {@link readPromptsFile} on text; `source` names the file in errors. */
export function parsePromptsJsonl(text: string, source: string): string[] {
  const prompts: string[] = [];
  const lines = text.split("\n");
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      usage(
        `--prompts-file ${source}:${index + 1}: not JSON (${(error as Error).message}); each line must be {"prompt": "…"}.`,
      );
    }
    const prompt = (value as { prompt?: unknown } | null)?.prompt;
    if (typeof prompt !== "string" || prompt.trim() === "") {
      usage(`--prompts-file ${source}:${index + 1}: each line must be {"prompt": "…"} with a non-empty string.`);
    }
    prompts.push(prompt);
  }
  if (prompts.length === 0) usage(`--prompts-file ${source} holds no prompt; write one {"prompt": "…"} per line.`);
  return prompts;
}

function usage(message: string): never {
  throw new LifelineError("ERR_INVALID_OPTIONS", message);
}
