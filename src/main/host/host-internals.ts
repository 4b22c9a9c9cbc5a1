/**
 * Test-only parts of a host, kept out of the public `SessionHostOptions` (and so out of the
 * package's types): an in-process source of worker endpoints and a replacement retry sleep.
 * Tests reach them by this module's path; `src/main/index.ts` does not export it.
 *
 * They ride on the options object under a symbol key, so they pass through every API that takes
 * host options and spreads them (RPC mode's `host`, the CLI runtimes) while the options' schema,
 * which checks string keys only, still refuses a `connect` or `sleep` field as unknown.
 */
import type { LinkEndpoint } from "../workers/link-options.js";
import type { SessionHostOptions } from "./host-options.js";

/** What a test may replace in a host. */
export interface HostInternals {
  /**
   * Replaces the piscina pool as the source of worker endpoints: for tests that serve the worker
   * API in-process over a MessageChannel.
   */
  connect?: () => LinkEndpoint;
  /** Replaces the retry sleep (tests with an injected clock). @default a main-thread timer */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** Registered, so a second copy of this module (a bundle beside dist/) finds the same key. */
const INTERNALS = Symbol.for("lifeline.hostInternals");

/**
 * `options` carrying `internals` (over any it carried already), typed as the public options so it
 * goes wherever they go. Never throws.
 */
export function withHostInternals(options: SessionHostOptions, internals: HostInternals): SessionHostOptions {
  const carrying: SessionHostOptions & { [INTERNALS]: HostInternals } = {
    ...options,
    [INTERNALS]: { ...hostInternals(options), ...internals },
  };
  return carrying;
}

/** The internals `options` carries; none for options from anywhere but {@link withHostInternals}. */
export function hostInternals(options: SessionHostOptions): HostInternals {
  return (options as { [INTERNALS]?: HostInternals })[INTERNALS] ?? {};
}
