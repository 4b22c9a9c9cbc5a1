/**
 * Runs once before the suite. The pi ↔ lifeline session-file tests need pi itself
 * (@mariozechner/pi-coding-agent 0.73.1), which is never a dependency of lifeline. When
 * LIFELINE_PI_PACKAGE does not name an install already (.ci/run makes one), pi is installed into a
 * cache folder outside the repository, once per machine, so `npm test` works on a fresh clone. If
 * that install fails (no registry), the interop tests fail and say how to provide pi: they never
 * skip.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PI = "@mariozechner/pi-coding-agent@0.73.1";

export default function setup(): void {
  if (process.env.LIFELINE_PI_PACKAGE !== undefined && process.env.LIFELINE_PI_PACKAGE !== "") return;
  const prefix = join(tmpdir(), "lifeline-pi-0.73.1");
  const pkg = join(prefix, "node_modules", "@mariozechner", "pi-coding-agent");
  if (!existsSync(join(pkg, "package.json"))) {
    try {
      const npm = process.platform === "win32" ? "npm.cmd" : "npm";
      execFileSync(
        npm,
        ["install", "--prefix", prefix, "--no-save", "--no-audit", "--no-fund", "--ignore-scripts", PI],
        { stdio: ["ignore", "ignore", "inherit"], timeout: 300_000 },
      );
    } catch (error) {
      process.stderr.write(`test setup: could not install ${PI} for the interop tests: ${String(error)}\n`);
      return;
    }
  }
  process.env.LIFELINE_PI_PACKAGE = pkg;
  process.env.PI_OFFLINE ??= "1";
}
