/**
 * Whether a model can be streamed in this worker: pi-ai dispatches every request on `model.api`
 * through its provider registry, which is per thread.
 */
import { type Api, getApiProvider, getApiProviders, type Model } from "@mariozechner/pi-ai";
import { LifelineError } from "../shared/errors.js";

/**
 * Checked when a session opens (after its worker module's `setup()`, which may register
 * providers) and on `setModel`, so a model no provider serves is refused at the call that named
 * it instead of failing at its first prompt.
 * @throws LifelineError ERR_INVALID_OPTIONS naming `model.api` and the registered APIs.
 */
export function assertRegisteredApi(model: Model<Api>): void {
  if (getApiProvider(model.api) !== undefined) return;
  const registered = getApiProviders()
    .map((provider) => provider.api)
    .sort();
  throw new LifelineError(
    "ERR_INVALID_OPTIONS",
    `model.api "${model.api}" of model ${model.provider}/${model.id} has no provider registered in the worker. Registered APIs: ${registered.join(", ")}. Use one of them, or register the API in the worker module's setup() (pi-ai registerApiProvider).`,
  );
}
