/**
 * `lifeline load`'s flags that shape the target and the host: the built-in mock's faults,
 * answers and tool calls (`--faults`, `--seed`, `--mock-*`, `--tool-calls`, `--tool-turns`), the
 * load tool's behaviour in the workers (`--tool-latency`, `--tool-cpu`, `--tool-failure`), and the
 * retry settings a run overrides (`--retry-budget`, `--coordinate`, `--max-concurrent`,
 * `--idle-timeout`). Every refusal is ERR_INVALID_OPTIONS naming the flag.
 */
import type { SettingsInput } from "../../../shared/settings/settings.js";
import { FAULT_KINDS, type FaultKind, LOAD_DEFAULTS } from "../../load/options/load-defaults.js";
import type { LoadFault, LoadOptions } from "../../load/options/load-options.js";
import { switchFlag, valueFlag } from "../flag.js";
import { count, duration, integer, parseDuration, parseInteger, probability, usage } from "../flag-values.js";

/**
 * `retry.budget` when `--retry-budget on` gives no figures: Finagle's default budget, 20 % of
 * first attempts plus 10 retries a second, over 10 s.
 */
export const DEFAULT_RETRY_BUDGET = { ratio: 0.2, minPerSecond: 10, windowMs: 10_000 } as const;

/** The mock group: the built-in mock server's faults, answers and tool calls. */
export const mockFlags = {
  faults: valueFlag(
    "--faults <list>",
    "mock faults with probabilities, e.g. 503:0.1,429@2s:0.05,reset:0.02,stall:0.01",
    (raw) => parseFaults(raw),
  ),
  seed: valueFlag(
    "--seed <n>",
    "seed of the mock's fault PRNG and of Poisson arrivals",
    integer(-(2 ** 31), 2 ** 32 - 1),
    {
      defaultText: String(LOAD_DEFAULTS.seed),
    },
  ),
  mockTokens: valueFlag("--mock-tokens <n>", "word tokens of each mock answer", count(100_000), {
    defaultText: String(LOAD_DEFAULTS.mockTokens),
  }),
  mockTokenDelay: valueFlag("--mock-token-delay <time>", "pause between the mock's tokens", duration(0), {
    defaultText: `${LOAD_DEFAULTS.mockTokenDelayMs}ms`,
  }),
  mockRateLimit: valueFlag(
    "--mock-rate-limit <n/time>",
    "the mock answers at most n requests per window (e.g. 50/1s), the others a 429 with the time left",
    (raw, flag) => parseRateLimit(raw, flag),
  ),
  toolCalls: valueFlag(
    "--tool-calls <p[:calls]>",
    "the mock answers a turn with tool calls of load_tool with probability p, `calls` of them (1 unless given), e.g. 0.3:2",
    (raw, flag) => parseToolCalls(raw, flag),
  ),
  toolTurns: valueFlag("--tool-turns <n>", "most tool-call answers per prompt", count(1000), { defaultText: "1" }),
} as const;

/** The load tool group: what each `load_tool` call does in its worker. */
export const loadToolFlags = {
  toolLatency: valueFlag("--tool-latency <time>", "each load_tool call waits this long in its worker", duration(0), {
    defaultText: "0ms",
  }),
  toolCpu: valueFlag("--tool-cpu <time>", "each load_tool call keeps its worker busy this long", duration(0), {
    defaultText: "0ms",
  }),
  toolFailure: valueFlag("--tool-failure <p>", "probability that a load_tool call fails, seeded", probability, {
    defaultText: "0",
  }),
} as const;

/** The retry-override group: settings a run sets over the settings files. */
export const retryOverrideFlags = {
  retryBudget: valueFlag(
    "--retry-budget <spec>",
    "retry.budget: off, on (0.2,10,10s), or ratio[,minPerSecond[,window]], e.g. 0.2,10,10s",
    (raw, flag) => parseRetryBudget(raw, flag),
  ),
  coordinate: switchFlag("--coordinate", "retry.coordinate: one provider gate for all sessions"),
  noCoordinate: switchFlag("--no-coordinate", "retry.coordinate off"),
  maxConcurrent: valueFlag("--max-concurrent <n>", "retry.maxConcurrentRequests per provider", count(1_000_000)),
  idleTimeout: valueFlag(
    "--idle-timeout <time>",
    "retry.provider.idleTimeoutMs: a stream silent this long fails and is retried",
    duration(1),
    { defaultText: "the setting's; against the mock, max(5s, 50 × token delay)" },
  ),
} as const;

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
      const chance = Number(probabilityText);
      if (name === undefined || probabilityText === undefined || probabilityText === "" || extra !== undefined) {
        usage(`--faults entry "${entry}" is not <fault>:<probability>, for example 503:0.1 or reset:0.02.`);
      }
      if (!(chance >= 0 && chance <= 1))
        usage(`--faults entry "${entry}": the probability must be a number from 0 to 1.`);
      const hinted = /^(\d+)(?:@(.+))?$/.exec(name);
      if (hinted !== null) {
        const status = Number(hinted[1]);
        if (status < 400 || status > 599) usage(`--faults entry "${entry}": the fault must be ${allowed}.`);
        const hint = hinted[2];
        if (hint === undefined) return { step: status, probability: chance };
        const retryAfterMs = parseDuration(`--faults entry "${entry}": the retry hint`, hint, 0);
        return { step: status, probability: chance, retryAfterMs };
      }
      if (!(FAULT_KINDS as readonly string[]).includes(name)) {
        usage(`--faults entry "${entry}": unknown fault "${name}"; use ${allowed}.`);
      }
      return { step: name as FaultKind, probability: chance };
    });
  if (faults.length === 0) usage(`--faults "${text}" names no fault; for example 503:0.1,reset:0.02.`);
  const total = faults.reduce((sum, fault) => sum + fault.probability, 0);
  if (total > 1 + 1e-9) usage(`--faults "${text}": the probabilities add up to ${total}, more than 1.`);
  return faults;
}

/**
 * `--retry-budget`: `off`, `on` ({@link DEFAULT_RETRY_BUDGET}) or
 * `<ratio>[,<minPerSecond>[,<window>]]` such as `0.2,10,10s`; figures left out keep the defaults.
 */
function parseRetryBudget(
  text: string,
  flag: string,
): false | { ratio: number; minPerSecond: number; windowMs: number } {
  const value = text.trim().toLowerCase();
  if (value === "off" || value === "false") return false;
  if (value === "on" || value === "true") return { ...DEFAULT_RETRY_BUDGET };
  const parts = value.split(",").map((part) => part.trim());
  const [ratioText, floorText, windowText] = parts;
  const allowed = 'allowed: off, on (0.2,10,10s), or <ratio>[,<minPerSecond>[,<window>]], for example "0.2,10,10s"';
  const ratio = Number(ratioText);
  if (parts.length > 3 || ratioText === undefined || ratioText === "" || !(ratio >= 0) || !Number.isFinite(ratio)) {
    usage(`${flag} "${text}" is not a budget; ${allowed}.`);
  }
  const minPerSecond = floorText === undefined ? DEFAULT_RETRY_BUDGET.minPerSecond : Number(floorText);
  if (floorText === "" || !(minPerSecond >= 0) || !Number.isFinite(minPerSecond)) {
    usage(`${flag} "${text}": minPerSecond must be a number of at least 0; ${allowed}.`);
  }
  const windowMs =
    windowText === undefined ? DEFAULT_RETRY_BUDGET.windowMs : parseDuration(`${flag} window`, windowText, 1);
  return { ratio, minPerSecond, windowMs };
}

/**
 * `--mock-rate-limit <requests>/<window>`, such as `50/1s`: the built-in mock answers at most that
 * many model requests per window and a 429 with the time left to the others.
 */
function parseRateLimit(text: string, flag: string): { requests: number; windowMs: number } {
  const slash = text.indexOf("/");
  if (slash < 0) usage(`${flag} "${text}" is not <requests>/<window>; for example 50/1s (50 requests a second).`);
  return {
    requests: parseInteger(flag, text.slice(0, slash), 1, 1_000_000),
    windowMs: parseDuration(flag, text.slice(slash + 1), 1),
  };
}

/** `--tool-calls <p>[:<calls>]`, such as `0.3:2`. */
function parseToolCalls(text: string, flag: string): { probability: number; calls?: number } {
  const [probabilityText, callsText, extra] = text.split(":");
  if (probabilityText === undefined || extra !== undefined) {
    usage(`${flag} "${text}" is not <probability>[:<calls>]; for example 0.3:2 (30 % of turns call 2 tools).`);
  }
  const chance = probability(probabilityText, flag);
  return callsText === undefined
    ? { probability: chance }
    : { probability: chance, calls: parseInteger(`${flag} (calls)`, callsText, 1, 64) };
}

/** The values of the three groups. */
export type MockFlagValues = {
  [K in keyof typeof mockFlags]?: ReturnType<(typeof mockFlags)[K]["parse"]> | undefined;
} & { [K in keyof typeof loadToolFlags]?: number | undefined } & {
  [K in keyof typeof retryOverrideFlags]?: ReturnType<(typeof retryOverrideFlags)[K]["parse"]> | undefined;
};

/**
 * The options the three groups set: `mock` (refused with a real model), `tools`, `faults`,
 * `seed`, and the retry `settings`.
 * @throws ERR_INVALID_OPTIONS for flags that do not go together.
 */
export function mockOptions(values: MockFlagValues, realModel: boolean): Partial<LoadOptions> {
  const options: Partial<LoadOptions> = {};
  if (values.faults !== undefined) {
    if (realModel) usage("--faults configures the built-in mock server; it cannot be combined with --model.");
    options.faults = values.faults;
  }
  if (values.seed !== undefined) options.seed = values.seed;
  const mock: NonNullable<LoadOptions["mock"]> = {};
  if (values.mockTokens !== undefined) mock.tokens = values.mockTokens;
  if (values.mockTokenDelay !== undefined) mock.tokenDelayMs = values.mockTokenDelay;
  if (values.mockRateLimit !== undefined) mock.rateLimit = values.mockRateLimit;
  if (values.toolTurns !== undefined && values.toolCalls === undefined) {
    usage("--tool-turns bounds the mock's tool calls; give --tool-calls <p>[:<calls>] with it.");
  }
  if (values.toolCalls !== undefined) {
    mock.tools = { ...values.toolCalls, ...(values.toolTurns === undefined ? {} : { maxTurns: values.toolTurns }) };
  }
  if (Object.keys(mock).length > 0) {
    if (realModel) {
      usage(
        "--mock-tokens, --mock-token-delay, --mock-rate-limit, --tool-calls and --tool-turns script the built-in mock; not with --model.",
      );
    }
    options.mock = mock;
  }
  const tools: NonNullable<LoadOptions["tools"]> = {};
  if (values.toolLatency !== undefined) tools.latencyMs = values.toolLatency;
  if (values.toolCpu !== undefined) tools.cpuMs = values.toolCpu;
  if (values.toolFailure !== undefined) tools.failureRate = values.toolFailure;
  if (Object.keys(tools).length > 0) options.tools = tools;
  const settings = retryOverrides(values);
  if (settings !== undefined) options.settings = settings;
  return options;
}

/**
 * The settings the retry flags set: `--retry-budget` → `retry.budget`, `--coordinate` /
 * `--no-coordinate` → `retry.coordinate`, `--max-concurrent` → `retry.maxConcurrentRequests`,
 * `--idle-timeout` → `retry.provider.idleTimeoutMs`; undefined when none is given.
 */
function retryOverrides(values: MockFlagValues): SettingsInput | undefined {
  const retry: NonNullable<SettingsInput["retry"]> = {};
  if (values.retryBudget !== undefined) retry.budget = values.retryBudget;
  // One attribute: the last of --coordinate and --no-coordinate given wins, as commander reads them.
  if (values.coordinate === true) retry.coordinate = true;
  if (values.noCoordinate === true) retry.coordinate = false;
  if (values.maxConcurrent !== undefined) retry.maxConcurrentRequests = values.maxConcurrent;
  if (values.idleTimeout !== undefined) retry.provider = { idleTimeoutMs: values.idleTimeout };
  return Object.keys(retry).length === 0 ? undefined : { retry };
}
