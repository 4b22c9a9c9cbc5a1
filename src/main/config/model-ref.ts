/**
 * Model references as users write them: `"provider/id"` or `{ provider, id }`, in options, settings
 * (`defaultProvider`/`defaultModel`), RPC's `set_model` and the CLI's `--model`.
 */
import { LifelineError } from "../../shared/errors.js";
import type { ModelRef } from "../../shared/wire/protocol.js";

/** `"provider/id"` → `{ provider, id }`. @throws ERR_INVALID_OPTIONS without a slash. */
function parseModelName(name: string): ModelRef {
  const slash = name.indexOf("/");
  if (slash <= 0 || slash === name.length - 1) {
    throw new LifelineError("ERR_INVALID_OPTIONS", `Model "${name}" must be "provider/id", for example "demo/demo-1".`);
  }
  return { provider: name.slice(0, slash), id: name.slice(slash + 1) };
}

/** A reference in either form as `{ provider, id }`. @throws ERR_INVALID_OPTIONS for a string without a slash. */
export function toModelRef(model: string | ModelRef): ModelRef {
  return typeof model === "string" ? parseModelName(model) : model;
}
