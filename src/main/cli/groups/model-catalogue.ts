/**
 * The models `--model` is resolved against, in pi's order (model-resolution.ts): pi-ai's built-in
 * providers in pi-ai's order, each provider's models in catalogue order (a models.json provider
 * of the same name that defines models replaces its list), then the providers models.json
 * defines, then lifeline's demo models. Loaded by the model flags only when `--model` is given.
 */
import { getModels, getProviders } from "@mariozechner/pi-ai";
import { DEMO_MODEL_IDS, DEMO_PROVIDER } from "../../../shared/demo-models.js";
import { loadModelsConfig, modelsPath } from "../../config/models-config.js";
import type { KnownModel } from "./model-resolution.js";

/** The models and providers `--model` may name, and where models.json is. */
export interface ModelCatalogue {
  models: KnownModel[];
  /** Every provider, in the same order. */
  providers: string[];
  modelsPath: string;
}

/**
 * Reads models.json from `lifelineDir` and lists every model.
 * @throws ERR_INVALID_MODELS for a models.json that cannot be used.
 */
export async function knownModels(lifelineDir: string): Promise<ModelCatalogue> {
  const path = modelsPath(lifelineDir);
  const config = await loadModelsConfig(path);
  const models: KnownModel[] = [];
  const builtIn: readonly string[] = getProviders();
  for (const provider of builtIn) {
    const custom = config.providers[provider]?.models;
    if (custom !== undefined && custom.length > 0) {
      models.push(...custom.map((model) => known(provider, model.id, model.name)));
      continue;
    }
    for (const model of getModels(provider as Parameters<typeof getModels>[0])) {
      models.push(known(provider, model.id, model.name));
    }
  }
  for (const [provider, entry] of Object.entries(config.providers)) {
    if (builtIn.includes(provider)) continue;
    models.push(...(entry.models ?? []).map((model) => known(provider, model.id, model.name)));
  }
  models.push(...DEMO_MODEL_IDS.map((id) => known(DEMO_PROVIDER, id, undefined)));
  const providers = [...new Set([...builtIn, ...Object.keys(config.providers), DEMO_PROVIDER])];
  return { models, providers, modelsPath: path };
}

function known(provider: string, id: string, name: string | undefined): KnownModel {
  return name === undefined ? { provider, id } : { provider, id, name };
}
