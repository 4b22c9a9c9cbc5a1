/**
 * Resolves a {@link ModelRef} to a pi-ai model inside the worker, where providers live.
 */
import { type Api, getEnvApiKey, getModels, getProviders, type Model } from "@mariozechner/pi-ai";
import { LifelineError } from "../shared/errors.js";
import type { CatalogueQuery, ModelRef, ProviderOverrides } from "../shared/wire/protocol.js";
import { DEMO_PROVIDER, demoModels } from "./demo-provider.js";

/**
 * @throws LifelineError ERR_UNKNOWN_MODEL naming the provider or model and listing what exists.
 */
export function resolveModel(ref: ModelRef): Model<Api> {
  if ("api" in ref && typeof ref.api === "string") return ref;
  const { provider, id } = ref;
  if (provider === DEMO_PROVIDER) {
    const models = demoModels();
    const model = models.get(id);
    if (model !== undefined) return model;
    throw unknownModel(provider, id, [...models.keys()]);
  }
  const providers: readonly string[] = getProviders();
  if (!providers.includes(provider)) {
    const head = `Unknown provider "${provider}". Use one of: ${[DEMO_PROVIDER, ...providers].join(", ")}`;
    throw new LifelineError("ERR_UNKNOWN_MODEL", `${head}, or pass a pi-ai Model object.`, {
      cliMessage: `${head}, or define it in models.json.`,
    });
  }
  const candidates = getModels(provider as Parameters<typeof getModels>[0]) as Model<Api>[];
  const model = candidates.find((candidate) => candidate.id === id);
  if (model !== undefined) return "overrides" in ref ? withOverrides(model, ref.overrides) : model;
  throw unknownModel(
    provider,
    id,
    candidates.map((candidate) => candidate.id),
  );
}

function unknownModel(provider: string, id: string, available: readonly string[]): LifelineError {
  const shown = available.slice(0, 20).join(", ");
  const more = available.length > 20 ? `, and ${available.length - 20} more` : "";
  return new LifelineError(
    "ERR_UNKNOWN_MODEL",
    `Unknown model "${id}" for provider "${provider}". Available: ${shown}${more}.`,
  );
}

/** A copy of a catalogue model with `models.json`'s provider overrides applied (pi's semantics). */
function withOverrides(model: Model<Api>, overrides: ProviderOverrides | undefined): Model<Api> {
  if (overrides === undefined) return model;
  const copy: Model<Api> = { ...model };
  if (overrides.baseUrl !== undefined) copy.baseUrl = overrides.baseUrl;
  if (overrides.headers !== undefined) copy.headers = { ...model.headers, ...overrides.headers };
  if (overrides.compat !== undefined) {
    (copy as { compat?: unknown }).compat = { ...model.compat, ...overrides.compat };
  }
  return copy;
}

/**
 * The models a listing shows from this worker: the demo models, then, with `query`, pi-ai's
 * catalogue models of each provider it names as keyed (or whose credentials pi-ai finds on its
 * own, such as Bedrock's profiles), except those it skips, with its `baseUrl` overrides.
 */
export function listModels(query: CatalogueQuery | undefined): Model<Api>[] {
  const listed: Model<Api>[] = [...demoModels().values()];
  if (query === undefined) return listed;
  for (const provider of getProviders()) {
    if (query.skip.includes(provider)) continue;
    if (!query.keyed.includes(provider) && getEnvApiKey(provider) === undefined) continue;
    const baseUrl = query.baseUrls[provider];
    for (const model of getModels(provider) as Model<Api>[]) {
      listed.push(baseUrl === undefined ? model : { ...model, baseUrl });
    }
  }
  return listed;
}
