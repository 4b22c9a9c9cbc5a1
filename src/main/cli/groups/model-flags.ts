/**
 * The model group: `--provider`, `--model`, `--thinking` (pi's flags), and the key group,
 * `--api-key`. Taken by every command that opens sessions or names their model: the modes,
 * `load`, `serve` (the default of its jobs) and `submit` (the job's model).
 *
 * `--model` is resolved as pi's CLI resolves it (model-resolution.ts) against pi-ai's catalogue,
 * models.json and the demo models: `--model gpt-4o` finds the provider with that id, and
 * `--model provider/id:<level>` also sets the thinking level (`--thinking` wins over the suffix).
 */
import { LifelineError } from "../../../shared/errors.js";
import { isThinkingLevel, THINKING_LEVELS, type ThinkingLevel } from "../../../shared/thinking.js";
import type { CliContext } from "../cli-context.js";
import { textFlag, valueFlag } from "../flag.js";
import { nonBlank, usage } from "../flag-values.js";

/** `--thinking`'s parser: a level, or the refusal naming the levels. */
function thinkingLevel(raw: string, flag: string): ThinkingLevel {
  if (!isThinkingLevel(raw))
    usage(`Invalid thinking level "${raw}" (${flag}). Valid values: ${THINKING_LEVELS.join(", ")}.`);
  return raw;
}

/** The model group's flags. */
export const modelFlags = {
  provider: valueFlag(
    "--provider <name>",
    'model provider, for example "openai", or "demo" (the built-in models)',
    nonBlank,
  ),
  model: valueFlag(
    "--model <pattern>",
    'model id, "provider/id", or part of an id or name, resolved as pi does; a ":<level>" suffix sets the thinking level',
    nonBlank,
    { defaultText: "demo/demo-1" },
  ),
  thinking: valueFlag(
    "--thinking <level>",
    `thinking level, clamped to what the model supports: ${THINKING_LEVELS.join(", ")}`,
    thinkingLevel,
    { defaultText: "a resumed session's level, else the defaultThinkingLevel setting" },
  ),
} as const;

/** The key group's flag. */
export const keyFlags = {
  apiKey: textFlag(
    "--api-key <key>",
    "API key for the model's provider, over auth.json, models.json and its environment variable; LIFELINE_API_KEY keeps it off the command line",
    { env: "LIFELINE_API_KEY" },
  ),
} as const;

/** The model flags' values. */
export interface ModelFlagValues {
  provider?: string | undefined;
  model?: string | undefined;
  thinking?: ThinkingLevel | undefined;
}

/** What the model flags resolve to. */
export interface ModelChoice {
  /** `"provider/id"`; the default model when the flags name none. */
  model: string;
  /** `--thinking`, else the model's `:<level>` suffix. */
  thinkingLevel?: ThinkingLevel;
  /** The user named a model (a resumed session otherwise keeps the one its file records). */
  explicit: boolean;
}

/** The model when no flag names one: lifeline's first demo model (no key, no network). */
const DEFAULT_CLI_MODEL = "demo/demo-1";

/**
 * Resolves the model flags; reads models.json (and pi-ai's catalogue) only when `--model` is
 * given. An unknown id of a known provider is passed on as `provider/id`, so the host's
 * ERR_UNKNOWN_MODEL lists that provider's models.
 * @throws ERR_UNKNOWN_MODEL for an unknown provider or a model no provider has, ERR_INVALID_MODELS
 *   for a bad models.json, ERR_INVALID_OPTIONS for `--provider` without `--model`.
 */
export async function resolveModelFlags(values: ModelFlagValues, context: CliContext): Promise<ModelChoice> {
  const level = values.thinking === undefined ? {} : { thinkingLevel: values.thinking };
  if (values.model === undefined) {
    if (values.provider === undefined || values.provider === "demo") {
      return { model: DEFAULT_CLI_MODEL, ...level, explicit: values.provider !== undefined };
    }
    usage(`--provider ${values.provider} needs --model <id> as well.`);
  }
  // Loaded only here: the catalogue is pi-ai's, which --help and the other commands do not need.
  const { knownModels } = await import("./model-catalogue.js");
  const { resolveModelPattern } = await import("./model-resolution.js");
  const catalogue = await knownModels(context.lifelineDir);
  const found = resolveModelPattern(catalogue.models, values.provider, values.model);
  if ("model" in found) {
    const thinkingLevel = values.thinking ?? found.thinkingLevel;
    return {
      model: `${found.model.provider}/${found.model.id}`,
      ...(thinkingLevel === undefined ? {} : { thinkingLevel }),
      explicit: true,
    };
  }
  const named = values.provider ?? providerPrefix(values.model, catalogue.providers);
  if (named !== undefined && catalogue.providers.includes(named)) {
    // The host's error lists the provider's models.
    const prefixed = values.model.toLowerCase().startsWith(`${named.toLowerCase()}/`);
    const id = prefixed ? values.model.slice(named.length + 1) : values.model;
    return { model: `${named}/${id}`, ...level, explicit: true };
  }
  if (values.provider !== undefined) {
    throw new LifelineError(
      "ERR_UNKNOWN_MODEL",
      `Unknown provider "${values.provider}". Known providers: ${catalogue.providers.join(", ")}. Define one in ${catalogue.modelsPath}.`,
    );
  }
  const slash = values.model.indexOf("/");
  if (slash > 0) {
    throw new LifelineError(
      "ERR_UNKNOWN_MODEL",
      `Unknown provider "${values.model.slice(0, slash)}" (--model ${values.model}), and no model has that id. Known providers: ${catalogue.providers.join(", ")}. Define one in ${catalogue.modelsPath}.`,
    );
  }
  throw new LifelineError(
    "ERR_UNKNOWN_MODEL",
    `No model matches "${values.model}": no provider has a model with that id, or one whose id or name contains it. Give it as --model provider/id (providers: ${catalogue.providers.join(", ")}), or define the model in ${catalogue.modelsPath}.`,
  );
}

/** The known provider a `provider/…` pattern starts with (any case), in the catalogue's spelling. */
function providerPrefix(pattern: string, providers: readonly string[]): string | undefined {
  const slash = pattern.indexOf("/");
  if (slash < 0) return undefined;
  const prefix = pattern.slice(0, slash).toLowerCase();
  return providers.find((provider) => provider.toLowerCase() === prefix);
}
