/**
 * STYLE 1 and 4: three zones with one-way imports, and inside src/main layers whose imports run
 * down only.
 *
 * Zones: shared imports neither side; worker imports only shared; main imports only shared (it names the worker entry by URL, never by import). The mock
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

/** Every relative import specifier of a module's text: static, dynamic and re-exports. */
function relativeSpecifiers(text: string): string[] {
  return [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.[^"']+)["']/g)].map((m) => m[1] ?? "");
}

/** Zone of every relative import of a file. */
function importedZones(file: string, text = readFileSync(file, "utf8")): string[] {
  return relativeSpecifiers(text).map(
    (specifier) => relative(root, resolve(file, "..", specifier)).split("/")[0] ?? "",
  );
}

const allowed: Record<string, string[]> = {
  shared: ["shared"],
  worker: ["worker", "shared"],
  main: ["main", "shared", "mock-server"],
  "mock-server": ["mock-server", "shared"],
  types: ["types"],
};

/**
 * The layers of src/main, bottom first. A file may import its own folder and any folder of a lower
 * layer, never one of its own layer or above: peers stay independent and nothing climbs. Only the
 * entry points (index.ts, cli.ts) stay loose at the top; every other file lives in a folder listed
 * here (docs/architecture.md explains each).
 */
const LAYERS: readonly (readonly string[])[] = [
  ["config"], // settings files, models.json, option schemas, module URLs
  ["redis"], // the Redis connection of fleet mode, its key prefix and Lua scripts (below every Redis user)
  ["workers"], // one link per worker, the roster of links, the piscina pool, watchdog, keep-alive
  ["session-files"], // pi's session files, the store interface, locks and the write queue
  ["auth"], // auth.json, key selection and rotation
  ["retry"], // the retry controller and its sleep
  ["coordination"], // the host-wide retry budget, provider gate and request permits
  ["supervision"], // restart budget, interrupted runs, restoring a session on a fresh worker
  ["compaction"], // summaries on overflow, at the threshold and on request
  ["extensions"], // pi extensions and their handlers
  ["session"], // AgentSession and what only it owns
  ["telemetry"], // OpenTelemetry metrics and spans from session events (B9), the CLI's /metrics
  ["host"], // SessionHost: options, opening and resuming sessions
  ["fleet", "load", "rpc", "tui"], // the CLI's modes (fleet: a fleet host taking queued prompts, lifeline/fleet)
  ["load-fleet"], // distributed load runs: generators (load-agent) and their coordinator, over the fleet's Redis
  ["cli"], // the command line: option groups, the command tree, each command's flags → the modes' typed requests
  ["(entry)"], // index.ts, cli.ts
];
const ENTRY_POINTS = ["index.ts", "cli.ts"];
const mainRoot = join(root, "main");

function layerOf(folder: string): number {
  return LAYERS.findIndex((layer) => layer.includes(folder));
}

/** The src/main folder of a path inside src/main ("(entry)" for the loose entry points). */
function folderOf(path: string): string {
  const parts = relative(mainRoot, path).split("/");
  return parts.length > 1 ? (parts[0] ?? "") : "(entry)";
}

/** Every import of a src/main file that climbs the layers or crosses to a peer of its layer. */
function climbingImports(file: string, text = readFileSync(file, "utf8")): string[] {
  const from = folderOf(file);
  return relativeSpecifiers(text).flatMap((specifier) => {
    const target = resolve(file, "..", specifier);
    if (relative(mainRoot, target).startsWith("..")) return [];
    const to = folderOf(target);
    if (to === from || layerOf(to) < layerOf(from)) return [];
    return [`${relative(root, file)} (${from}) imports ${relative(root, target)} (${to})`];
  });
}

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

describe("layers of src/main", () => {
  it("only the entry points are loose; every folder has a layer", () => {
    const entries = readdirSync(mainRoot, { withFileTypes: true });
    const loose = entries.filter((e) => e.isFile() && !ENTRY_POINTS.includes(e.name)).map((e) => e.name);
    const unplaced = entries.filter((e) => e.isDirectory() && layerOf(e.name) < 0).map((e) => e.name);
    expect({ loose, unplaced }).toEqual({ loose: [], unplaced: [] });
  });

  it("imports run down the layers, never up or across to a peer", () => {
    const climbs = files(mainRoot).flatMap((file) => climbingImports(file));
    expect(climbs).toEqual([]);
  });

  it("the layer scan catches an injected climbing import and a peer import", () => {
    const file = join(mainRoot, "retry", "probe.ts");
    const text = [
      'import { AgentSession } from "../session/agent-session.js";',
      'import type { X } from "./retry-controller.js";',
      'import { AuthStorage } from "../auth/auth-storage.js";',
      'import { ProviderGate } from "../coordination/provider-gate.js";',
    ].join("\n");
    expect(climbingImports(file, text)).toEqual([
      "main/retry/probe.ts (retry) imports main/session/agent-session.js (session)",
      "main/retry/probe.ts (retry) imports main/coordination/provider-gate.js (coordination)",
    ]);
    const rpc = join(mainRoot, "rpc", "probe.ts");
    expect(climbingImports(rpc, 'import { x } from "../tui/theme.js";')).toEqual([
      "main/rpc/probe.ts (rpc) imports main/tui/theme.js (tui)",
    ]);
  });
});

/**
 * The rooms of src/main/load, bottom first, as the layers of src/main (docs/architecture.md): a
 * room imports its own and lower rooms only, never a peer. Loose: its entry points, index.ts
 * (`lifeline/load`) and load-command.ts (`lifeline load`).
 */
const LOAD_ROOMS: readonly (readonly string[])[] = [
  ["metrics"], // what a run measures: the sketch, summaries, the request and prompt records, the timeline, the retry ledger
  ["verdicts"], // judging the figures: thresholds, --slo, retry verdicts, failure groups
  ["options"], // LoadOptions, their defaults and checks, the open model's options, the load tools, the prompts file
  ["mock", "open"], // the built-in mock target; the open model and the sweep (arrivals, conversations)
  ["report"], // report.json and its files (CSV, HTML), the terminal summary
  ["merge", "run"], // `load merge` (reading reports back, merging them); runLoad and its live progress line
  ["compare"], // `load compare`
  ["(entry)"],
];
const LOAD_ENTRY_POINTS = ["index.ts", "load-command.ts"];
const loadRoot = join(mainRoot, "load");

function roomLayerOf(room: string): number {
  return LOAD_ROOMS.findIndex((layer) => layer.includes(room));
}

/** The room of a path inside src/main/load ("(entry)" for the loose entry points). */
function roomOf(path: string): string {
  const parts = relative(loadRoot, path).split("/");
  return parts.length > 1 ? (parts[0] ?? "") : "(entry)";
}

/** Every import of a src/main/load file that climbs its rooms or crosses to a peer room. */
function climbingRoomImports(file: string, text = readFileSync(file, "utf8")): string[] {
  const from = roomOf(file);
  return relativeSpecifiers(text).flatMap((specifier) => {
    const target = resolve(file, "..", specifier);
    if (relative(loadRoot, target).startsWith("..")) return [];
    const to = roomOf(target);
    if (to === from || roomLayerOf(to) < roomLayerOf(from)) return [];
    return [`${relative(root, file)} (${from}) imports ${relative(root, target)} (${to})`];
  });
}

describe("rooms of src/main/load", () => {
  it("only its entry points are loose; every room has a place", () => {
    const entries = readdirSync(loadRoot, { withFileTypes: true });
    const loose = entries.filter((e) => e.isFile() && !LOAD_ENTRY_POINTS.includes(e.name)).map((e) => e.name);
    const unplaced = entries.filter((e) => e.isDirectory() && roomLayerOf(e.name) < 0).map((e) => e.name);
    expect({ loose, unplaced }).toEqual({ loose: [], unplaced: [] });
  });

  it("imports run down the rooms, never up or across to a peer", () => {
    expect(files(loadRoot).flatMap((file) => climbingRoomImports(file))).toEqual([]);
  });

  it("the room scan catches an injected climbing import and a peer import", () => {
    const file = join(loadRoot, "metrics", "probe.ts");
    const text = [
      'import type { LoadReport } from "../report/load-report.js";',
      'import { Sketch } from "./sketch.js";',
      'import { LOAD_DEFAULTS } from "../options/load-defaults.js";',
    ].join("\n");
    expect(climbingRoomImports(file, text)).toEqual([
      "main/load/metrics/probe.ts (metrics) imports main/load/report/load-report.js (report)",
      "main/load/metrics/probe.ts (metrics) imports main/load/options/load-defaults.js (options)",
    ]);
    const mock = join(loadRoot, "mock", "probe.ts");
    expect(climbingRoomImports(mock, 'import { x } from "../open/open-run.js";')).toEqual([
      "main/load/mock/probe.ts (mock) imports main/load/open/open-run.js (open)",
    ]);
  });
});
