/**
 * A counter lifeline keeps in plain numbers and reports through an observable counter (B9,
 * docs/observability.md "Cost"). A synchronous counter's `add()` makes the SDK hash the attribute
 * set on every call; here a count is an integer add into a {@link Tally} the caller holds, and the
 * SDK reads every tally once per collection. Exporters see the same data as from a synchronous
 * counter: a monotonic sum per attribute set, cumulative since the first count (delta temporality
 * is derived by the SDK from the cumulative values, as for any observable counter).
 *
 * Tallies are never dropped, as a synchronous counter's series are not: the attribute sets are few
 * by construction (no session id, prompt or key is ever an attribute).
 */
import type { Attributes, Meter, MetricOptions, ObservableResult } from "@opentelemetry/api";

/** One attribute set's count. Hold it and add to `value`; `attributes` must never change. */
export interface Tally {
  readonly attributes: Attributes;
  value: number;
}

/** See the file comment. Main thread only; one per instrument name and meter (instruments.ts). */
export class TalliedCounter {
  readonly #tallies = new Map<string, Tally>();

  /** Creates the observable counter `name` on `meter`; its callback stays for the meter's life. */
  constructor(meter: Meter, name: string, options: MetricOptions) {
    const counter = meter.createObservableCounter(name, options);
    counter.addCallback((result: ObservableResult) => {
      for (const tally of this.#tallies.values()) result.observe(tally.value, tally.attributes);
    });
  }

  /**
   * The tally of `attributes`, made on first use; the same tally for the same set in any key order.
   * Builds a key from the set, so a hot path keeps the tally it gets rather than calling this per count.
   */
  tally(attributes: Attributes): Tally {
    const key = keyOf(attributes);
    let tally = this.#tallies.get(key);
    if (tally === undefined) {
      tally = { attributes, value: 0 };
      this.#tallies.set(key, tally);
    }
    return tally;
  }

  /** Adds `value` (≥ 0) to the tally of `attributes`: for counts too rare to keep a tally for. */
  add(value: number, attributes: Attributes): void {
    this.tally(attributes).value += value;
  }
}

/** A key that tells attribute sets apart whatever their key order (values are primitives here). */
function keyOf(attributes: Attributes): string {
  let key = "";
  for (const name of Object.keys(attributes).sort()) key += `${name}\u0000${String(attributes[name])}\u0001`;
  return key;
}
