/**
 * The commands of fleet mode (docs/fleet.md): `serve` (a host taking the fleet's queued prompts),
 * `submit` (a prompt into the queue), `load-agent` (a generator of distributed load runs). Each
 * needs a fleet, from `--fleet` or the settings files.
 */
import { resolve } from "node:path";
import { SERVE_DEFAULTS } from "../../fleet/serve-options.js";
import type { CliContext } from "../cli-context.js";
import { command } from "../command-tree.js";
import { switchFlag, textFlag, valueFlag } from "../flag.js";
import { count, duration, usage } from "../flag-values.js";
import { fleetFlags, requiredFleet } from "../groups/fleet-flags.js";
import { sessionHostFlags, sessionHostOptions, workerFlags, workerOptions } from "../groups/host-flags.js";
import { keyFlags, modelFlags, resolveModelFlags } from "../groups/model-flags.js";
import { sessionFlags } from "../groups/session-flags.js";
import { telemetryFlags } from "../groups/telemetry-flags.js";

/** How long `submit` waits for its result unless `--timeout` says otherwise (FleetClient's default). */
const SUBMIT_TIMEOUT_TEXT = "10m";

const serveFlags = {
  ...sessionHostFlags,
  ...modelFlags,
  ...keyFlags,
  ...telemetryFlags,
  concurrency: valueFlag("--concurrency <n>", "prompt jobs this host runs at once", count(10_000), {
    defaultText: String(SERVE_DEFAULTS.concurrency),
  }),
  workerModule: textFlag("--worker-module <file>", "a worker module giving every session its tools (setup())"),
} as const;

/** `lifeline serve`. */
export const serveCommand = command<CliContext, typeof serveFlags>({
  name: "serve",
  description: "serve the fleet's queue of prompts (needs --fleet or fleet.redis): run them in this host's workers",
  flags: serveFlags,
  describe: {
    model: "the model of a new session whose job names none; a stored session keeps its own (default: demo/demo-1)",
    thinking: "the thinking level of a new session whose job names none (default: the defaultThinkingLevel setting)",
  },
  run: async ({ flags, context }) => {
    const fleet = await requiredFleet(flags, context, "lifeline serve");
    const named = flags.model !== undefined || flags.provider !== undefined;
    const choice = named ? await resolveModelFlags(flags, context) : undefined;
    const thinkingLevel = flags.thinking ?? choice?.thinkingLevel;
    const host = await sessionHostOptions(flags, context);
    return context.runtime.serve({
      host: { ...host, settings: { ...host.settings, fleet } },
      fleetName: fleet.name,
      serve: {
        ...(flags.concurrency === undefined ? {} : { concurrency: flags.concurrency }),
        session: {
          ...(flags.workerModule === undefined ? {} : { workerModule: resolve(context.cwd, flags.workerModule) }),
          ...(choice === undefined ? {} : { model: choice.model }),
          ...(thinkingLevel === undefined ? {} : { thinkingLevel }),
          ...(flags.apiKey === undefined ? {} : { apiKey: flags.apiKey }),
        },
      },
      ...(flags.metricsPort === undefined ? {} : { metricsPort: flags.metricsPort }),
    });
  },
});

const submitFlags = {
  ...fleetFlags,
  ...modelFlags,
  session: sessionFlags.session,
  jobId: valueFlag(
    "--job-id <id>",
    "the job's id: a re-submit with the same id adds nothing and gets the same result",
    (raw, flag) => {
      if (raw === "" || raw.includes(":")) usage(`${flag} "${raw}" must be a non-empty id without ":".`);
      return raw;
    },
  ),
  waitMs: valueFlag(
    "--wait-ms <time>",
    "while the fleet's Redis is away (at the start too), keep trying this long; a bare number is ms",
    duration(0),
    { defaultText: "0: fail at once" },
  ),
  timeout: valueFlag(
    "--timeout <time>",
    "longest wait for the result; the prompt goes on in the fleet after it",
    duration(1),
    {
      defaultText: SUBMIT_TIMEOUT_TEXT,
    },
  ),
  noFollow: switchFlag("--no-follow", "print only the result, not the events"),
} as const;

/** `lifeline submit`. */
export const submitCommand = command<CliContext, typeof submitFlags>({
  name: "submit",
  description: "submit a prompt to the fleet's queue; print its events as JSON lines, then its result",
  args: [{ spelling: "<text>", description: "the prompt" }],
  flags: submitFlags,
  describe: {
    session: "the session's id: an existing one continues, a new one is created with it (default: a new session)",
    model:
      "the session's model, resolved here as everywhere (default: the serving host's; a stored session keeps its own)",
    thinking: "the session's thinking level (default: a stored session's, else the serving host's)",
  },
  run: async ({ flags, args, context }) => {
    const fleet = await requiredFleet(flags, context, "lifeline submit");
    const named = flags.model !== undefined || flags.provider !== undefined;
    const choice = named ? await resolveModelFlags(flags, context) : undefined;
    const thinkingLevel = flags.thinking ?? choice?.thinkingLevel;
    const waitMs = flags.waitMs ?? 0;
    return context.runtime.submit({
      // Connecting is part of the wait: a Redis down at the start is waited for as one down later.
      client: { fleet, ...(waitMs > 0 ? { connectTimeoutMs: waitMs } : {}) },
      text: args[0] as string,
      submit: {
        ...(flags.session === undefined ? {} : { sessionId: flags.session }),
        ...(flags.jobId === undefined ? {} : { jobId: flags.jobId }),
        ...(choice === undefined ? {} : { model: choice.model }),
        ...(thinkingLevel === undefined ? {} : { thinkingLevel }),
        ...(waitMs > 0 ? { waitMs } : {}),
      },
      result: flags.timeout === undefined ? {} : { timeoutMs: flags.timeout },
      follow: flags.noFollow !== true,
    });
  },
});

const loadAgentFlags = {
  ...fleetFlags,
  ...workerFlags,
  ...keyFlags,
  once: switchFlag("--once", "exit after one run"),
} as const;

/** `lifeline load-agent`. */
export const loadAgentCommand = command<CliContext, typeof loadAgentFlags>({
  name: "load-agent",
  description: "a generator of distributed load runs (needs --fleet): waits for `lifeline load --generators K` runs",
  flags: loadAgentFlags,
  describe: {
    apiKey:
      "API key for the runs' --model provider (a coordinator never sends one), over auth.json, models.json and its environment variable",
  },
  run: async ({ flags, context }) =>
    context.runtime.loadAgent({
      fleet: await requiredFleet(flags, context, "lifeline load-agent"),
      once: flags.once === true,
      cwd: context.cwd,
      lifelineDir: context.lifelineDir,
      ...workerOptions(flags),
      ...(flags.apiKey === undefined || flags.apiKey === "" ? {} : { apiKey: flags.apiKey }),
    }),
});
