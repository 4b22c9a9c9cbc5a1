/**
 * Module locations given to a host (its `workerEntry`, a session's `workerModule`) as the file
 * URLs a worker imports, relative paths taken from the host's `cwd`.
 */
import { existsSync } from "node:fs";
import { isAbsolute, resolve as resolvePath } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { LifelineError } from "../../shared/errors.js";

/**
 * A module location as the file URL a worker can import: a `URL` or `file:` string as given, a path
 * resolved against `base` (the host's `cwd`). Paths go through pathToFileURL, so `#`, `?`, spaces
 * and Windows drive letters (`C:\\x`, which `new URL` would read as a `c:` scheme) stay part of the path.
 */
export function toModuleUrl(module: string | URL, base: string): string {
  if (module instanceof URL) return module.href;
  if (/^file:/i.test(module)) return new URL(module).href;
  return pathToFileURL(isAbsolute(module) ? module : resolvePath(base, module)).href;
}

/**
 * A missing worker script would only show when the first worker starts, as an error from inside
 * the pool; say it at once, with the path it was looked for at. Called by `createSessionHost`.
 * @throws ERR_INVALID_OPTIONS when `entry` is a file that does not exist.
 */
export function checkWorkerEntry(entry: string | URL, cwd: string): void {
  const url = toModuleUrl(entry, cwd);
  if (!url.startsWith("file:")) return;
  const path = fileURLToPath(url);
  if (existsSync(path)) return;
  const remedy = `Copy the package's worker bundle (lifeline/worker, dist/lifeline-worker.mjs) there, or fix the path (a relative one is taken from`;
  throw new LifelineError(
    "ERR_INVALID_OPTIONS",
    `Invalid createSessionHost options: workerEntry ${path} does not exist. ${remedy} the host's cwd, ${cwd}).`,
    {
      cliMessage: `--worker-entry (or LIFELINE_WORKER_ENTRY): ${path} does not exist. ${remedy} the working directory, ${cwd}).`,
    },
  );
}
