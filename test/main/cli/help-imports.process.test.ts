/**
 * `lifeline --help` loads the command line's dispatch and commander, nothing else: the flag
 * groups import their schemas (zod), the settings files' parser and every mode only when a command
 * runs (src/main/cli/runtime.ts), so help, a version and a mistyped flag answer at once. A module
 * hook (test/fixtures/record-packages.mjs) records each package the built CLI imports.
 * Run `npm run build` first.
 */
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../fixtures/bounded.js";

const CLI = fileURLToPath(new URL("../../../dist/main/cli.js", import.meta.url));
const RECORDER = fileURLToPath(new URL("../../fixtures/record-packages.mjs", import.meta.url));

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The packages a heavy feature brings, none of which help may load. */
const HEAVY = [
  "@mariozechner/pi-ai",
  "@mariozechner/pi-agent-core",
  "@mariozechner/pi-tui",
  "typebox",
  "ioredis",
  "bullmq",
  "jiti",
  "chart.js",
  "cli-progress",
  "piscina",
  "zod",
  "jsonc-parser",
];

/** Runs the built CLI with `args` and resolves to the packages it imported, sorted, once each. */
async function packagesLoadedBy(args: string[]): Promise<string[]> {
  const dir = tempDir(cleanups, "lifeline-help-imports-");
  const record = join(dir, "packages.txt");
  writeFileSync(record, "");
  await promisify(execFile)(process.execPath, ["--import", RECORDER, CLI, ...args], {
    cwd: dir,
    env: { ...process.env, LIFELINE_DIR: dir, LIFELINE_RECORD_PACKAGES: record },
  });
  return [...new Set(readFileSync(record, "utf8").split("\n").filter(Boolean))].sort();
}

describe("what lifeline --help loads", () => {
  it.each(["--help", "load --help", "serve --help", "--version"])(
    "lifeline %s loads commander and no other package",
    async (args) => {
      const packages = await packagesLoadedBy(args.split(" "));
      expect(packages.filter((name) => HEAVY.includes(name) || name.startsWith("@opentelemetry/"))).toEqual([]);
      expect(packages).toEqual(["commander"]);
    },
  );

  it("records the packages a command that runs does load (the recorder sees them)", async () => {
    // `sessions` reads the settings files: their schema and parser load now.
    expect(await packagesLoadedBy(["sessions"])).toEqual(expect.arrayContaining(["commander", "zod", "jsonc-parser"]));
  });
});
