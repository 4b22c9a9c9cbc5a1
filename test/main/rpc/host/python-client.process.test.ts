/**
 * `lifeline --mode host` driven by a client in another language: test/fixtures/python/
 * host_scenario.py (standard library only, through host_client.py) runs the built CLI as its
 * child on stdio against this file's mock model server, with 100 sessions in flight at once on
 * the one connection: plain answers, retry chains, aborts, steering, and a worker killed by an
 * extension's tool (test/fixtures/kill-worker-extension.mjs) whose sessions are restored. The
 * script checks every session's events (read by `sessionId`, numbered by `seq`) and exits 0 only
 * when every expectation held; this test checks its exit and summary.
 *
 * python3 comes from Debian's packages (scripts/test-prereqs.mjs installs it for `npm test`; run
 * without it, the test fails saying how to install it). The traffic in both directions is kept in
 * TRAFFIC (os.tmpdir()), one JSON line per record, for reading after a failure, and every line of
 * it is held to the shipped schema (schema/host-protocol.schema.json): each command sent is a
 * `HostCommand`, each line lifeline wrote a `HostOutput`.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { PREREQUISITES, requirePrerequisites } from "../../../../scripts/test-prereqs.mjs";
import { tempDir, within } from "../../../fixtures/bounded.js";
import { mockServerSuite } from "../../../fixtures/mock-server-suite.js";

const CLI = fileURLToPath(new URL("../../../../dist/main/cli.js", import.meta.url));
const SCENARIO = fileURLToPath(new URL("../../../fixtures/python/host_scenario.py", import.meta.url));
const EXTENSION = fileURLToPath(new URL("../../../fixtures/kill-worker-extension.mjs", import.meta.url));
const SCHEMA = new URL("../../../../schema/host-protocol.schema.json", import.meta.url);
/** Where the recorded traffic stays after the run (overwritten by the next). */
const TRAFFIC = join(tmpdir(), "lifeline-host-python-client.jsonl");

const SESSIONS = 100;
const RETRIED = 10;
const ABORTED = 10;
const STEERED = 10;
/** The script's own bound on the whole run; the test waits a little longer for its exit. */
const DEADLINE_S = 90;

const suite = mockServerSuite();

interface Summary {
  ok: boolean;
  sessions: number;
  maxInFlight: number;
  maxInFlightFirst: number;
  prompts: number;
  retryChains: number;
  retries: number;
  aborts: number;
  steers: number;
  restored: number;
  workerDeaths: number;
  commands: number;
  outputs: number;
  events: number;
  coalesced: number;
  seconds: number;
  failures: string[];
}

interface TrafficLine {
  t: number;
  direction: "command" | "output";
  record: Record<string, unknown>;
}

/** Runs the scenario; resolves with its exit code, stdout and stderr. */
function runScenario(dir: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    "python3",
    [
      SCENARIO,
      ...["--node", process.execPath, "--cli", CLI, "--mock-url", suite.server.url, "--extension", EXTENSION],
      ...["--dir", dir, "--record", TRAFFIC, "--deadline", String(DEADLINE_S)],
      ...["--sessions", String(SESSIONS), "--retries", String(RETRIED), "--aborts", String(ABORTED)],
      ...["--steers", String(STEERED)],
    ],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" } },
  );
  suite.cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addSchema(JSON.parse(readFileSync(SCHEMA, "utf8")) as object, "host");

/** The records the schema's `definition` refuses, each with ajv's first reason. */
function refused(definition: "HostCommand" | "HostOutput", records: readonly object[]): string[] {
  const validate = ajv.getSchema(`host#/definitions/${definition}`);
  if (validate === undefined) throw new Error(`the schema has no definition ${definition}`);
  return records.flatMap((record) =>
    validate(record)
      ? []
      : [`${JSON.stringify(record).slice(0, 300)}: ${ajv.errorsText(validate.errors?.slice(0, 1))}`],
  );
}

describe("a Python client of --mode host", () => {
  it(
    "keeps 100 sessions in flight through one process: prompts, retry chains, aborts, steering, a worker death",
    async () => {
      requirePrerequisites(
        "process",
        PREREQUISITES.filter((p) => p.name === "python3"),
      );
      const dir = tempDir(suite.cleanups, "lifeline-host-python-");
      const { code, stdout, stderr } = await within(runScenario(dir), (DEADLINE_S + 30) * 1000, "host_scenario.py");
      const lines = stdout.trim().split("\n");
      const summary = JSON.parse(lines[lines.length - 1] ?? "{}") as Summary;
      const context = `traffic in ${TRAFFIC}; python's stderr: ${stderr.slice(-2000)}`;
      expect(summary.failures, context).toEqual([]);
      expect(code, context).toBe(0);
      expect(summary).toMatchObject({
        ok: true,
        sessions: SESSIONS,
        // Every prompt of step 2 was accepted before the first of them settled.
        maxInFlightFirst: SESSIONS,
        prompts: 2 * SESSIONS,
        retryChains: RETRIED,
        retries: 2 * RETRIED,
        aborts: ABORTED,
        steers: STEERED,
        workerDeaths: 1,
      });
      // The client stopped reading for 1.5 s while 99 sessions streamed: lifeline's output backed up
      // and merged deltas, whose seq jumps the script checked against their `coalesced`.
      expect(summary.coalesced).toBeGreaterThan(0);
      // The killer at least; on one worker thread (this machine's default on 2 cores) all of them.
      expect(summary.restored).toBeGreaterThanOrEqual(1);
      expect(summary.restored).toBeLessThanOrEqual(SESSIONS);

      // The record holds every line both ways, in order: each command once, with the summary's counts.
      const traffic = readFileSync(TRAFFIC, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as TrafficLine);
      expect(traffic.filter((line) => line.direction === "command")).toHaveLength(summary.commands);
      expect(traffic.filter((line) => line.direction === "output")).toHaveLength(summary.outputs);
      const ids = traffic.filter((line) => line.direction === "command").map((line) => line.record.id);
      expect(new Set(ids).size).toBe(ids.length);
      const responses = traffic.filter((line) => line.direction === "output" && line.record.type === "response");
      expect(responses.map((line) => line.record.id).sort()).toEqual([...ids].sort());
      const restoredEvents = traffic.filter((line) => line.record.type === "session_restored");
      expect(restoredEvents).toHaveLength(summary.restored);

      // Every line both ways is what the shipped schema describes; the check can fail on this
      // traffic: the same events without their session's id are refused.
      const commands = traffic.filter((line) => line.direction === "command").map((line) => line.record);
      const outputs = traffic.filter((line) => line.direction === "output").map((line) => line.record);
      expect(refused("HostCommand", commands)).toEqual([]);
      expect(refused("HostOutput", outputs)).toEqual([]);
      const events = outputs.filter((record) => record.type !== "response");
      const anonymous = events.map(({ sessionId: _, ...event }) => event);
      expect(refused("HostOutput", anonymous)).toHaveLength(events.length);

      // What the mock server saw: each aborted stream was closed by the client side.
      const aborted = suite.server.log.filter((record) => record.conversation.startsWith("aborted-"));
      expect(aborted.filter((record) => record.step === "stall").map((record) => record.outcome)).toEqual(
        Array(ABORTED).fill("client_closed"),
      );
    },
    (DEADLINE_S + 40) * 1000,
  );
});
