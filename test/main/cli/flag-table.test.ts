/**
 * The flag table (STYLE 21): its rows are generated from commander's own registry of every
 * command's options, so a flag added without a row fails here. Each visible flag's row runs a
 * command line in this process with a recording runtime and checks the flag's effect where it
 * lands: the request (the library's own options) the command hands its runtime. Each hidden flag
 * (a global flag the command does not take) is refused: exit 2, ERR_INVALID_OPTIONS naming the
 * flag, nothing run, before or after the command's name.
 */
import { join } from "node:path";
import type { Command, Option } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandPath } from "../../../src/main/cli/command-tree.js";
import { lifelineProgram } from "../../../src/main/cli/program.js";
import { type CliOutcome, cliPlace, recordingRuntime, runRecorded } from "../../fixtures/cli-runtime.js";

const place = cliPlace();
const REDIS = "redis://127.0.0.1:6390";
beforeAll(() => {
  place.models({
    providers: { local: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", models: [{ id: "local-1" }] } },
  });
});
afterAll(() => place.remove());

/** Every command of the program with its options, visible and hidden. */
function registry(): { path: string; command: Command; options: Option[] }[] {
  const program = lifelineProgram(
    {
      cwd: place.cwd,
      lifelineDir: place.lifelineDir,
      terminal: false,
      version: "0",
      runtime: recordingRuntime().runtime,
    },
    () => {},
  );
  const found: { path: string; command: Command; options: Option[] }[] = [];
  const visit = (command: Command) => {
    found.push({ path: commandPath(command), command, options: [...command.options] });
    for (const child of command.commands) visit(child);
  };
  visit(program);
  return found;
}

/** A row: the command line to run, and what its one runtime call must hold. */
interface Row {
  argv: readonly string[];
  check: (outcome: CliOutcome) => void;
}

/** A row whose command line makes one `method` call whose request matches `expected`. */
function lands(argv: readonly string[], method: string, expected: object): Row {
  return {
    argv,
    check: (outcome) => {
      expect(outcome.code, outcome.stderr).toBe(0);
      expect(outcome.calls.map((call) => call.method)).toEqual([method]);
      expect(outcome.calls[0]?.request).toMatchObject(expected);
    },
  };
}

/** A row whose command line is refused: exit 2, `message` on stderr, nothing run. */
function refused(argv: readonly string[], message: RegExp): Row {
  return {
    argv,
    check: (outcome) => {
      expect(outcome.code).toBe(2);
      expect(outcome.calls).toEqual([]);
      expect(outcome.stderr).toMatch(message);
    },
  };
}

const at = (relative: string) => join(place.cwd, relative);
const print = (...args: string[]) => ["-p", "hi", ...args];
const load = (...args: string[]) => ["load", "--sessions", "1", "--prompts", "1", ...args];
const serve = (...args: string[]) => ["serve", "--fleet", REDIS, ...args];
const submit = (...args: string[]) => ["submit", "--fleet", REDIS, ...args, "hi"];
const agent = (...args: string[]) => ["load-agent", "--fleet", REDIS, ...args];

/** The rows of the visible flags, by `<command path> <long flag>`. */
const ROWS: Record<string, Row> = {
  // lifeline: the modes
  "lifeline --print": lands(["--print", "hello", "--model", "demo/demo-fast"], "print", { messages: ["hello"] }),
  "lifeline --mode": lands(["--mode", "rpc"], "rpc", { model: "demo/demo-1" }),
  "lifeline --socket": lands(["--mode", "host", "--socket", at("h.sock")], "host", { socket: at("h.sock") }),
  "lifeline --listen": lands(["--mode", "host", "--listen", "127.0.0.1:0", "--token-file", at("t")], "host", {
    listen: { host: "127.0.0.1", port: 0 },
  }),
  "lifeline --token-file": lands(["--mode", "host", "--listen", "127.0.0.1:7", "--token-file", at("t")], "host", {
    tokenFile: at("t"),
  }),
  "lifeline --allow-remote": lands(
    ["--mode", "host", "--listen", "0.0.0.0:0", "--token-file", at("t"), "--allow-remote"],
    "host",
    { allowRemote: true },
  ),
  "lifeline --provider": lands(print("--provider", "local", "--model", "local-1"), "print", { model: "local/local-1" }),
  "lifeline --model": lands(print("--model", "demo-fast"), "print", { model: "demo/demo-fast" }),
  "lifeline --thinking": lands(print("--thinking", "high"), "print", { flags: { thinkingLevel: "high" } }),
  "lifeline --api-key": lands(print("--api-key", "sk-1"), "print", { apiKey: "sk-1" }),
  "lifeline --continue": lands(print("-c"), "print", { flags: { continue: true } }),
  "lifeline --session": lands(print("--session", "0193"), "print", { flags: { session: "0193" } }),
  "lifeline --no-session": lands(print("--no-session"), "print", { host: { sessions: false } }),
  "lifeline --resume": refused(print("-r"), /-r\/--resume picks a session on the terminal and cannot run with -p/),
  "lifeline --session-dir": lands(print("--session-dir", "/tmp/s"), "print", { host: { sessions: { dir: "/tmp/s" } } }),
  "lifeline --extension": refused(print("-e", "./no-such-extension.ts"), /no-such-extension\.ts/),
  "lifeline --no-extensions": lands(print("--no-extensions"), "print", { host: { sessions: {} } }),
  "lifeline --worker-entry": lands(print("--worker-entry", "w.mjs"), "print", { host: { workerEntry: "w.mjs" } }),
  "lifeline --fleet": lands(print("--fleet", REDIS), "print", { host: { settings: { fleet: { redis: REDIS } } } }),
  "lifeline --fleet-name": lands(print("--fleet", REDIS, "--fleet-name", "blue"), "print", {
    host: { settings: { fleet: { redis: REDIS, name: "blue" } } },
  }),
  "lifeline --version": {
    argv: ["--version"],
    check: (outcome) => {
      expect(outcome.code).toBe(0);
      expect(outcome.stdout).toBe("9.9.9-test\n");
    },
  },
  // demo
  "lifeline demo --extension": refused(["demo", "-e", "./no-such-extension.ts"], /no-such-extension\.ts/),
  "lifeline demo --no-extensions": lands(["demo", "--no-extensions"], "print", {
    model: "demo/demo-1",
    host: { sessions: false },
  }),
  "lifeline demo --worker-entry": lands(["demo", "--worker-entry", "w.mjs"], "print", {
    host: { workerEntry: "w.mjs" },
  }),
  "lifeline demo --fleet": lands(["demo", "--fleet", REDIS], "print", {
    host: { settings: { fleet: { redis: REDIS } } },
  }),
  "lifeline demo --fleet-name": lands(["demo", "--fleet", REDIS, "--fleet-name", "blue"], "print", {
    host: { settings: { fleet: { name: "blue" } } },
  }),
  // mock-server
  "lifeline mock-server --port": lands(["mock-server", "--port", "8080"], "mockServer", { port: 8080 }),
  "lifeline mock-server --host": lands(["mock-server", "--host", "0.0.0.0"], "mockServer", { host: "0.0.0.0" }),
  "lifeline mock-server --script": lands(["mock-server", "--script", "f.jsonc"], "mockServer", {
    script: at("f.jsonc"),
  }),
  // load
  "lifeline load --sessions": lands(load(), "load", { options: { sessions: 1 } }),
  "lifeline load --prompts": lands(load("--prompts", "3"), "load", { options: { prompts: 3 } }),
  "lifeline load --duration": lands(load("--duration", "2m"), "load", { options: { durationMs: 120_000 } }),
  "lifeline load --ramp-up": lands(load("--ramp-up", "5s"), "load", { options: { rampUpMs: 5000 } }),
  "lifeline load --concurrency": lands(load("--concurrency", "1"), "load", { options: { concurrency: 1 } }),
  "lifeline load --think-time": lands(load("--think-time", "250ms"), "load", { options: { thinkTimeMs: 250 } }),
  "lifeline load --prompts-file": refused(load("--prompts-file", "missing.jsonl"), /--prompts-file .*missing\.jsonl/),
  "lifeline load --threads": lands(load("--threads", "3"), "load", { options: { threads: 3 } }),
  "lifeline load --rate": lands(["load", "--rate", "5/s", "--duration", "10s"], "load", {
    options: { arrival: { rate: 5 }, sessions: 300 },
  }),
  "lifeline load --stage": lands(["load", "--stage", "10s:2/s"], "load", {
    options: { arrival: { stages: [{ durationMs: 10_000, rate: 2 }] } },
  }),
  "lifeline load --arrival": lands(["load", "--rate", "5/s", "--duration", "10s", "--arrival", "poisson"], "load", {
    options: { arrival: { process: "poisson" } },
  }),
  "lifeline load --on-cap": lands(["load", "--rate", "5/s", "--duration", "10s", "--on-cap", "delay"], "load", {
    options: { arrival: { onCap: "delay" } },
  }),
  "lifeline load --sweep": lands(["load", "--sessions", "4", "--sweep", "2"], "load", {
    options: { sweep: { rates: 2 } },
  }),
  "lifeline load --sweep-step": lands(["load", "--sessions", "4", "--sweep", "--sweep-step", "3s"], "load", {
    options: { sweep: { stepMs: 3000 } },
  }),
  "lifeline load --provider": lands(load("--provider", "local", "--model", "local-1"), "load", {
    options: { model: "local/local-1" },
  }),
  "lifeline load --model": lands(load("--model", "local-1"), "load", { options: { model: "local/local-1" } }),
  "lifeline load --thinking": lands(load("--thinking", "low"), "load", { options: { thinkingLevel: "low" } }),
  "lifeline load --api-key": lands(load("--model", "local-1", "--api-key", "sk-2"), "load", {
    options: { apiKey: "sk-2" },
  }),
  "lifeline load --faults": lands(load("--faults", "503:0.5"), "load", {
    options: { faults: [{ step: 503, probability: 0.5 }] },
  }),
  "lifeline load --seed": lands(load("--seed", "7"), "load", { options: { seed: 7 } }),
  "lifeline load --mock-tokens": lands(load("--mock-tokens", "9"), "load", { options: { mock: { tokens: 9 } } }),
  "lifeline load --mock-token-delay": lands(load("--mock-token-delay", "2ms"), "load", {
    options: { mock: { tokenDelayMs: 2 } },
  }),
  "lifeline load --mock-rate-limit": lands(load("--mock-rate-limit", "5/1s"), "load", {
    options: { mock: { rateLimit: { requests: 5, windowMs: 1000 } } },
  }),
  "lifeline load --tool-calls": lands(load("--tool-calls", "0.5:2"), "load", {
    options: { mock: { tools: { probability: 0.5, calls: 2 } } },
  }),
  "lifeline load --tool-turns": lands(load("--tool-calls", "1", "--tool-turns", "3"), "load", {
    options: { mock: { tools: { maxTurns: 3 } } },
  }),
  "lifeline load --tool-latency": lands(load("--tool-latency", "4s"), "load", {
    options: { tools: { latencyMs: 4000 } },
  }),
  "lifeline load --tool-cpu": lands(load("--tool-cpu", "5ms"), "load", { options: { tools: { cpuMs: 5 } } }),
  "lifeline load --tool-failure": lands(load("--tool-failure", "0.1"), "load", {
    options: { tools: { failureRate: 0.1 } },
  }),
  "lifeline load --retry-budget": lands(load("--retry-budget", "off"), "load", {
    options: { settings: { retry: { budget: false } } },
  }),
  "lifeline load --coordinate": lands(load("--coordinate"), "load", {
    options: { settings: { retry: { coordinate: true } } },
  }),
  "lifeline load --no-coordinate": lands(load("--no-coordinate"), "load", {
    options: { settings: { retry: { coordinate: false } } },
  }),
  "lifeline load --max-concurrent": lands(load("--max-concurrent", "4"), "load", {
    options: { settings: { retry: { maxConcurrentRequests: 4 } } },
  }),
  "lifeline load --idle-timeout": lands(load("--idle-timeout", "2s"), "load", {
    options: { settings: { retry: { provider: { idleTimeoutMs: 2000 } } } },
  }),
  "lifeline load --out": lands(load("--out", "r"), "load", { options: { outDir: at("r") } }),
  "lifeline load --csv": lands(load("--csv"), "load", { options: { csv: true } }),
  "lifeline load --threshold": lands(load("--threshold", "failure_rate<0.1"), "load", {
    options: { thresholds: ["failure_rate<0.1"] },
  }),
  "lifeline load --slo": lands(load("--slo", "e2e<=2s"), "load", { options: { slo: "e2e<=2s" } }),
  "lifeline load --worker-entry": lands(load("--worker-entry", "w.mjs"), "load", { options: { workerEntry: "w.mjs" } }),
  "lifeline load --fleet": lands(load("--fleet", REDIS), "load", {
    options: { settings: { fleet: { redis: REDIS } } },
  }),
  "lifeline load --fleet-name": lands(load("--fleet", REDIS, "--fleet-name", "blue"), "load", {
    options: { settings: { fleet: { name: "blue" } } },
  }),
  "lifeline load --metrics-port": lands(load("--metrics-port", "9464"), "load", { metricsPort: 9464 }),
  "lifeline load --generators": lands(load("--fleet", REDIS, "--generators", "2"), "load", {
    distributed: { generators: 2, fleet: { redis: REDIS, name: "default" } },
  }),
  "lifeline load --generator-timeout": lands(
    load("--fleet", REDIS, "--generators", "2", "--generator-timeout", "9s"),
    "load",
    {
      distributed: { generatorTimeoutMs: 9000 },
    },
  ),
  "lifeline load --on-generator-loss": lands(
    load("--fleet", REDIS, "--generators", "2", "--on-generator-loss", "stop"),
    "load",
    { distributed: { onGeneratorLoss: "stop" } },
  ),
  // load merge
  "lifeline load merge --out": lands(["load", "merge", "a", "b", "--out", "m"], "loadMerge", {
    reports: [at("a"), at("b")],
    outDir: at("m"),
  }),
  "lifeline load merge --csv": lands(["load", "merge", "a", "b", "--out", "m", "--csv"], "loadMerge", { csv: true }),
  "lifeline load merge --threshold": lands(
    ["load", "merge", "a", "b", "--out", "m", "--threshold", "failure_rate<1"],
    "loadMerge",
    {
      thresholds: ["failure_rate<1"],
    },
  ),
  "lifeline load merge --force": lands(["load", "merge", "a", "b", "--out", "m", "--force"], "loadMerge", {
    force: true,
  }),
  // load compare
  "lifeline load compare --threshold": lands(
    ["load", "compare", "a", "b", "--threshold", "p99_latency_ms_ratio<1.1"],
    "loadCompare",
    {
      thresholds: ["p99_latency_ms_ratio<1.1"],
    },
  ),
  "lifeline load compare --out": lands(["load", "compare", "a", "b", "--out", "c"], "loadCompare", { outDir: at("c") }),
  "lifeline load compare --json": lands(["load", "compare", "a", "b", "--json"], "loadCompare", { json: true }),
  "lifeline load compare --confidence": lands(["load", "compare", "a", "b", "--confidence", "90%"], "loadCompare", {
    confidence: 0.9,
  }),
  "lifeline load compare --seed": lands(["load", "compare", "a", "b", "--seed", "3"], "loadCompare", { seed: 3 }),
  "lifeline load compare --noise": lands(["load", "compare", "a", "b", "--noise", "0.05"], "loadCompare", {
    noise: 0.05,
  }),
  // load-agent
  "lifeline load-agent --fleet": lands(agent(), "loadAgent", { fleet: { redis: REDIS }, once: false }),
  "lifeline load-agent --fleet-name": lands(agent("--fleet-name", "blue"), "loadAgent", { fleet: { name: "blue" } }),
  "lifeline load-agent --worker-entry": lands(agent("--worker-entry", "w.mjs"), "loadAgent", { workerEntry: "w.mjs" }),
  "lifeline load-agent --api-key": lands(agent("--api-key", "sk-3"), "loadAgent", { apiKey: "sk-3" }),
  "lifeline load-agent --once": lands(agent("--once"), "loadAgent", { once: true }),
  // serve
  "lifeline serve --extension": refused(serve("-e", "./no-such-extension.ts"), /no-such-extension\.ts/),
  "lifeline serve --no-extensions": lands(serve("--no-extensions"), "serve", {
    host: { settings: { fleet: { redis: REDIS } } },
  }),
  "lifeline serve --worker-entry": lands(serve("--worker-entry", "w.mjs"), "serve", { host: { workerEntry: "w.mjs" } }),
  "lifeline serve --fleet": lands(serve(), "serve", {
    host: { settings: { fleet: { redis: REDIS } } },
    fleetName: "default",
  }),
  "lifeline serve --fleet-name": lands(serve("--fleet-name", "blue"), "serve", { fleetName: "blue" }),
  "lifeline serve --provider": lands(serve("--provider", "local", "--model", "local-1"), "serve", {
    serve: { session: { model: "local/local-1" } },
  }),
  "lifeline serve --model": lands(serve("--model", "demo-fast"), "serve", {
    serve: { session: { model: "demo/demo-fast" } },
  }),
  "lifeline serve --thinking": lands(serve("--thinking", "high"), "serve", {
    serve: { session: { thinkingLevel: "high" } },
  }),
  "lifeline serve --api-key": lands(serve("--api-key", "sk-4"), "serve", { serve: { session: { apiKey: "sk-4" } } }),
  "lifeline serve --metrics-port": lands(serve("--metrics-port", "0"), "serve", { metricsPort: 0 }),
  "lifeline serve --concurrency": lands(serve("--concurrency", "4"), "serve", { serve: { concurrency: 4 } }),
  "lifeline serve --worker-module": lands(serve("--worker-module", "tools.mjs"), "serve", {
    serve: { session: { workerModule: at("tools.mjs") } },
  }),
  // submit
  "lifeline submit --fleet": lands(submit(), "submit", {
    client: { fleet: { redis: REDIS } },
    text: "hi",
    follow: true,
  }),
  "lifeline submit --fleet-name": lands(submit("--fleet-name", "blue"), "submit", {
    client: { fleet: { name: "blue" } },
  }),
  "lifeline submit --provider": lands(submit("--provider", "local", "--model", "local-1"), "submit", {
    submit: { model: "local/local-1" },
  }),
  "lifeline submit --model": lands(submit("--model", "demo-fast:low"), "submit", {
    submit: { model: "demo/demo-fast", thinkingLevel: "low" },
  }),
  "lifeline submit --thinking": lands(submit("--thinking", "high"), "submit", { submit: { thinkingLevel: "high" } }),
  "lifeline submit --session": lands(submit("--session", "s1"), "submit", { submit: { sessionId: "s1" } }),
  "lifeline submit --job-id": lands(submit("--job-id", "j1"), "submit", { submit: { jobId: "j1" } }),
  "lifeline submit --wait-ms": lands(submit("--wait-ms", "30s"), "submit", {
    client: { connectTimeoutMs: 30_000 },
    submit: { waitMs: 30_000 },
  }),
  "lifeline submit --timeout": lands(submit("--timeout", "10s"), "submit", { result: { timeoutMs: 10_000 } }),
  "lifeline submit --no-follow": lands(submit("--no-follow"), "submit", { follow: false }),
  // export and sessions
  "lifeline export --fleet": lands(["export", "abc", "--fleet", REDIS], "exportSession", {
    ref: "abc",
    host: { settings: { fleet: { redis: REDIS } }, cwd: place.cwd },
  }),
  "lifeline export --fleet-name": lands(["export", "abc", "--fleet", REDIS, "--fleet-name", "blue"], "exportSession", {
    host: { settings: { fleet: { name: "blue" } } },
  }),
  "lifeline export --session-dir": lands(["export", "abc", "--session-dir", "/tmp/s"], "exportSession", {
    host: { sessions: { dir: "/tmp/s" } },
  }),
  "lifeline export --out": lands(["export", "abc", "--out", "s.jsonl"], "exportSession", { out: at("s.jsonl") }),
  "lifeline sessions --fleet": lands(["sessions", "--fleet", REDIS], "listSessions", {
    host: { settings: { fleet: { redis: REDIS } } },
    allDirectories: true,
  }),
  "lifeline sessions --fleet-name": lands(["sessions", "--fleet", REDIS, "--fleet-name", "blue"], "listSessions", {
    host: { settings: { fleet: { name: "blue" } } },
  }),
  "lifeline sessions --session-dir": lands(["sessions", "--session-dir", "/tmp/s"], "listSessions", {
    host: { sessions: { dir: "/tmp/s" } },
    allDirectories: false,
  }),
  "lifeline sessions --here": lands(["sessions", "--fleet", REDIS, "--here"], "listSessions", {
    allDirectories: false,
  }),
  "lifeline sessions delete --fleet": lands(["sessions", "delete", "abc", "--fleet", REDIS], "deleteSession", {
    ref: "abc",
    host: { settings: { fleet: { redis: REDIS } }, cwd: place.cwd },
  }),
  "lifeline sessions delete --fleet-name": lands(
    ["sessions", "delete", "abc", "--fleet", REDIS, "--fleet-name", "blue"],
    "deleteSession",
    { host: { settings: { fleet: { name: "blue" } } } },
  ),
  "lifeline sessions delete --session-dir": lands(
    ["sessions", "delete", "abc", "--session-dir", "/tmp/s"],
    "deleteSession",
    { host: { sessions: { dir: "/tmp/s" } } },
  ),
  "lifeline sessions prune --older-than": lands(["sessions", "prune", "--older-than", "30d"], "pruneSessions", {
    olderThanMs: 30 * 86_400_000,
    allDirectories: true,
    dryRun: false,
  }),
  "lifeline sessions prune --fleet": lands(
    ["sessions", "prune", "--older-than", "1h", "--fleet", REDIS],
    "pruneSessions",
    {
      olderThanMs: 3_600_000,
      host: { settings: { fleet: { redis: REDIS } } },
    },
  ),
  "lifeline sessions prune --fleet-name": lands(
    ["sessions", "prune", "--older-than", "1h", "--fleet", REDIS, "--fleet-name", "blue"],
    "pruneSessions",
    { host: { settings: { fleet: { name: "blue" } } } },
  ),
  "lifeline sessions prune --session-dir": lands(
    ["sessions", "prune", "--older-than", "90m", "--session-dir", "/tmp/s"],
    "pruneSessions",
    { olderThanMs: 5_400_000, host: { sessions: { dir: "/tmp/s" } } },
  ),
  "lifeline sessions prune --here": lands(["sessions", "prune", "--older-than", "0", "--here"], "pruneSessions", {
    olderThanMs: 0,
    allDirectories: false,
  }),
  "lifeline sessions prune --dry-run": lands(
    ["sessions", "prune", "--older-than", "2d", "--dry-run"],
    "pruneSessions",
    {
      dryRun: true,
    },
  ),
};

/** The arguments a command needs besides its flags, so that a refused flag is the only fault. */
const BASE: Record<string, readonly string[]> = {
  "lifeline demo": [],
  "lifeline auth": ["list"],
  "lifeline auth add": ["openai"],
  "lifeline auth list": [],
  "lifeline auth remove": ["openai"],
  "lifeline mock-server": [],
  "lifeline load": ["--sessions", "1", "--prompts", "1"],
  "lifeline load merge": ["a", "b", "--out", "m"],
  "lifeline load compare": ["a", "b"],
  "lifeline load-agent": ["--fleet", REDIS],
  "lifeline serve": ["--fleet", REDIS],
  "lifeline submit": ["--fleet", REDIS, "hi"],
  "lifeline export": ["abc"],
  "lifeline sessions": [],
  "lifeline sessions delete": ["abc"],
  "lifeline sessions prune": ["--older-than", "30d"],
};

/** A value for a flag that takes one, valid for the flag itself. */
function sample(option: Option): string[] {
  if (option.negate || (!option.required && !option.optional)) return [option.long ?? ""];
  const values: Record<string, string> = {
    "--print": "hi",
    "--mode": "text",
    "--thinking": "high",
    "--session-dir": "/tmp/s",
    "--extension": "./e.ts",
    "--fleet": REDIS,
    "--fleet-name": "blue",
    "--model": "demo-fast",
    "--provider": "demo",
  };
  return [option.long ?? "", values[option.long ?? ""] ?? "x"];
}

const commands = registry();

describe("the flag table", () => {
  it("has a row for every visible flag of every command, and no row without its flag", () => {
    const visible = commands.flatMap(({ path, options }) =>
      options.filter((option) => !option.hidden).map((option) => `${path} ${option.long}`),
    );
    expect(visible.filter((key) => ROWS[key] === undefined)).toEqual([]);
    expect(Object.keys(ROWS).filter((key) => !visible.includes(key))).toEqual([]);
  });

  for (const [key, row] of Object.entries(ROWS)) {
    it(`${key}: ${row.argv.join(" ")}`, async () => {
      row.check(await runRecorded(row.argv, place));
    });
  }
});

describe("--mode host's flags", () => {
  const cases: [string, readonly string[], RegExp][] = [
    ["outside --mode host", ["--mode", "rpc", "--socket", "/tmp/x.sock"], /--socket only apply to --mode host/],
    ["without a mode", print("--listen", "127.0.0.1:0"), /--listen only apply to --mode host/],
    ["--listen without a token file", ["--mode", "host", "--listen", "127.0.0.1:0"], /--listen needs --token-file/],
    ["both places", ["--mode", "host", "--socket", "s", "--listen", "127.0.0.1:0"], /choose one/],
    ["a token file without --listen", ["--mode", "host", "--token-file", "t"], /go with --listen/],
    ["a malformed address", ["--mode", "host", "--listen", "localhost", "--token-file", "t"], /is not host:port/],
    ["a session flag", ["--mode", "host", "-c"], /opens sessions by command/],
  ];
  for (const [name, argv, message] of cases) {
    it(`refuses ${name}`, async () => refused(argv, message).check(await runRecorded(argv, place)));
  }

  it("runs host mode on stdio with the model and key it is given", async () => {
    const outcome = await runRecorded(["--mode", "host", "--model", "demo-fast", "--api-key", "k"], place);
    lands([], "host", { model: "demo/demo-fast", apiKey: "k" }).check(outcome);
    expect(outcome.calls[0]?.request).not.toHaveProperty("socket");
  });
});

describe("global flags a command does not take", () => {
  const foreign = commands.flatMap(({ path, options }) =>
    options.filter((option) => option.hidden).map((option) => ({ path, option })),
  );

  it("are registered, hidden, on every command that does not take them", () => {
    expect(foreign.length).toBeGreaterThan(50);
    expect(foreign.map(({ path, option }) => `${path} ${option.long}`)).toContain("lifeline sessions --thinking");
  });

  for (const { path, option } of foreign) {
    const words = path.split(" ").slice(1);
    const base = BASE[path] ?? [];
    it(`${path} ${option.long} is refused after the command and before it`, async () => {
      const parents = words.slice(0, -1);
      const name = words.slice(-1);
      for (const argv of [
        [...words, ...base, ...sample(option)],
        [...parents, ...sample(option), ...name, ...base],
      ]) {
        const outcome = await runRecorded(argv, place);
        expect(outcome.code, `${argv.join(" ")}: ${outcome.stderr}`).toBe(2);
        expect(outcome.calls).toEqual([]);
        // A command that only holds subcommands (auth) is refused by the one its arguments run.
        const runs = path === "lifeline auth" ? "lifeline auth list" : path;
        expect(outcome.stderr).toContain(`[ERR_INVALID_OPTIONS]: ${option.long} does not apply to \`${runs}\``);
      }
    });
  }
});
