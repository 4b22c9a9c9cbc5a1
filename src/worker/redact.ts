/**
 * Keeps credentials out of everything that leaves the worker. Keys reach the worker in
 * `SessionInit.apiKey` or its environment; a server that echoes the key in an error body would
 * otherwise put it into an event, the history and the host's logs.
 */

/** Replacement for a secret found in text. */
export const REDACTED = "[redacted]";

/** Secrets shorter than this are not searched for: replacing "x" everywhere would garble text. */
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
