/**
 * Imports an extension module as pi does: through jiti, so `.ts` and `.js` files load without a
 * build step. Used on both threads (each thread imports its own copy; nothing is shared).
 *
 * jiti is imported from `jiti/static`, the entry that imports its Babel transform statically, so
 * the worker bundle (`dist/lifeline-worker.mjs`) carries it and an app that ships only the bundle
 * can still load extensions. jiti and the packages below load lazily, with the first extension:
 * a host without extensions pays nothing for them.
 *
 * `@mariozechner/pi-ai`, `@mariozechner/pi-agent-core` and `typebox` (also under pi's old name
 * `@sinclair/typebox`) resolve to lifeline's own copies, as pi resolves them to its own, so an
 * extension written for pi needs no node_modules for them. Any other import resolves from the
 * extension's own directory upwards, as in Node.
 */

import { ExtensionLoadError } from "../errors.js";
import { errorText } from "../failures/error-text.js";
import type { ExtensionFactory } from "./extension-api.js";

type Jiti = { import(id: string, options?: { default?: boolean }): Promise<unknown> };

let jiti: Promise<Jiti> | undefined;

/** One jiti instance per thread, created with the first extension. */
function getJiti(): Promise<Jiti> {
  jiti ??= (async () => {
    const [{ createJiti }, piAi, piAgentCore, typebox] = await Promise.all([
      import("jiti/static"),
      import("@mariozechner/pi-ai"),
      import("@mariozechner/pi-agent-core"),
      import("typebox"),
    ]);
    return createJiti(import.meta.url, {
      // Each host (main) and each worker keeps its own factories; never Node's require cache.
      moduleCache: false,
      virtualModules: {
        "@mariozechner/pi-ai": piAi,
        "@mariozechner/pi-agent-core": piAgentCore,
        typebox,
        "@sinclair/typebox": typebox,
      },
    }) as Jiti;
  })();
  return jiti;
}

/**
 * Imports the module at `file` (an absolute path) and returns its default export, the factory.
 * `shownPath` is the path as the user gave it, for messages.
 * @throws ExtensionLoadError (ERR_EXTENSION_LOAD) when the import throws or no factory is exported.
 */
export async function importExtension(file: string, shownPath: string): Promise<ExtensionFactory> {
  let loaded: unknown;
  try {
    loaded = await (await getJiti()).import(file, { default: true });
  } catch (error) {
    throw new ExtensionLoadError(
      shownPath,
      `Extension ${shownPath} failed to load: ${errorText(error)}. Fix the module, or leave it out (--no-extensions ignores the settings' extensions).`,
      { cause: error },
    );
  }
  if (typeof loaded !== "function") {
    throw new ExtensionLoadError(
      shownPath,
      `Extension ${shownPath} does not export a factory function: export default function (pi) { … }.`,
    );
  }
  return loaded as ExtensionFactory;
}
