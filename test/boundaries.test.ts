/**
 * STYLE 1: three zones with one-way imports. shared imports neither side; worker imports only
 * shared; main imports only shared (it names the worker entry by URL, never by import). The mock
 * model server is a tool of its own: it imports nothing of the runtime, and main (the CLI and the
 * package index) may import it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "..", "src");

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return files(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** Zone of every relative import of a file (static, dynamic and re-exports). */
function importedZones(file: string, text = readFileSync(file, "utf8")): string[] {
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.[^"']+)["']/g)].map((m) => m[1] ?? "");
  return specifiers.map((specifier) => relative(root, resolve(file, "..", specifier)).split("/")[0] ?? "");
}

const allowed: Record<string, string[]> = {
  shared: ["shared"],
  worker: ["worker", "shared"],
  main: ["main", "shared", "mock-server"],
  "mock-server": ["mock-server"],
  types: ["types"],
};

describe("zone boundaries", () => {
  for (const zone of Object.keys(allowed)) {
    it(`src/${zone} imports only ${allowed[zone]?.join(" and ")}`, () => {
      const crossings = files(join(root, zone)).flatMap((file) =>
        importedZones(file)
          .filter((target) => !(allowed[zone] ?? []).includes(target))
          .map((target) => `${relative(root, file)} imports ${target}`),
      );
      expect(crossings).toEqual([]);
    });
  }

  it("the scan sees static, dynamic and re-export crossings", () => {
    const file = join(root, "shared", "probe.ts");
    const text = [
      'import { AgentSession } from "../main/agent-session.js";',
      'export * from "../worker/serve-worker.js";',
      'const m = await import("../main/cli.js");',
      'import type { X } from "./events.js";',
    ].join("\n");
    expect(importedZones(file, text)).toEqual(["main", "worker", "main", "shared"]);
  });
});
