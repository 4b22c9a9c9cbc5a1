/**
 * `--metrics-port` without the optional OpenTelemetry SDK, as a user who did not install it meets
 * it: the built CLI run from a copy of the package whose node_modules lack the SDK packages (only
 * `@opentelemetry/api` is there). `load` and `serve` refuse it in one form: exit 2, one line
 * `Error [ERR_TELEMETRY_UNAVAILABLE]: …` naming the `npm install` to run, nothing on stdout.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../../fixtures/bounded.js";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const cleanups: (() => void)[] = [];
let cli: string;
let cwd: string;

beforeAll(() => {
  const root = tempDir(cleanups, "lifeline-no-otel-sdk-");
  cpSync(join(ROOT, "dist"), join(root, "dist"), { recursive: true });
  cpSync(join(ROOT, "package.json"), join(root, "package.json"));
  const modules = join(root, "node_modules");
  mkdirSync(join(modules, "@opentelemetry"), { recursive: true });
  for (const entry of readdirSync(join(ROOT, "node_modules"))) {
    if (entry !== "@opentelemetry") symlinkSync(join(ROOT, "node_modules", entry), join(modules, entry));
  }
  symlinkSync(join(ROOT, "node_modules", "@opentelemetry", "api"), join(modules, "@opentelemetry", "api"));
  cli = join(root, "dist", "main", "cli.js");
  cwd = tempDir(cleanups, "lifeline-no-otel-cwd-");
});
afterAll(() => {
  for (const cleanup of cleanups.reverse()) cleanup();
});

describe("--metrics-port without the optional SDK", () => {
  it.each([
    ["load", ["load", "--sessions", "1", "--prompts", "1", "--metrics-port", "0"]],
    ["serve", ["serve", "--fleet", "redis://127.0.0.1:9", "--metrics-port", "0"]],
  ])("regression: %s exits 2 with ERR_TELEMETRY_UNAVAILABLE and the npm install to run, in one form", (_name, args) => {
    const run = spawnSync(process.execPath, [cli, ...args], {
      cwd,
      env: { ...process.env, LIFELINE_DIR: cwd, NO_COLOR: "1" },
      timeout: 60_000,
    });
    const stderr = run.stderr.toString();
    expect(run.status, stderr).toBe(2);
    expect(run.stdout.toString()).toBe("");
    expect(stderr).toMatch(
      /^Error \[ERR_TELEMETRY_UNAVAILABLE\]: .*npm install @opentelemetry\/api@\S+ @opentelemetry\/sdk-metrics@/m,
    );
    expect(stderr.trim().split("\n")).toHaveLength(1);
  });
});
