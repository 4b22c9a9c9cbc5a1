/**
 * How a distributed run's load is split among its generators: pure functions.
 *
 * The closed model only (sessions × prompts or duration): `sessions` is split as evenly as
 * possible (the shares differ by at most one, the first ones larger), and so is `concurrency`
 * when given. Each generator's mock gets the seed `seed + index`, so the mocks' fault sequences
 * differ between generators yet a run is reproducible. Prompts per session, duration, ramp-up,
 * think time and the mock's settings apply to every generator as given.
 */
import { LifelineError } from "../../shared/errors.js";
import { LOAD_DEFAULTS, type LoadOptions } from "../load/load-options.js";
import type { ShareOptions } from "./load-fleet-protocol.js";

/** `total` in `parts` shares differing by at most one, larger first. @throws RangeError when total < parts. */
export function evenShares(total: number, parts: number): number[] {
  if (!(Number.isInteger(total) && Number.isInteger(parts) && parts >= 1 && total >= parts)) {
    throw new RangeError(`cannot split ${total} into ${parts} shares of at least 1`);
  }
  const base = Math.floor(total / parts);
  return Array.from({ length: parts }, (_, i) => base + (i < total % parts ? 1 : 0));
}

/**
 * Each generator's options, in generator order.
 * @throws ERR_INVALID_OPTIONS when there are fewer sessions (or less concurrency) than generators.
 */
export function splitLoad(options: LoadOptions, generators: number): ShareOptions[] {
  if (options.sessions < generators) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `--sessions ${options.sessions} cannot be split among --generators ${generators}: give at least one session per generator.`,
    );
  }
  if (options.concurrency !== undefined && options.concurrency < generators) {
    throw new LifelineError(
      "ERR_INVALID_OPTIONS",
      `--concurrency ${options.concurrency} cannot be split among --generators ${generators}: give at least 1 per generator.`,
    );
  }
  const sessions = evenShares(options.sessions, generators);
  const concurrency = options.concurrency === undefined ? undefined : evenShares(options.concurrency, generators);
  const seed = options.seed ?? LOAD_DEFAULTS.seed;
  return sessions.map((share, index) => {
    const part: ShareOptions = { sessions: share, seed: seed + index };
    const copied = [
      "prompts",
      "durationMs",
      "model",
      "faults",
      "rampUpMs",
      "promptTexts",
      "thinkTimeMs",
      "threads",
      "settings",
      "mock",
      "sampleIntervalMs",
    ] as const;
    for (const name of copied) {
      if (options[name] !== undefined) Object.assign(part, { [name]: options[name] });
    }
    const limit = concurrency?.[index];
    if (limit !== undefined) part.concurrency = limit;
    return part;
  });
}
