// Bundles the library's public entries ("lifeline", "lifeline/tui", "lifeline/rpc", "lifeline/load",
// "lifeline/fleet", "lifeline/load-fleet") into <dist>/main/bundle/, one ES module per entry over
// shared chunks, which package.json's "exports" point at. Why (docs/embedding.md, "What an
// embedding app pays"): `import "lifeline"` then reads a few files instead of hundreds, with zod
// inside (zod's own 229 files are most of an unbundled import's time). Every other package stays
// an import of node_modules, so each loads only when the code that needs it runs.
//
// The bundle sits two folders under dist/, as src/main/<layer>/ files do under src/, so the URLs
// the code computes from import.meta.url (the worker's entry, ../cli.js, package.json) resolve as
// they do in tsc's output. The modules a host imports at run time (config/run-time-modules.ts)
// become entries of the bundle, and that file is swapped for one that points at them, so a host
// and its fleet connection or extension loader share one copy of every class.
// The tsc output (dist/main/…) stays: the CLI runs from it, and the tests import it.
import { build } from "esbuild";

/** Public entries by output name, then the modules loaded at run time (their names are used below). */
const ENTRIES = {
  lifeline: "src/main/index.ts",
  tui: "src/main/tui/interactive-mode.ts",
  rpc: "src/main/rpc/index.ts",
  load: "src/main/load/index.ts",
  fleet: "src/main/fleet/index.ts",
  "load-fleet": "src/main/load-fleet/index.ts",
  "fleet-connection": "src/main/redis/fleet-connection.ts",
  "import-extension": "src/shared/extensions/import-extension.ts",
  // load/mock/mock-target.ts starts it as a worker, by `new URL("./mock-thread.js", import.meta.url)`.
  "mock-thread": "src/main/load/mock/mock-thread.ts",
};

/**
 * Packages bundled in; every other import of a package is left to node_modules. jsonc-parser too:
 * its `main` is a UMD build whose requires a bundler cannot see, so an app bundling lifeline
 * would otherwise fail at run time unless it knew to prefer the `module` build.
 */
const INLINED = /^(zod|jsonc-parser)(\/|$)/;

const RUN_TIME_MODULES = `
export function fleetConnectionModule() { return new URL("./fleet-connection.js", import.meta.url); }
export function extensionImporterModule() { return new URL("./import-extension.js", import.meta.url); }
`;

/** Builds the bundle into `<outDir>/main/bundle`, from the sources under `root`. */
export async function buildBundle(outDir = "dist", root = process.cwd()) {
  await build({
    absWorkingDir: root,
    entryPoints: ENTRIES,
    outdir: `${outDir}/main/bundle`,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    chunkNames: "chunk-[hash]",
    // ESM builds first (jsonc-parser, above).
    mainFields: ["module", "main"],
    logLevel: "warning",
    legalComments: "eof",
    // Whitespace and syntax only: names stay, so stack traces still say where they are.
    minifyWhitespace: true,
    minifySyntax: true,
    plugins: [
      {
        name: "lifeline-bundle",
        setup(pluginBuild) {
          pluginBuild.onResolve({ filter: /^[^./]/ }, (args) =>
            INLINED.test(args.path) || args.path.startsWith("node:") ? undefined : { path: args.path, external: true },
          );
          pluginBuild.onLoad({ filter: /src\/main\/config\/run-time-modules\.ts$/ }, () => ({
            contents: RUN_TIME_MODULES,
            loader: "js",
          }));
        },
      },
    ],
  });
}

if (import.meta.url === `file://${process.argv[1]}`) await buildBundle(process.argv[2] ?? "dist");
