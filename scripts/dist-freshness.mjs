// Whether dist/ is a build of the sources as they are now: `npm start` (through scripts/build.mjs
// --if-stale) builds only when it is not, so a second start costs the demo's time alone.
//
// What counts as a source is what the build reads or what changes its output:
//   src/                        everything tsc compiles and esbuild bundles
//   scripts/build.mjs, scripts/build-worker.mjs, scripts/build-bundle.mjs,
//   scripts/dist-freshness.mjs  the build's steps and this very rule
//   tsconfig.json, tsconfig.build.json
//                               compiler options (the build's extends the base)
//   package.json                the bin (made executable), the version, the dependencies' ranges
//   package-lock.json           the exact versions esbuild bundles into dist/lifeline-worker.mjs
//                               and dist/main/bundle/
// Not counted: tests, docs, bench (nothing of them reaches dist/) and node_modules itself (the
// lockfile stands for it: `npm install` changes it, and runs `prepare`, which builds anyway).
//
// A build records in dist/ the time it started (STAMP), not the time it ended, so a source saved
// while a build runs makes that build stale. dist/ is fresh when the stamp is there and every
// source was last modified before it; a checkout that rewrites a file makes it newer, so switching
// branches rebuilds. The stamp is left out of the package (package.json `files`).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** The sources, relative to the repository; a folder counts every file under it. */
export const SOURCES = [
  "src",
  "scripts/build.mjs",
  "scripts/build-worker.mjs",
  "scripts/build-bundle.mjs",
  "scripts/dist-freshness.mjs",
  "tsconfig.json",
  "tsconfig.build.json",
  "package.json",
  "package-lock.json",
];

/** The stamp's path inside a build's output folder. */
export const STAMP = ".build-stamp.json";

/** The newest modification of `path`'s files (every file under it, if a folder), or undefined if absent. */
function newestMtime(path) {
  if (!existsSync(path)) return undefined;
  const stat = statSync(path);
  if (!stat.isDirectory()) return { path, mtimeMs: stat.mtimeMs };
  let newest;
  for (const entry of readdirSync(path, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = join(entry.parentPath, entry.name);
    const mtimeMs = statSync(file).mtimeMs;
    if (newest === undefined || mtimeMs > newest.mtimeMs) newest = { path: file, mtimeMs };
  }
  return newest;
}

/** Reads the start time a build recorded in `distDir`, or undefined if there is none (or it is unreadable). */
export function readStamp(distDir) {
  try {
    const startedAt = JSON.parse(readFileSync(join(distDir, STAMP), "utf8")).startedAt;
    return typeof startedAt === "number" ? startedAt : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `root`/dist is a build of `root`'s current sources: `{ fresh, reason }`, the reason a
 * sentence for the log. Never throws for a missing or partial dist/ (it is then not fresh).
 */
export function distFreshness(root, sources = SOURCES) {
  const dist = join(root, "dist");
  if (!existsSync(dist)) return { fresh: false, reason: "dist/ is missing" };
  const startedAt = readStamp(dist);
  if (startedAt === undefined) return { fresh: false, reason: `dist/ has no ${STAMP} (not made by scripts/build.mjs)` };
  for (const source of sources) {
    const newest = newestMtime(join(root, source));
    if (newest !== undefined && newest.mtimeMs >= startedAt) {
      return { fresh: false, reason: `${newest.path.slice(root.length + 1)} changed after dist/ was built` };
    }
  }
  return { fresh: true, reason: "dist/ was built after the last change to its sources" };
}

// `node scripts/dist-freshness.mjs`: exits 0 when dist/ is fresh, 1 when not, and says why.
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { fresh, reason } = distFreshness(process.cwd());
  process.stdout.write(`${reason}\n`);
  process.exitCode = fresh ? 0 : 1;
}
