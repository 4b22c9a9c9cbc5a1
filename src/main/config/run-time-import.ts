/**
 * Imports a module of lifeline's own that only some hosts use (fleet mode's Redis client, the
 * extension loader of the main thread) by a URL computed at run time. A bundler packing an app from
 * `import "lifeline"` follows only literal imports, so the app's bundle carries none of these
 * modules or their packages (ioredis, jiti, pi-ai…); a host loads one the first time it uses the
 * feature, from lifeline's files. An app that bundles lifeline and uses such a feature keeps the
 * `lifeline` package external to its bundle (docs/embedding.md, "What an embedding app pays").
 */
import { errorText } from "../../shared/failures/error-text.js";

/**
 * The module at `url` (a file of lifeline's, computed with `new URL(…, import.meta.url)` where it
 * is needed). When it cannot be found (lifeline was bundled into an app without its files), the
 * error `missing` makes, which names the feature and what to do, is thrown instead.
 */
export async function importAtRunTime<T>(url: URL, missing: (detail: string) => Error): Promise<T> {
  try {
    return (await import(url.href)) as T;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "ERR_MODULE_NOT_FOUND" && errorText(error).includes(url.pathname.split("/").at(-1) ?? "")) {
      throw missing(`${url.href} is not there (${errorText(error)})`);
    }
    throw error;
  }
}
