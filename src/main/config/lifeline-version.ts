/**
 * lifeline's own version, read once from its package.json: `lifeline --version`, and a
 * distributed run's check that every machine runs the same lifeline (load-fleet-protocol.ts).
 */
import { readFileSync } from "node:fs";

let version: string | undefined;

/** The `version` of lifeline's package.json ("unknown" if it cannot be read). Never throws. */
export function lifelineVersion(): string {
  if (version !== undefined) return version;
  try {
    // src/main/config/ and dist/main/config/ are both three levels below the package root.
    const text = readFileSync(new URL("../../../package.json", import.meta.url), "utf8");
    const parsed = JSON.parse(text) as { version?: unknown };
    version = typeof parsed.version === "string" ? parsed.version : "unknown";
  } catch {
    version = "unknown";
  }
  return version;
}
