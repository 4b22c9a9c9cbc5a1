// Measures what each group of lifeline's dependencies costs to install: every group is installed
// alone, at the exact versions package.json pins, into a scratch folder (from npm's cache when it
// has them, `--prefer-offline`), and the folder's node_modules is measured with `du -sk`, so a
// group counts its own dependencies. CONTRIBUTING.md points here for the figures.
//
//   node scripts/dependency-sizes.mjs
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The groups, by the entry point they serve. "all" is what `npm install lifeline` brings. */
const GROUPS = {
  "library (main thread)": ["piscina", "comlink", "zod", "jsonc-parser", "proper-lockfile"],
  "CLI dispatch": ["commander"],
  worker: ["@mariozechner/pi-ai", "@mariozechner/pi-agent-core", "typebox", "jiti"],
  "TUI (lifeline/tui)": ["@mariozechner/pi-tui"],
  "fleet (lifeline/fleet)": ["bullmq", "ioredis"],
  "load (lifeline/load)": ["chart.js", "cli-progress"],
  "OpenTelemetry SDK (optional peers)": [
    "@opentelemetry/api",
    "@opentelemetry/sdk-metrics",
    "@opentelemetry/resources",
    "@opentelemetry/exporter-prometheus",
  ],
};

const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
const pinned = { ...manifest.devDependencies, ...manifest.dependencies };
GROUPS["all dependencies"] = Object.keys(manifest.dependencies);

for (const [group, names] of Object.entries(GROUPS)) {
  const dir = mkdtempSync(join(tmpdir(), "lifeline-dependency-sizes-"));
  try {
    writeFileSync(join(dir, "package.json"), '{ "private": true }\n');
    const specs = names.map((name) => `${name}@${pinned[name]}`);
    const install = spawnSync(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", ...specs],
      { cwd: dir, encoding: "utf8" },
    );
    if (install.status !== 0) throw new Error(`npm install ${specs.join(" ")} failed:\n${install.stderr}`);
    const kb = Number(spawnSync("du", ["-sk", join(dir, "node_modules")], { encoding: "utf8" }).stdout.split("\t")[0]);
    const lock = JSON.parse(readFileSync(join(dir, "package-lock.json"), "utf8"));
    const packages = Object.keys(lock.packages).length - 1;
    process.stdout.write(
      `${group.padEnd(36)} ${(kb / 1024).toFixed(1).padStart(6)} MB  ${String(packages).padStart(4)} packages\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
