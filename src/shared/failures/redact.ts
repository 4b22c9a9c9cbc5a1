/**
 * Keeps credentials out of everything that leaves the worker, and out of what a load report
 * quotes (its failure examples, main thread). Keys reach the worker in
 * `SessionInit.apiKey` or its environment; a server that echoes the key in an error body would
 * otherwise put it into an event, the history and the host's logs.
 */

/** Replacement for a secret found in text. */
const REDACTED = "[redacted]";

/**
 * Secrets shorter than this are not searched for: a key "test" would turn every "test" of an error
 * text into "[redacted]", and a key "2" every retry hint. Real provider keys are far longer.
 */
const MIN_SECRET_LENGTH = 8;

/** `text` with every occurrence of each secret replaced by {@link REDACTED}. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let result = text;
  for (const secret of secrets) {
    if (secret.length < MIN_SECRET_LENGTH) continue;
    result = result.split(secret).join(REDACTED);
  }
  return result;
}

/**
 * A copy of `value` (plain data: objects, arrays, strings, numbers, booleans) with
 * {@link redactSecrets} applied to every string in it, keys included. For structured records the
 * worker sends out, such as a request failure, whose every field may hold what a server sent.
 */
export function redactStrings<T>(value: T, secrets: readonly string[]): T {
  if (typeof value === "string") return redactSecrets(value, secrets) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => redactStrings(item, secrets)) as T;
  if (typeof value !== "object" || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) copy[redactSecrets(key, secrets)] = redactStrings(item, secrets);
  return copy as T;
}
