/**
 * The attribute sets of one (provider, model)'s request metrics (B9), built once and reused for
 * every record: the SDK hashes the set it is given on each record, and a set made per record (a
 * spread per metric) only adds garbage to that. Also holds the {@link Tally} of each outcome of
 * `lifeline.model.attempts`, so counting a request is an integer add (tallied-counter.ts).
 * The sets are never mutated after they are made: the SDK keeps the first set of each series.
 */
import type { Attributes } from "@opentelemetry/api";
import type { ModelAttempt } from "./model-attempt.js";
import type { TalliedCounter, Tally } from "./tallied-counter.js";

/** One (provider, model)'s sets; see the file comment. */
export class ModelSeries {
  /** `gen_ai.operation.name` (`chat`), `gen_ai.provider.name`, `gen_ai.request.model`. */
  readonly base: Attributes;
  /** {@link base} with `gen_ai.token.type` `input`, and with `output`. */
  readonly inputTokens: Attributes;
  readonly outputTokens: Attributes;
  readonly #attempts: TalliedCounter;
  /** {@link base} with `error.type`, by error type. */
  readonly #failed = new Map<string, Attributes>();
  /** `lifeline.model.attempts` tallies, by error type, outcome, retry class and kind. */
  readonly #tallies = new Map<string, Tally>();

  constructor(provider: string, model: string, attempts: TalliedCounter) {
    this.base = { "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": model };
    this.inputTokens = { ...this.base, "gen_ai.token.type": "input" };
    this.outputTokens = { ...this.base, "gen_ai.token.type": "output" };
    this.#attempts = attempts;
  }

  /** The set of a request that ended with `errorType`: {@link base} for one without. */
  operation(errorType: string | undefined): Attributes {
    if (errorType === undefined) return this.base;
    let set = this.#failed.get(errorType);
    if (set === undefined) {
      set = { ...this.base, "error.type": errorType };
      this.#failed.set(errorType, set);
    }
    return set;
  }

  /** Counts `attempt` in `lifeline.model.attempts`; `retry` is its number in its chain (0: a first attempt). */
  countAttempt(attempt: ModelAttempt, retry: number): void {
    const kind = retry > 0 ? "retry" : "first";
    const key = `${attempt.errorType ?? ""}\u0000${attempt.outcome}\u0000${attempt.retryClass}\u0000${kind}`;
    let tally = this.#tallies.get(key);
    if (tally === undefined) {
      tally = this.#attempts.tally({
        ...this.operation(attempt.errorType),
        "lifeline.attempt.outcome": attempt.outcome,
        "lifeline.retry_class": attempt.retryClass,
        "lifeline.attempt.kind": kind,
      });
      this.#tallies.set(key, tally);
    }
    tally.value++;
  }
}

/** Every {@link ModelSeries} of one meter, by provider and model. */
export class ModelSeriesTable {
  readonly #byProvider = new Map<string, Map<string, ModelSeries>>();
  readonly #attempts: TalliedCounter;

  constructor(attempts: TalliedCounter) {
    this.#attempts = attempts;
  }

  /** The series of `provider`'s `model`, made on first use. */
  get(provider: string, model: string): ModelSeries {
    let models = this.#byProvider.get(provider);
    if (models === undefined) {
      models = new Map();
      this.#byProvider.set(provider, models);
    }
    let series = models.get(model);
    if (series === undefined) {
      series = new ModelSeries(provider, model, this.#attempts);
      models.set(model, series);
    }
    return series;
  }
}
