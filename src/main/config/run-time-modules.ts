/**
 * Where the modules a host imports at run time (config/run-time-import.ts) are: files of
 * lifeline's build beside this one's. The bundle of the public entries (scripts/build-bundle.mjs)
 * replaces this file with its own map, where each module is an entry of the bundle beside its
 * chunks, so that a bundled host and its run-time modules share one copy of every class.
 */

/** Fleet mode's connection to Redis (redis/fleet-connection.ts). */
export function fleetConnectionModule(): URL {
  return new URL("../redis/fleet-connection.js", import.meta.url);
}

/** The extension loader of the main thread (shared/extensions/import-extension.ts). */
export function extensionImporterModule(): URL {
  return new URL("../../shared/extensions/import-extension.js", import.meta.url);
}
