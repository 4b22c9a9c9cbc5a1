/**
 * What the package ships of the docs, and the sizes docs/embedding.md states, read from the real
 * thing: `npm pack --dry-run --json` over this repository (scripts are not run; run `npm run
 * build` first, so that dist/ is the package's). The performance history stays in the repository:
 * the package carries the current state, docs/performance.md, alone.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";

const REPO = resolve(import.meta.dirname, "..");
/** `npm pack --dry-run` reads every file of the package once; on a busy two-core machine, seconds. */
const PACK_MS = 60_000;
/** How far a size docs/embedding.md states ("about 2.6 MB") may be from the package's. */
const SIZE_TOLERANCE = 0.1;

interface Pack {
  size: number;
  unpackedSize: number;
  files: { path: string; size: number }[];
}

let pack: Pack;
beforeAll(async () => {
  const { stdout } = await promisify(execFile)("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: REPO,
    timeout: PACK_MS,
  });
  [pack] = JSON.parse(stdout) as [Pack];
}, PACK_MS);

/** The figures `text` gives for the tarball, unpacked and the worker bundle, in bytes. */
function statedSizes(text: string): { packed: number; unpacked: number; worker: number } | undefined {
  const match = text.match(
    /tarball \(`npm pack`\) is about ([\d.]+) MB, ([\d.]+) MB unpacked, of which ([\d.]+) MB is the worker bundle/,
  );
  if (match === null) return undefined;
  const [packed, unpacked, worker] = match.slice(1).map((mb) => Number(mb) * 1e6);
  return { packed: packed ?? 0, unpacked: unpacked ?? 0, worker: worker ?? 0 };
}

describe("the docs in the package", () => {
  it("ships docs/performance.md and the new reference pages, not the performance history", () => {
    const paths = pack.files.map((file) => file.path);
    for (const path of ["README.md", "docs/performance.md", "docs/api.md", "docs/settings.md", "docs/cli.md"])
      expect(paths).toContain(path);
    expect(paths.filter((path) => path.includes("performance-history"))).toEqual([]);
  });

  it("docs/embedding.md states the package's sizes within 10 %", () => {
    const stated = statedSizes(readFileSync(resolve(REPO, "docs/embedding.md"), "utf8"));
    expect(stated).toBeDefined();
    const worker = pack.files.find((file) => file.path === "dist/lifeline-worker.mjs")?.size ?? 0;
    const actual = { packed: pack.size, unpacked: pack.unpackedSize, worker };
    for (const key of ["packed", "unpacked", "worker"] as const) {
      const ratio = (stated?.[key] ?? 0) / actual[key];
      expect({ key, ratio: Math.abs(ratio - 1) <= SIZE_TOLERANCE ? "within" : ratio }).toEqual({
        key,
        ratio: "within",
      });
    }
  });
});
