/**
 * R4 for one session: the key each model attempt goes out with, and the fallback model a session
 * moves to when every key of its provider is blocked.
 */
import type { ModelChange } from "../../shared/wire/protocol.js";

/** Where a session's keys come from (the host, through `SessionCredentials`). */
export interface KeySource {
  /** The auth storage's key for this session and `provider` now; undefined without a storage. */
  keyFor?: (provider: string) => string | undefined;
  /** The provider whose key the session was given explicitly (`apiKey`): never asked of the storage. */
  pinnedProvider?: string;
}

/**
 * R4, asked before each attempt (a rotation may have switched the key): `current` with the
 * storage's key for `provider` now, when that key differs from the one the worker has;
 * undefined when there is nothing to send. Pure.
 */
export function freshCredential(current: ModelChange, provider: string, keys: KeySource): ModelChange | undefined {
  const keyFor = keys.keyFor;
  if (keyFor === undefined || provider === keys.pinnedProvider) return undefined;
  const key = keyFor(provider);
  if (key === undefined || key === current.apiKey) return undefined;
  return { ...current, apiKey: key };
}

/**
 * R4: every key of the provider is blocked: moves the session to the next model of `fallbacks`
 * (after `current`, `"provider/id"`, if listed) whose provider has a usable key, through
 * `setModel` (a real model switch: recorded, and later prompts stay on it).
 * @returns the name switched to; undefined when none could be. Never rejects.
 */
export async function switchToFallback(
  fallbacks: readonly string[],
  current: string,
  isProviderExhausted: ((provider: string) => boolean) | undefined,
  setModel: (name: string) => Promise<unknown>,
): Promise<string | undefined> {
  for (const name of fallbacks.slice(fallbacks.indexOf(current) + 1)) {
    if (name === current) continue;
    const provider = name.slice(0, name.indexOf("/"));
    if (isProviderExhausted?.(provider) === true) continue;
    try {
      await setModel(name);
      return name;
    } catch {
      // Unknown model or no key: try the next one.
    }
  }
  return undefined;
}
