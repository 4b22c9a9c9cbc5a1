// Builds the two self-contained scripts the package ships for apps that cannot load lifeline's
// worker from node_modules (an Electron app.asar, a bundled app): see docs/embedding.md.
//
//   dist/lifeline-worker.mjs  lifeline's worker entry with its whole import graph (pi-ai, pi-agent-core,
//                             the providers' SDKs), loadable from a folder with no node_modules.
//   dist/piscina-worker.cjs   piscina's own worker script (piscina starts every thread with it, from
//                             `worker.js` next to piscina's code) with its two helper files, for an
//                             app that inlines piscina into its own bundle.
import { build } from "esbuild";

const common = { bundle: true, platform: "node", target: "node20", logLevel: "warning", legalComments: "eof" };

await build({
  ...common,
  entryPoints: ["src/worker/entry.ts"],
  outfile: "dist/lifeline-worker.mjs",
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
  entryPoints: ["node_modules/piscina/dist/worker.js"],
  outfile: "dist/piscina-worker.cjs",
  format: "cjs",
  // An optional native module piscina tries and does without (thread priority).
  external: ["@napi-rs/nice"],
});
