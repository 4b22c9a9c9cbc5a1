/**
 * A layer of settings as it is written (a settings file, a host's or a session's `settings`) and
 * how layers merge; settings.ts validates the merged result.
 */
import type { ThinkingLevel } from "../thinking.js";

/** What a settings file or an override may contain: any subset, nested. */
export interface SettingsInput {
  sessionDir?: string;
  sessions?: { fsync?: "never" | "batch" | "always" };
  retry?: {
    enabled?: boolean;
    maxRetries?: number;
    baseDelayMs?: number;
    respectRetryAfter?: boolean;
    jitter?: "none" | "full" | "equal";
    maxDelayMs?: number;
    fallbackModels?: string[];
    provider?: { maxRetries?: number; timeoutMs?: number; maxRetryDelayMs?: number; idleTimeoutMs?: number };
    budget?: { ratio?: number; minPerSecond?: number; windowMs?: number } | false;
    coordinate?: boolean;
    maxConcurrentRequests?: number;
  };
  supervision?: { maxRestarts?: number; windowMs?: number };
  extensionHandlerTimeoutMs?: number;
  /** Read by the CLI only (see the schema). */
  extensions?: string[];
  compaction?: { enabled?: boolean; reserveTokens?: number; keepRecentTokens?: number };
  fleet?: { redis?: string; name?: string; leaseMs?: number; sessionTtlMs?: number };
  defaultThinkingLevel?: ThinkingLevel;
  /** Host-wide (see the schema): a session's `settings` may not set it. */
  proxy?: string;
  /** Host-wide (see the schema). */
  noProxy?: string;
  /** Host-wide (see the schema). */
  caFile?: string;
  [key: string]: unknown;
}

/**
 * Deep-merges settings layers, later layers winning key by key. Arrays and scalars replace.
 * Inputs are not modified.
 */
export function mergeSettings(...layers: readonly (SettingsInput | undefined)[]): SettingsInput {
  let merged: Record<string, unknown> = {};
  for (const layer of layers) {
    if (layer !== undefined) merged = mergeObjects(merged, layer);
  }
  return merged;
}

function mergeObjects(base: Record<string, unknown>, top: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(top)) {
    const previous = out[key];
    out[key] = isPlainObject(previous) && isPlainObject(value) ? mergeObjects(previous, value) : value;
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
