/**
 * `lifeline load` (a load test with reports, docs/load.md), with `merge` and `compare` under it.
 * `load` takes the model, key, worker, fleet and telemetry groups with its own: `--thinking`
 * reaches every load session, `--fleet` puts the load's host in the fleet, or, with
 * `--generators K`, makes this process the coordinator of a distributed run.
 */
import { resolve } from "node:path";
import { LifelineError } from "../../../shared/errors.js";
import { isThinkingLevel, type ThinkingLevel } from "../../../shared/thinking.js";
import type { LoadOptions } from "../../load/options/load-options.js";
import type { CliContext } from "../cli-context.js";
import { command } from "../command-tree.js";
import { listFlag, switchFlag, valueFlag } from "../flag.js";
import { integer, nonBlank, share, usage } from "../flag-values.js";
import { fleetFlags, fleetOverride, requiredFleet } from "../groups/fleet-flags.js";
import { workerFlags, workerOptions } from "../groups/host-flags.js";
import { distributedFlags, loadOptions, loadShapeFlags, reportFlags, sloFlags } from "../groups/load-flags.js";
import { loadToolFlags, mockFlags, retryOverrideFlags } from "../groups/mock-flags.js";
import { keyFlags, type ModelFlagValues, modelFlags, resolveModelFlags } from "../groups/model-flags.js";
import { openFlags } from "../groups/open-flags.js";
import { telemetryFlags } from "../groups/telemetry-flags.js";

const loadFlags = {
  ...loadShapeFlags,
  ...openFlags,
  ...modelFlags,
  ...keyFlags,
  ...mockFlags,
  ...loadToolFlags,
  ...retryOverrideFlags,
  ...reportFlags,
  ...sloFlags,
  ...workerFlags,
  ...fleetFlags,
  ...telemetryFlags,
  ...distributedFlags,
} as const;

const mergeFlags = {
  ...reportFlags,
  force: switchFlag("--force", "merge reports whose target, model, faults, mock or settings differ"),
} as const;

const compareFlags = {
  threshold: listFlag(
    "--threshold <expr>",
    'fail (exit 99) unless it holds: <metric>_ratio (B / A) or <metric>_delta (B − A), e.g. "p99_latency_ms_ratio<1.1"; repeatable',
    nonBlank,
  ),
  out: valueFlag("--out <dir>", "folder for compare.json and compare.html", nonBlank, {
    defaultText: "./lifeline-compare-<timestamp>",
  }),
  json: switchFlag("--json", "print compare.json on stdout instead of the table"),
  confidence: valueFlag(
    "--confidence <level>",
    "coverage of the intervals: 0.95 or 95%",
    share((level) => level > 0 && level < 1, "a level in (0, 1): give e.g. 0.95 or 95%"),
    { defaultText: "0.95" },
  ),
  seed: valueFlag("--seed <n>", "seed of the bootstrap's resampling", integer(-(2 ** 53 - 1), 2 ** 53 - 1), {
    defaultText: "1",
  }),
  noise: valueFlag(
    "--noise <fraction>",
    "noise floor: better or worse only beyond ± this share of A's figure, 0.05 or 5%",
    share((value) => value >= 0 && value < 1, "a share in [0, 1): give e.g. 0.05 or 5%"),
    { defaultText: "0" },
  ),
} as const;

/** `lifeline load merge`. */
const mergeCommand = command<CliContext, typeof mergeFlags>({
  name: "merge",
  description: "merge load reports of one configuration into one, with percentiles of all their samples",
  args: [{ spelling: "<reports...>", description: "report folders (or their report.json), at least two" }],
  flags: mergeFlags,
  describe: {
    out: "folder for the merged report (required)",
    threshold: "also check this on the merged figures (exit 99 unless it holds); repeatable",
  },
  run: ({ flags, args, context }) => {
    if (flags.out === undefined) usage("--out <dir> is required: the folder for the merged report.");
    return context.runtime.loadMerge({
      reports: (args[0] as string[]).map((report) => resolve(context.cwd, report)),
      outDir: resolve(context.cwd, flags.out),
      csv: flags.csv === true,
      force: flags.force === true,
      thresholds: flags.threshold ?? [],
    });
  },
});

/** `lifeline load compare`. */
const compareCommand = command<CliContext, typeof compareFlags>({
  name: "compare",
  description: "compare two runs: each headline figure of A and B, B − A, B / A, and a verdict with its interval",
  args: [
    { spelling: "<a>", description: "run A: a report folder of lifeline load, or its report.json" },
    { spelling: "<b>", description: "run B, compared with A" },
  ],
  flags: compareFlags,
  run: ({ flags, args, context }) =>
    context.runtime.loadCompare({
      a: resolve(context.cwd, args[0] as string),
      b: resolve(context.cwd, args[1] as string),
      thresholds: flags.threshold ?? [],
      ...(flags.out === undefined ? {} : { outDir: resolve(context.cwd, flags.out) }),
      json: flags.json === true,
      ...(flags.confidence === undefined ? {} : { confidence: flags.confidence }),
      ...(flags.seed === undefined ? {} : { seed: flags.seed }),
      ...(flags.noise === undefined ? {} : { noise: flags.noise }),
    }),
});

/**
 * The load's model. A distributed run's generators resolve models with their own models.json,
 * which the coordinator may not have: there a `provider/id` this process does not know is handed
 * on as given (a generator that does not know it either fails the run with ERR_UNKNOWN_MODEL).
 */
async function resolveLoadModel(
  flags: ModelFlagValues,
  context: CliContext,
  distributed: boolean,
): Promise<{ model: string; thinkingLevel?: ThinkingLevel }> {
  try {
    return await resolveModelFlags(flags, context);
  } catch (error) {
    const pattern = flags.model ?? "";
    const named = flags.provider === undefined && /^[^/\s:]+\/\S+$/.test(pattern);
    if (!distributed || !named || !(error instanceof LifelineError) || error.code !== "ERR_UNKNOWN_MODEL") throw error;
    const colon = pattern.lastIndexOf(":");
    const suffix = colon > pattern.indexOf("/") ? pattern.slice(colon + 1) : undefined;
    const level = flags.thinking ?? (isThinkingLevel(suffix) ? suffix : undefined);
    const model = isThinkingLevel(suffix) ? pattern.slice(0, colon) : pattern;
    return level === undefined ? { model } : { model, thinkingLevel: level };
  }
}

/** `lifeline load`. */
export const loadCommand = command<CliContext, typeof loadFlags>({
  name: "load",
  description:
    "load-test: N concurrent sessions × M prompts, or conversations arriving at a rate, against the built-in mock server or a real model",
  flags: loadFlags,
  describe: {
    model:
      'a real model to load: an id, "provider/id" or part of one, resolved as pi does; a ":<level>" suffix sets the thinking level (default: the built-in mock server)',
  },
  subcommands: [mergeCommand, compareCommand],
  run: async ({ flags, context, typed }) => {
    const realModel = flags.model !== undefined || flags.provider !== undefined;
    const options: LoadOptions = await loadOptions(flags, context.cwd, realModel);
    if (realModel) {
      const choice = await resolveLoadModel(flags, context, flags.generators !== undefined);
      options.model = choice.model;
      if (choice.thinkingLevel !== undefined) options.thinkingLevel = choice.thinkingLevel;
    } else if (flags.thinking !== undefined) {
      options.thinkingLevel = flags.thinking;
    }
    Object.assign(options, workerOptions(flags));
    // The library's own check, before the run's banner: a run it would refuse never starts. Its
    // schema (zod) is imported here, when the command runs, not for --help.
    const { checkLoadOptions } = await import("../../load/options/load-options.js");
    checkLoadOptions(options);
    if (flags.generators === undefined) {
      for (const name of ["generatorTimeout", "onGeneratorLoss"] as const) {
        if (flags[name] !== undefined)
          usage(`${loadFlags[name].long} shapes a distributed run; give --generators <k> (and --fleet) with it.`);
      }
      if (flags.apiKey !== undefined) options.apiKey = flags.apiKey;
      const fleet = await fleetOverride(flags, context);
      if (fleet !== undefined) options.settings = { ...options.settings, fleet };
      return context.runtime.load({
        options,
        ...(flags.metricsPort === undefined ? {} : { metricsPort: flags.metricsPort }),
      });
    }
    // The coordinator runs no session: what only its own sessions would use is refused, not dropped.
    if (flags.metricsPort !== undefined) {
      usage(
        "--metrics-port is not available with --generators: the coordinator runs no sessions; serve /metrics from each generator's host instead.",
      );
    }
    if (typed.has("apiKey")) {
      usage(
        "--api-key does not reach the generators of a distributed run: a key never travels through Redis. Give each `lifeline load-agent` its own (--api-key or LIFELINE_API_KEY).",
      );
    }
    if (typed.has("workerEntry")) {
      usage(
        "--worker-entry does not reach the generators of a distributed run; give it to each `lifeline load-agent`.",
      );
    }
    delete options.workerEntry;
    return context.runtime.load({
      options,
      distributed: {
        fleet: await requiredFleet(flags, context, "lifeline load --generators"),
        generators: flags.generators,
        ...(flags.generatorTimeout === undefined ? {} : { generatorTimeoutMs: flags.generatorTimeout }),
        ...(flags.onGeneratorLoss === undefined ? {} : { onGeneratorLoss: flags.onGeneratorLoss }),
      },
    });
  },
});
