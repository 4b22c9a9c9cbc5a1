/**
 * scripts/build.mjs's own logic with stand-in steps (the real build is in build.process.test.ts):
 * output goes to a temporary folder and replaces dist/ at the end, a failed step leaves dist/ as
 * it was, `--if-stale` skips a fresh dist/, and `prepare` does not build under `npm exec`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type BuildStep, build, buildIfStale, prepareAction, TEMP_PREFIXES } from "../../scripts/build.mjs";
import { readStamp } from "../../scripts/dist-freshness.mjs";
import { tempDir } from "../fixtures/bounded.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const quiet = () => {};

/** A repository with a previous build in dist/ (one file, main/old.js). */
function repository(): string {
  const root = tempDir(cleanups, "lifeline-build-");
  mkdirSync(join(root, "src"));
  writeFileSync(join(root, "src", "index.ts"), "x");
  // An hour ago: the build's stamp (its start) is then surely later, whatever the clock's grain.
  const anHourAgo = (Date.now() - 3_600_000) / 1000;
  utimesSync(join(root, "src", "index.ts"), anHourAgo, anHourAgo);
  mkdirSync(join(root, "dist", "main"), { recursive: true });
  writeFileSync(join(root, "dist", "main", "old.js"), "old");
  return root;
}

const temporaries = (root: string) => readdirSync(root).filter((name) => TEMP_PREFIXES.some((p) => name.startsWith(p)));

/** A step that writes `file` into the build's folder and records where it wrote and what dist/ held then. */
function writing(file: string, seen: { outDir: string; distHadOld: boolean }[]): BuildStep {
  return {
    name: `write ${file}`,
    run: (outDir, root) => {
      seen.push({ outDir, distHadOld: existsSync(join(root, "dist", "main", "old.js")) });
      mkdirSync(join(outDir, "main"), { recursive: true });
      writeFileSync(join(outDir, "main", file), file);
    },
  };
}

describe("build", () => {
  it("runs the steps in order into a folder next to dist/, then puts it in dist/'s place", async () => {
    const root = repository();
    const seen: { outDir: string; distHadOld: boolean }[] = [];
    await build({ root, steps: [writing("a.js", seen), writing("b.js", seen)], log: quiet });
    expect(seen.map((s) => s.outDir)).toEqual([seen[0]?.outDir, seen[0]?.outDir]);
    expect(seen[0]?.outDir.startsWith(join(root, TEMP_PREFIXES[0] ?? "?"))).toBe(true);
    // The previous dist/ stays whole while the steps run.
    expect(seen.map((s) => s.distHadOld)).toEqual([true, true]);
    expect(readdirSync(join(root, "dist", "main")).sort()).toEqual(["a.js", "b.js"]);
    expect(readStamp(join(root, "dist"))).toBeTypeOf("number");
    expect(temporaries(root)).toEqual([]);
  });

  it("leaves the previous dist/ untouched and removes its folder when a step fails", async () => {
    const root = repository();
    const failing: BuildStep = {
      name: "fail",
      run: () => {
        throw new Error("step failed");
      },
    };
    await expect(build({ root, steps: [writing("a.js", []), failing], log: quiet })).rejects.toThrow("step failed");
    expect(readFileSync(join(root, "dist", "main", "old.js"), "utf8")).toBe("old");
    expect(temporaries(root)).toEqual([]);
  });

  it("builds where there was no dist/ yet", async () => {
    const root = tempDir(cleanups, "lifeline-build-");
    await build({ root, steps: [writing("a.js", [])], log: quiet });
    expect(readdirSync(join(root, "dist", "main"))).toEqual(["a.js"]);
  });
});

describe("buildIfStale", () => {
  it("skips the steps when dist/ was built after its sources, and builds once a source changes", async () => {
    const root = repository();
    const seen: { outDir: string; distHadOld: boolean }[] = [];
    const steps = [writing("a.js", seen)];
    expect(await buildIfStale({ root, steps, log: quiet })).toBe(true);
    const built = statSync(join(root, "dist")).ino;
    expect(await buildIfStale({ root, steps, log: quiet })).toBe(false);
    expect(seen).toHaveLength(1);
    expect(statSync(join(root, "dist")).ino).toBe(built);

    const stamp = readStamp(join(root, "dist")) ?? 0;
    writeFileSync(join(root, "src", "index.ts"), "y");
    utimesSync(join(root, "src", "index.ts"), (stamp + 1000) / 1000, (stamp + 1000) / 1000);
    expect(await buildIfStale({ root, steps, log: quiet })).toBe(true);
    expect(seen).toHaveLength(2);
  });
});

describe("prepareAction", () => {
  it("does not build under npm exec (npx) when dist/ is there", () => {
    expect(prepareAction("exec", true)).toBe("skip");
  });

  it("builds under npm exec when there is no dist/ to run", () => {
    expect(prepareAction("exec", false)).toBe("build");
  });

  it.each(["install", "ci", "pack", "publish", undefined])("builds under npm %s", (command) => {
    expect(prepareAction(command, true)).toBe("build");
  });
});
