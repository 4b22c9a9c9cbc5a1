// The build (`npm run build`): every step writes into a temporary folder next to dist/, and the
// finished output is moved into place by two renames (dist/ aside, the new folder in). A process
// running from dist/ (a CLI, a test, `npx lifeline`) never sees dist/ missing or half-written, except
// for the instant between the renames; a failed build leaves the previous dist/ as it was.
//
//   node scripts/build.mjs              builds
//   node scripts/build.mjs --if-stale   builds only when dist/ is missing or older than its sources
//                                       (scripts/dist-freshness.mjs says what counts): `npm start`
//   node scripts/build.mjs --prepare    npm's `prepare`: builds, except under `npm exec` (below)
//
// A new step goes into BUILD_STEPS, in order; each receives the folder it writes into.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildBundle } from "./build-bundle.mjs";
import { buildWorkerBundles } from "./build-worker.mjs";
import { distFreshness, STAMP } from "./dist-freshness.mjs";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

/** Runs a program with the build's stdio; rejects when it fails. Not execFileSync: a caller's loop keeps turning. */
function runChild(program, args, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { cwd, stdio: "inherit" });
    child.on("error", reject);
    child.on("exit", (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${args.join(" ")} failed (${signal ?? `exit code ${code}`})`)),
    );
  });
}

/** The steps of the build, in order: `run(outDir, root)` writes into `outDir` (absolute) and may be async. */
export const BUILD_STEPS = [
  {
    name: "tsc",
    run: (outDir, root) => {
      const tsc = createRequire(join(root, "package.json")).resolve("typescript/bin/tsc");
      return runChild(process.execPath, [tsc, "-p", "tsconfig.build.json", "--outDir", outDir], root);
    },
  },
  { name: "worker bundles", run: (outDir, root) => buildWorkerBundles(outDir, root) },
  // The library's entries for package.json's exports (build-bundle.mjs says why).
  { name: "entry bundle", run: (outDir, root) => buildBundle(outDir, root) },
  // The bin (package.json `bin`): npm links it executable on install, a clone runs it as is.
  { name: "executable bin", run: (outDir) => chmodSync(join(outDir, "main", "cli.js"), 0o755) },
];

/** Prefixes of the build's temporary folders, next to dist/ (gitignored, never packed). */
export const TEMP_PREFIXES = [".dist-build-", ".dist-old-"];

/**
 * Moves `built` into `dist`: the current dist/ aside, then `built` in, then the old one removed.
 * Another build may swap at the same time; each move is retried a bounded number of times.
 */
function swapIntoPlace(built, dist, aside) {
  for (let attempt = 1; ; attempt++) {
    try {
      renameSync(dist, aside);
    } catch (error) {
      if (error.code !== "ENOENT") throw error;
    }
    try {
      renameSync(built, dist);
      break;
    } catch (error) {
      // Another build put its dist/ in between our two renames: move that one aside too.
      if ((error.code !== "ENOTEMPTY" && error.code !== "EEXIST") || attempt === 5) throw error;
      rmSync(aside, { recursive: true, force: true });
    }
  }
  rmSync(aside, { recursive: true, force: true });
}

/**
 * Runs `steps` into a temporary folder of `root` and moves the result to `root`/dist. Rejects with
 * the failing step's error; the temporary folder is then removed and dist/ left untouched.
 */
export async function build({
  root = ROOT,
  steps = BUILD_STEPS,
  log = (line) => process.stderr.write(`${line}\n`),
} = {}) {
  const startedAt = Date.now();
  const built = join(root, `${TEMP_PREFIXES[0]}${process.pid}`);
  const aside = join(root, `${TEMP_PREFIXES[1]}${process.pid}`);
  rmSync(built, { recursive: true, force: true });
  mkdirSync(built);
  try {
    for (const step of steps) {
      log(`build: ${step.name}`);
      await step.run(built, root);
    }
    writeFileSync(join(built, STAMP), `${JSON.stringify({ startedAt })}\n`);
    swapIntoPlace(built, join(root, "dist"), aside);
  } finally {
    rmSync(built, { recursive: true, force: true });
  }
}

/** `--if-stale`: builds only when dist/ is not fresh; resolves to whether it built. */
export async function buildIfStale(options = {}) {
  const { fresh, reason } = distFreshness(options.root ?? ROOT);
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  if (fresh) {
    log(`build: skipped, ${reason}`);
    return false;
  }
  log(`build: ${reason}`);
  await build(options);
  return true;
}

/**
 * What `prepare` does for the npm command that runs it (`npm_command`): "build", or "skip" under
 * `npm exec` / `npx` when dist/ exists.
 *
 * Why: `npx lifeline` in a clone finds the bin in the project's own package.json, and npm then
 * installs the project into its npx cache as a linked directory dependency (libnpmexec: "we have
 * to install the local package into the npx cache so that its bin links get set up"), which runs
 * the dependency's `prepare`. A clone's dist/ was built by `npm install` (which runs `prepare`
 * too), so that run would only rebuild what is there, and delete it meanwhile. `npm install` from
 * git, `npm pack` and `npm publish` run `prepare` under their own commands and still build; so does
 * `npx` in a clone that has no dist/ at all.
 */
export function prepareAction(npmCommand, distExists) {
  return npmCommand === "exec" && distExists ? "skip" : "build";
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  const unknown = args.filter((arg) => arg !== "--if-stale" && arg !== "--prepare");
  if (unknown.length > 0 || args.length > 1) {
    process.stderr.write(`build: unexpected arguments ${args.join(" ")}; give at most one of --if-stale, --prepare\n`);
    process.exit(2);
  }
  if (args[0] === "--if-stale") await buildIfStale();
  else if (
    args[0] !== "--prepare" ||
    prepareAction(process.env.npm_command, existsSync(join(ROOT, "dist"))) === "build"
  )
    await build();
  else {
    const { fresh } = distFreshness(ROOT);
    const note = fresh ? "" : "; it is older than the sources: run `npm run build`";
    process.stderr.write(`build: skipped under npm exec (dist/ is there${note})\n`);
  }
}
