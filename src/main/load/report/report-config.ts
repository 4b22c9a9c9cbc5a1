/**
 * report.json `config`: what a run was asked to do, with every default filled in, so a report says
 * how it was made and `lifeline load compare` can list what differs between two runs. One builder
 * for a run on one host (run-load.ts) and for a distributed run's merged report (load-fleet), so
 * the two cannot drift apart.
 */
import { arrivalConfig } from "../open/arrival-report.js";
import { LOAD_DEFAULTS, type LoadOptions } from "../options/load-options.js";
import { fullMockTools, fullToolBehaviour } from "../options/load-tools.js";
import type { LoadReport } from "./load-report.js";

/** The built-in mock's model name, as report.json `config.model` has it. */
const MOCK_MODEL_NAME = "lifeline-mock/mock-1";

/**
 * `config` of a run of `options` whose sessions ran with `settings` (the settings the run passed
 * to its host, e.g. with the mock's idle timeout added). Pure; never throws.
 */
export function reportConfig(options: LoadOptions, settings: Record<string, unknown>): LoadReport["config"] {
  // Load sessions get the load tool when the mock calls it or its behaviour is set (run-load.ts).
  const tools = options.tools ?? (options.mock?.tools === undefined ? undefined : {});
  return {
    sessions: options.sessions,
    promptsPerSession: options.prompts ?? null,
    durationMs: options.durationMs ?? null,
    target: options.model === undefined ? "mock" : "model",
    model: options.model ?? MOCK_MODEL_NAME,
    thinkingLevel: options.thinkingLevel ?? null,
    faults: [...(options.faults ?? [])],
    seed: options.seed ?? LOAD_DEFAULTS.seed,
    rampUpMs: options.rampUpMs ?? LOAD_DEFAULTS.rampUpMs,
    concurrency: options.concurrency ?? options.sessions,
    thinkTimeMs: options.thinkTimeMs ?? LOAD_DEFAULTS.thinkTimeMs,
    threads: options.threads ?? null,
    promptTexts: options.promptTexts?.length ?? 0,
    conversations: options.conversations?.length ?? 0,
    tools: tools === undefined ? null : fullToolBehaviour(tools),
    mock:
      options.model === undefined
        ? {
            tokens: options.mock?.tokens ?? LOAD_DEFAULTS.mockTokens,
            tokenDelayMs: options.mock?.tokenDelayMs ?? LOAD_DEFAULTS.mockTokenDelayMs,
            rateLimit: options.mock?.rateLimit ?? null,
            tools: options.mock?.tools === undefined ? null : fullMockTools(options.mock.tools),
          }
        : null,
    settings: { ...settings },
    arrival: arrivalConfig(options),
  };
}
