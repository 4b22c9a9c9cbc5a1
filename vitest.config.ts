/**
 * One project per test tier; the tier is the file name's suffix (CONTRIBUTING.md, "Tests"):
 *
 *   unit     *.test.ts           in-process, imports src/ only: runs without a build
 *   thread   *.thread.test.ts    real worker threads through the built dist/
 *   process  *.process.test.ts   child processes of the built CLI
 *   browser  *.browser.test.ts   headless Chromium (from the devDependency @sparticuz/chromium)
 *   tmux     *.tmux.test.ts      a real terminal, through tmux
 *   redis    *.redis.test.ts     a real redis-server on loopback (fleet mode), often with CLI children
 *
 * `vitest run` runs every project; `vitest run --project unit` one (npm run test:unit).
 */
import { dirname, resolve } from "node:path";
import { configDefaults, defineConfig, type Plugin } from "vitest/config";

const TIERS = ["thread", "process", "redis", "browser", "tmux"] as const;
const tierFiles = (tier: string) => `test/**/*.${tier}.test.ts`;

const dist = resolve(import.meta.dirname, "dist");

/**
 * The unit tier runs without dist/ (`npm run test:unit` does not build): a unit test that imports
 * from dist/ fails at once, naming the tier its file belongs to, instead of passing only where a
 * build happens to be lying around.
 */
const unitsImportNoBuild: Plugin = {
  name: "lifeline:units-import-no-build",
  enforce: "pre",
  resolveId(source, importer) {
    if (importer === undefined || !source.startsWith(".")) return null;
    const target = resolve(dirname(importer), source);
    if (target === dist || target.startsWith(`${dist}/`)) {
      throw new Error(
        `${importer} imports ${source}, from the build. A plain *.test.ts is a unit test and runs without dist/: import from src/, or rename the file to the tier it needs (*.thread.test.ts, *.process.test.ts, …).`,
      );
    }
    return null;
  },
};

/** The units run first, on their own, so that `npm test` reports them before the slow tiers start. */
const afterUnits = { groupOrder: 1 };

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: "forks",
    // FC_SEED / FC_PATH replay a failed fast-check property (see the file).
    setupFiles: ["test/fast-check-seed.ts"],
    projects: [
      {
        extends: true,
        plugins: [unitsImportNoBuild],
        test: {
          name: "unit",
          sequence: { groupOrder: 0 },
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...TIERS.map(tierFiles)],
        },
      },
      { extends: true, test: { name: "thread", sequence: afterUnits, include: [tierFiles("thread")] } },
      {
        extends: true,
        // Provides pi for the session-file interop tests (see test/global-setup.ts).
        test: {
          name: "process",
          sequence: afterUnits,
          include: [tierFiles("process")],
          globalSetup: ["test/global-setup.ts"],
        },
      },
      { extends: true, test: { name: "redis", sequence: afterUnits, include: [tierFiles("redis")] } },
      { extends: true, test: { name: "browser", sequence: afterUnits, include: [tierFiles("browser")] } },
      { extends: true, test: { name: "tmux", sequence: afterUnits, include: [tierFiles("tmux")] } },
    ],
  },
});
