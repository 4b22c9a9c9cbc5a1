// Builds the two self-contained scripts the package ships for apps that cannot load lifeline's
// worker from node_modules (an Electron app.asar, a bundled app): see docs/embedding.md.
//
//   <out>/lifeline-worker.mjs  lifeline's worker entry with its whole import graph (pi-ai, pi-agent-core,
//                              the providers' SDKs), loadable from a folder with no node_modules.
//   <out>/piscina-worker.cjs   piscina's own worker script (piscina starts every thread with it, from
//                              `worker.js` next to piscina's code) with its two helper files, for an
//                              app that inlines piscina into its own bundle.
//
// One step of scripts/build.mjs, which gives it the folder the build is writing (a temporary one,
// moved into dist/ at the end). `node scripts/build-worker.mjs [outDir]` runs it alone (default dist).
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const common = { bundle: true, platform: "node", target: "node20", logLevel: "warning", legalComments: "eof" };

/**
 * Writes both bundles into `outDir` (relative to `root`, the repository); rejects with esbuild's
 * error when a bundle fails.
 */
export async function buildWorkerBundles(outDir, root = process.cwd()) {
  await build({
    ...common,
    absWorkingDir: root,
    entryPoints: ["src/worker/entry.ts"],
    outfile: resolve(root, outDir, "lifeline-worker.mjs"),
    format: "esm",
    // ESM builds first: jsonc-parser's and others' UMD `main` hides its requires from the bundler.
    mainFields: ["module", "main"],
    // CommonJS dependencies inside an ES module still call `require` for Node's built-ins.
    banner: {
      js: 'import { createRequire as __lifelineCreateRequire } from "node:module";\nconst require = __lifelineCreateRequire(import.meta.url);',
    },
  });

  await build({
    ...common,
    absWorkingDir: root,
    entryPoints: ["node_modules/piscina/dist/worker.js"],
    outfile: resolve(root, outDir, "piscina-worker.cjs"),
    format: "cjs",
    // An optional native module piscina tries and does without (thread priority).
    external: ["@napi-rs/nice"],
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await buildWorkerBundles(process.argv[2] ?? "dist");
