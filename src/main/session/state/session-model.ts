/**
 * A session's model and the model change (model and key) its worker was last sent. `setModel()`
 * switches both; before each model attempt the session's runs ask for R4's fresh key here. Everything
 * else (retry, coordination, compaction, a restore) reads them through this one owner.
 *
 * The model object the worker answers with is a fresh structured clone for every session (its
 * strings and cost record included, about 0.35 KB). Sessions on the same model share one object
 * instead (P4, docs/performance.md): the first of each distinct model the host sees, as pi's own
 * catalogue hands every caller the same object. Equal means deep-strictly equal.
 */
import { isDeepStrictEqual } from "node:util";
import type { Api, Model } from "@mariozechner/pi-ai";
import type { ModelChange } from "../../../shared/wire/protocol.js";
import { freshCredential, type KeySource } from "../../auth/session-credentials.js";

/** Most distinct models shared (a host sees a handful); past it each session keeps its own copy. */
const MAX_SHARED_MODELS = 256;

/** The shared model objects, by their JSON text (checked deep-strictly, so `undefined` fields count). */
const sharedModels = new Map<string, Model<Api>>();

/** The shared object deep-strictly equal to `model`, else `model` (kept as the shared one while there is room). */
export function sharedModel(model: Model<Api>): Model<Api> {
  let key: string;
  try {
    key = JSON.stringify(model);
  } catch {
    return model;
  }
  const known = sharedModels.get(key);
  if (known !== undefined) return isDeepStrictEqual(known, model) ? known : model;
  if (sharedModels.size < MAX_SHARED_MODELS) sharedModels.set(key, model);
  return model;
}

/** One session's current model and the change its worker has. */
export class SessionModel {
  #model: Model<Api>;
  #change: ModelChange;

  /** @param model what `change` resolved to when the session was opened. */
  constructor(model: Model<Api>, change: ModelChange) {
    this.#model = sharedModel(model);
    this.#change = change;
  }

  /** The model of the next model request. */
  get current(): Model<Api> {
    return this.#model;
  }

  /** The model and key the worker was last sent (a restore opens the session again with it). */
  get change(): ModelChange {
    return this.#change;
  }

  /** `setModel()`: the worker took `change` and resolved it to `model`. */
  switched(model: Model<Api>, change: ModelChange): void {
    this.#model = sharedModel(model);
    this.#change = change;
  }

  /**
   * R4, before each attempt: the change to post when `keys` now has another key for the provider
   * than the worker (a rotation switched it), counted as sent; undefined when there is nothing to send.
   */
  freshCredential(keys: KeySource): ModelChange | undefined {
    const change = freshCredential(this.#change, this.#model.provider, keys);
    if (change !== undefined) this.#change = change;
    return change;
  }
}
