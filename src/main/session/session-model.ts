/**
 * A session's model and the model change (model and key) its worker was last sent. `setModel()`
 * switches both; before each model attempt the session's runs ask for R4's fresh key here. Everything
 * else (retry, coordination, compaction, a restore) reads them through this one owner.
 */
import type { Api, Model } from "@mariozechner/pi-ai";
import type { ModelChange } from "../../shared/protocol.js";
import { freshCredential, type KeySource } from "../auth/session-credentials.js";

/** One session's current model and the change its worker has. */
export class SessionModel {
  #model: Model<Api>;
  #change: ModelChange;

  /** @param model what `change` resolved to when the session was opened. */
  constructor(model: Model<Api>, change: ModelChange) {
    this.#model = model;
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
    this.#model = model;
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
