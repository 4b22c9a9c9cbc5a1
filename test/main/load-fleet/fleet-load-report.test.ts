/**
 * The merged report of a distributed run (src/main/load-fleet/fleet-load-report.ts): finals moved
 * onto Redis's clock before the merge, so timelines line up by interval whatever each machine's
 * clock says; a lost generator kept in the breakdown from its last snapshot, out of the merged
 * figures; records tagged with their generator and moved onto the run's clock.
 */
import { describe, expect, it } from "vitest";
import {
  emptyLoadCounters,
  type LoadCounters,
  type RequestRecord,
} from "../../../src/main/load/metrics/load-metrics.js";
import { Sketch } from "../../../src/main/load/metrics/sketch.js";
import type { TimelinePoint } from "../../../src/main/load/metrics/timeline.js";
import { buildReport, type LoadReport } from "../../../src/main/load/report/load-report.js";
import { buildFleetReport, onRedisClock } from "../../../src/main/load-fleet/fleet-load-report.js";
import type { AgentRegistration } from "../../../src/main/load-fleet/load-fleet-protocol.js";
import { type GeneratorState, newGeneratorState } from "../../../src/main/load-fleet/run-watch.js";

const config: LoadReport["config"] = {
  sessions: 1,
  promptsPerSession: 2,
  durationMs: null,
  target: "mock",
  model: "lifeline-mock/mock-1",
  thinkingLevel: null,
  faults: [],
  seed: 0,
  rampUpMs: 0,
  concurrency: 1,
  thinkTimeMs: 0,
  threads: null,
  promptTexts: 0,
  conversations: 0,
  tools: null,
  arrival: null,
  mock: null,
  settings: { fleet: { redis: "redis://:secret@127.0.0.1:6379" } },
};

function counters(requests: number): LoadCounters {
  return {
    ...emptyLoadCounters(),
    promptsSent: requests,
    promptsSucceeded: requests,
    inFlightPrompts: 1,
    requests,
    outputTokens: requests,
  };
}

function point(tMs: number, requests: number): TimelinePoint {
  return {
    tMs,
    inFlightPrompts: 1,
    inFlightRequests: 1,
    requests,
    retries: 0,
    failures: {},
    outputTokens: requests,
    loopDelayMeanMs: 0,
    loopDelayMaxMs: 0,
  };
}

/** A generator's report: requests of these latencies, started at `localStart` on its own clock. */
function report(latencies: number[], localStart: number, points: TimelinePoint[]): LoadReport {
  const requests: RequestRecord[] = latencies.map((e2eMs, i) => ({
    type: "request",
    session: 0,
    prompt: i,
    attempt: 0,
    turn: 0,
    startMs: i * 10,
    ttftMs: 1,
    ttfbMs: 0.5,
    e2eMs,
    outputTokens: 1,
    inputTokens: 0,
    costUsd: 0,
    stopReason: "stop",
  }));
  return buildReport({
    status: "completed",
    startedAt: new Date(localStart),
    endedAt: new Date(localStart + 2000),
    durationMs: 2000,
    config,
    counters: counters(latencies.length),
    requests,
    prompts: [],
    timeline: { intervalMs: 1000, points },
    loopDelayMs: { mean: 0, p50: 0, p99: 0, max: 0 },
    watchdogTerminations: 0,
    thresholds: [],
    mock: null,
    tools: { toolCalls: 0, toolFailures: 0, toolLatenciesMs: [] },
  });
}

function agent(id: string, clockOffsetMs: number): AgentRegistration {
  return {
    id,
    host: "h",
    pid: 1,
    version: "0",
    schema: "lifeline-load-report/1",
    protocol: 1,
    state: "busy",
    runId: "r",
    joinedAtMs: 0,
    clockOffsetMs,
    clockErrorMs: 0.2,
  };
}

function state(id: string, index: number, partial: Partial<GeneratorState>): GeneratorState {
  return { ...newGeneratorState(agent(id, 0), index, { sessions: 1, seed: index }), status: "finished", ...partial };
}

describe("onRedisClock", () => {
  it("moves a report's start and end by its generator's offset", () => {
    const local = report([5], 1_000_000, []);
    const moved = onRedisClock({ report: local, startedAtMs: 1_000_750 });
    expect(moved.startedAt).toBe(new Date(1_000_750).toISOString());
    expect(moved.endedAt).toBe(new Date(1_002_750).toISOString());
  });
});

describe("buildFleetReport", () => {
  it("merges the finals on Redis's clock and keeps a lost generator in the breakdown only", () => {
    const runStart = 5_000_000;
    // Generator a's clock is 30 s behind Redis's, b's 12 s ahead; b started 1 s after a on Redis's clock.
    const a = report([10, 20, 30], runStart - 30_000, [point(0, 0), point(1000, 2), point(2000, 1)]);
    const b = report([40, 50], runStart + 1000 + 12_000, [point(0, 0), point(1000, 2)]);
    const lostSketch = new Sketch().add(7).add(9);
    const generators = [
      state("a", 0, {
        final: { type: "run_final", gen: "a", atMs: runStart + 2000, startedAtMs: runStart, report: a, chunks: 1 },
        records: [JSON.stringify({ type: "request", startMs: 5, e2eMs: 10 })],
      }),
      state("b", 1, {
        final: {
          type: "run_final",
          gen: "b",
          atMs: runStart + 3000,
          startedAtMs: runStart + 1000,
          report: b,
          chunks: 1,
        },
        records: [JSON.stringify({ type: "request", startMs: 5, e2eMs: 40 })],
      }),
      state("c", 2, {
        status: "lost",
        lostAtMs: runStart + 1500,
        inFlightPrompts: 1,
        snapshot: {
          type: "snapshot",
          gen: "c",
          seq: 0,
          atMs: runStart + 1000,
          counters: counters(2),
          point: point(1000, 2),
          sketches: { e2eMs: lostSketch.toJSON(), ttftMs: new Sketch().toJSON() },
        },
      }),
    ];
    const { report: merged, records } = buildFleetReport(generators, {
      status: "degraded",
      options: { sessions: 3, prompts: 2 },
      name: "f",
      runId: "r",
      onGeneratorLoss: "continue",
      coordinatorCpuMs: 40,
      coordinatorWallMs: 4000,
      plannedStartMs: runStart - 100,
      nowMs: runStart + 4000,
    });
    expect(merged.status).toBe("degraded");
    expect(merged.totals.requests.sent).toBe(5);
    expect(merged.latency.e2eMs.count).toBe(5);
    expect(merged.startedAt).toBe(new Date(runStart).toISOString());
    // b's points land one interval after a's (its start point at 1000, its first second's at
    // 2000, with a's last): the clocks' 42 s disagreement plays no part.
    expect(merged.timeline.points.map((p) => [p.tMs, p.requests])).toEqual([
      [0, 0],
      [1000, 2],
      [2000, 3],
    ]);
    expect(merged.config.settings).toEqual({});
    expect(merged.fleet).toMatchObject({ generators: 3, coordinatorCpuMs: 40, coordinatorCpuPercent: 1 });
    expect(merged.generators.map((g) => [g.id, g.status, g.figures.source, g.figures.requests])).toEqual([
      ["a", "finished", "final", 3],
      ["b", "finished", "final", 2],
      ["c", "lost", "last_snapshot", 2],
    ]);
    expect(merged.generators[2]).toMatchObject({ lostAtMs: 1500, inFlightPrompts: 1 });
    expect(merged.generators[2]?.figures.e2eMs).toMatchObject({ count: 2, p50: 7 });
    expect(records).toEqual([
      { type: "request", startMs: 5, e2eMs: 10, generator: "a" },
      { type: "request", startMs: 1005, e2eMs: 40, generator: "b" },
    ]);
  });
});
