/**
 * `lifeline load`'s own groups: the load's shape in the closed model (`--sessions`, `--prompts`,
 * `--duration`, …), its report (`--out`, `--csv`, `--threshold`, `--slo`; `load merge` takes the
 * report flags too) and a distributed run's (`--generators`, …). {@link loadOptions} assembles
 * the {@link LoadOptions} `runLoad` takes from these, the open model's (open-flags.ts) and the
 * mock's (mock-flags.ts); the command adds the model, key, worker and fleet groups' values.
 */
import { resolve } from "node:path";
import type { LoadOptions } from "../../load/options/load-options.js";
import { readPromptsFile } from "../../load/options/prompts-file.js";
import { checkSloOption, parseSlo } from "../../load/verdicts/slo.js";
import { parseThreshold } from "../../load/verdicts/thresholds.js";
import { listFlag, switchFlag, valueFlag } from "../flag.js";
import { count, duration, integer, nonBlank, oneOf, usage } from "../flag-values.js";
import { type MockFlagValues, mockOptions } from "./mock-flags.js";
import { isOpenModel, type OpenFlagValues, openOptions } from "./open-flags.js";

/** The closed model's shape, and what every run has: sessions, prompts, texts, threads. */
export const loadShapeFlags = {
  sessions: valueFlag(
    "--sessions <n>",
    "concurrent sessions; in the open model, the most conversations open at once (the cap)",
    count(100_000),
    { defaultText: "required in the closed model and the sweep; open model: what the peak rate opens in 60 s" },
  ),
  prompts: valueFlag("--prompts <n>", "prompts each session (or conversation) sends", count(1_000_000), {
    defaultText: "until --duration; 1 per conversation in the open model",
  }),
  duration: valueFlag(
    "--duration <time>",
    "run for this long, e.g. 60s; with --prompts, whichever ends first",
    duration(1),
  ),
  rampUp: valueFlag("--ramp-up <time>", "start the sessions spread evenly over this time", duration(0), {
    defaultText: "0s",
  }),
  concurrency: valueFlag("--concurrency <n>", "most prompts in flight at once", count(100_000), {
    defaultText: "--sessions",
  }),
  thinkTime: valueFlag("--think-time <time>", "pause of a session between its prompts", duration(0), {
    defaultText: "0s",
  }),
  promptsFile: valueFlag(
    "--prompts-file <file>",
    'JSONL: {"prompt": "…"} lines used round-robin, or {"turns": ["…", …]} lines, one conversation per session',
    nonBlank,
  ),
  threads: valueFlag("--threads <n>", "worker threads of the host", count(64), { defaultText: "the host's default" }),
} as const;

/** What a run's report holds and how it is judged. */
export const reportFlags = {
  out: valueFlag("--out <dir>", "report folder", nonBlank, { defaultText: "./lifeline-load-<timestamp>" }),
  csv: switchFlag("--csv", "also write records.csv and summary.csv into the report folder"),
  threshold: listFlag(
    "--threshold <expr>",
    'fail (exit 99) unless it holds, e.g. "p99_latency_ms<8000"; repeatable',
    (raw) => {
      parseThreshold(raw);
      return raw;
    },
  ),
} as const;

/** The service-level objective of a run. */
export const sloFlags = {
  slo: valueFlag(
    "--slo <spec>",
    'service-level objective per request, prompt and session, e.g. "ttft<=500ms,itl<=50ms,e2e<=10s"',
    (raw) => {
      parseSlo(raw);
      return raw;
    },
  ),
} as const;

/** A distributed run's: the coordinator's flags (with `--fleet`). */
export const distributedFlags = {
  generators: valueFlag(
    "--generators <k>",
    "with --fleet: coordinate a distributed run over K `lifeline load-agent` generators (docs/load.md)",
    integer(1, 1000),
  ),
  generatorTimeout: valueFlag(
    "--generator-timeout <time>",
    "how long to wait for the generators to join",
    duration(1),
    {
      defaultText: "30s",
    },
  ),
  onGeneratorLoss: valueFlag(
    "--on-generator-loss <policy>",
    "a lost generator: continue with the others, or stop them all",
    oneOf(["continue", "stop"] as const),
    { defaultText: "continue" },
  ),
} as const;

/** The values {@link loadOptions} reads. */
export interface LoadFlagValues extends Omit<OpenFlagValues, "durationMs" | "rampUpMs">, MockFlagValues {
  sessions?: number | undefined;
  prompts?: number | undefined;
  duration?: number | undefined;
  rampUp?: number | undefined;
  thinkTime?: number | undefined;
  promptsFile?: string | undefined;
  threads?: number | undefined;
  out?: string | undefined;
  csv?: boolean | undefined;
  threshold?: string[] | undefined;
  slo?: string | undefined;
}

/**
 * The options of a `lifeline load` command line but its model, key, worker and fleet. Reads
 * `--prompts-file` (relative to `cwd`), which sets `promptTexts` or `conversations`.
 * @param realModel `--model` names a model, so the mock's flags are refused.
 * @throws ERR_INVALID_OPTIONS naming the flag and what it allows, or flags that do not go together.
 */
export async function loadOptions(values: LoadFlagValues, cwd: string, realModel: boolean): Promise<LoadOptions> {
  const open = isOpenModel(values);
  const shaped = openOptions({ ...values, durationMs: values.duration, rampUpMs: values.rampUp });
  if (values.sessions === undefined && !open) {
    usage(
      values.sweep === undefined
        ? "--sessions <n> is required: the number of concurrent sessions."
        : "--sessions <n> is required with --sweep: its throughput probe runs that many conversations at once.",
    );
  }
  if (values.prompts === undefined && values.duration === undefined && !open && values.sweep === undefined) {
    usage("give --prompts <n> (prompts per session), --duration <time> (for example 60s), or both.");
  }
  // open-options.ts holds the open model's schema (zod): imported when a run needs its default cap, not for --help.
  const sessions =
    values.sessions ??
    (await import("../../load/options/open-options.js")).defaultOpenCap(shaped.arrival ?? {}, values.duration);
  const options: LoadOptions = { sessions, ...shaped, ...mockOptions(values, realModel) };
  if (values.prompts !== undefined) options.prompts = values.prompts;
  if (values.duration !== undefined) options.durationMs = values.duration;
  // A bad --slo, or a threshold on an SLO figure without one, is refused here, naming the flag.
  checkSloOption(
    values.slo,
    (values.threshold ?? []).map((expression) => parseThreshold(expression).metric),
  );
  if (values.threshold !== undefined && values.threshold.length > 0) options.thresholds = values.threshold;
  if (values.slo !== undefined) options.slo = values.slo;
  if (values.out !== undefined) options.outDir = resolve(cwd, values.out);
  if (values.csv === true) options.csv = true;
  if (values.rampUp !== undefined) options.rampUpMs = values.rampUp;
  if (values.concurrency !== undefined) options.concurrency = values.concurrency;
  if (values.promptsFile !== undefined) Object.assign(options, await readPromptsFile(resolve(cwd, values.promptsFile)));
  if (values.thinkTime !== undefined) options.thinkTimeMs = values.thinkTime;
  if (values.threads !== undefined) options.threads = values.threads;
  options.cwd = cwd;
  return options;
}
