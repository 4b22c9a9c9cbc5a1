/**
 * The models a host's sessions can use now (`SessionHost.availableModels`): asked of a worker,
 * since pi-ai's catalogue and the demo models live in the worker's bundle.
 */
import type { Api, Model } from "@mariozechner/pi-ai";
import { DEMO_PROVIDER } from "../../shared/demo-models.js";
import { catalogueQuery, listConfiguredModels } from "../config/models-config.js";
import type { WorkerRoster } from "../workers/worker-roster.js";
import type { HostConfig } from "./host-config.js";

/**
 * The worker's own (demo) models first, then models.json's, then pi-ai's catalogue for providers
 * that have a key, with models.json's overrides applied. Starts a worker if none is running.
 * @throws ERR_INVALID_MODELS for a malformed models.json, and what a worker call throws.
 */
export async function availableModels(config: HostConfig, workers: WorkerRoster): Promise<Model<Api>[]> {
  const models = await config.models();
  const { link, release } = await workers.pick();
  let builtIn: Model<Api>[];
  try {
    builtIn = await link.call("listBuiltInModels", catalogueQuery(models));
  } finally {
    release();
  }
  const own = builtIn.filter((model) => model.provider === DEMO_PROVIDER);
  const catalogue = builtIn.filter((model) => model.provider !== DEMO_PROVIDER);
  return [...own, ...listConfiguredModels(models), ...catalogue];
}
