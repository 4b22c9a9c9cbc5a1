/**
 * scripts/dist-freshness.mjs, which decides whether `npm start` builds: dist/ is fresh when a build
 * stamped it after the last change to every source. Modification times are set explicitly, so no
 * test depends on the clock.
 */
import { mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { distFreshness, SOURCES, STAMP } from "../../scripts/dist-freshness.mjs";
import { tempDir } from "../fixtures/bounded.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const BUILT_AT = 1_700_000_000_000;
const seconds = (ms: number) => ms / 1000;

/** A repository whose every file was last changed `before` ms before the build, stamped at BUILT_AT. */
function repository(before = 60_000): string {
  const root = tempDir(cleanups, "lifeline-freshness-");
  const files = ["src/main/index.ts", "src/worker/entry.ts", "scripts/build.mjs", "tsconfig.json", "package.json"];
  files.push("package-lock.json", "test/boundaries.test.ts", "docs/cli.md", "dist/main/index.js");
  for (const file of files) {
    mkdirSync(join(root, file, ".."), { recursive: true });
    writeFileSync(join(root, file), "x");
    utimesSync(join(root, file), seconds(BUILT_AT - before), seconds(BUILT_AT - before));
  }
  writeFileSync(join(root, "dist", STAMP), JSON.stringify({ startedAt: BUILT_AT }));
  return root;
}

function touch(root: string, file: string, at: number): void {
  utimesSync(join(root, file), seconds(at), seconds(at));
}

describe("distFreshness", () => {
  it("finds dist/ fresh when every source was changed before the build started", () => {
    expect(distFreshness(repository())).toMatchObject({ fresh: true });
  });

  it("finds dist/ stale when it is missing", () => {
    const root = tempDir(cleanups, "lifeline-freshness-");
    expect(distFreshness(root)).toEqual({ fresh: false, reason: "dist/ is missing" });
  });

  it("finds dist/ stale when it has no stamp, as one built before scripts/build.mjs", () => {
    const root = repository();
    writeFileSync(join(root, "dist", STAMP), "{}");
    expect(distFreshness(root).fresh).toBe(false);
  });

  it.each(["src/worker/entry.ts", "scripts/build.mjs", "tsconfig.json", "package.json", "package-lock.json"])(
    "finds dist/ stale, naming the file, when %s changed after the build started",
    (file) => {
      const root = repository();
      touch(root, file, BUILT_AT + 1);
      expect(distFreshness(root)).toEqual({ fresh: false, reason: `${file} changed after dist/ was built` });
    },
  );

  it("finds dist/ stale when a source was saved in the very millisecond the build started", () => {
    const root = repository();
    touch(root, "src/main/index.ts", BUILT_AT);
    expect(distFreshness(root).fresh).toBe(false);
  });

  it("keeps dist/ fresh when only tests, docs or dist/ itself changed", () => {
    const root = repository();
    for (const file of ["test/boundaries.test.ts", "docs/cli.md", "dist/main/index.js"])
      touch(root, file, BUILT_AT + 60_000);
    expect(distFreshness(root)).toMatchObject({ fresh: true });
  });

  it("counts src/, the build's scripts, the tsconfigs, package.json and the lockfile as sources", () => {
    expect(SOURCES).toEqual(
      expect.arrayContaining(["src", "scripts/build.mjs", "scripts/build-worker.mjs", "tsconfig.build.json"]),
    );
    expect(SOURCES).toEqual(expect.arrayContaining(["tsconfig.json", "package.json", "package-lock.json"]));
  });
});
