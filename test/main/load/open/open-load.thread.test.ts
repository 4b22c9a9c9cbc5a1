/**
 * The open model and the sweep in real time: `runLoad()` from the built dist/ (run
 * `npm run build` first) with real worker threads, against an OpenAI-compatible streaming server
 * this test runs on 127.0.0.1, which timestamps every request it receives. The rates are counted
 * there, independently of the report: over a 20 s window, constant and Poisson arrivals reach it
 * at the requested rate within ±5 %, and Poisson arrivals spread as a Poisson process does (an
 * index of dispersion of at least 0.5 over 1 s bins). The run offers exactly the arrivals of its
 * seeded schedule, whose dispersion is near 1 (Poisson) or near 0 (constant). A sweep against a
 * target whose capacity falls once the rate steps begin stops at the first of them and says why.
 *
 * Windows are long and tolerances are set for a loaded 2-core machine: the rate is measured at the
 * server, where a steady delay of the host does not change it. The server's per-second counts are
 * not held to the schedule's evenness: on a loaded machine a stall of the worker thread empties
 * one second and crowds the next (seen: a constant 50/s arriving as 10 then 70 in a second), which
 * says nothing about the schedule; the schedule's own dispersion is checked instead (and in
 * arrivals.test.ts). Every wait is bounded.
 */
import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";
import { runLoad } from "../../../../dist/main/load/index.js";
import { arrivalTimes } from "../../../../src/main/load/open/arrivals.js";
import { tempDir } from "../../../fixtures/bounded.js";
import { mockModelsJson, SSE_HEADERS, sseChunk } from "../../../fixtures/models.mjs";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A streaming chat-completions server: answers "one two" in two chunks (after `answerDelayMs`),
 * records when each request arrived (ms, performance.now()), and serves at most `perSecond`
 * requests a second once `throttle()` is called, queueing the others in order (a request whose
 * client went away leaves the queue).
 */
async function startCountingServer(answerDelayMs = 0) {
  const arrivals: number[] = [];
  let perSecond = Number.POSITIVE_INFINITY;
  const queue: ServerResponse[] = [];
  let timer: NodeJS.Timeout | undefined;
  const answer = (res: ServerResponse) => {
    res.writeHead(200, SSE_HEADERS);
    res.write(sseChunk({ role: "assistant", content: "one" }));
    res.write(sseChunk({ content: " two" }));
    res.write(sseChunk({}, "stop"));
    res.end("data: [DONE]\n\n");
  };
  const serveNext = () => {
    timer = undefined;
    const next = queue.shift();
    if (next !== undefined) answer(next);
    if (queue.length > 0) timer = setTimeout(serveNext, 1000 / perSecond);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== "POST" || req.url?.endsWith("/chat/completions") !== true) {
      res.writeHead(404).end();
      return;
    }
    arrivals.push(performance.now());
    req.resume();
    req.on("end", () => {
      if (answerDelayMs > 0) {
        const delayed = setTimeout(() => answer(res), answerDelayMs);
        res.on("close", () => clearTimeout(delayed));
        return;
      }
      if (perSecond === Number.POSITIVE_INFINITY) {
        answer(res);
        return;
      }
      queue.push(res);
      res.on("close", () => {
        const at = queue.indexOf(res);
        if (at >= 0) queue.splice(at, 1);
      });
      timer ??= setTimeout(serveNext, 1000 / perSecond);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    throttle(rate: number) {
      perSecond = rate;
    },
  };
}

/** A user directory whose models.json names the server as `mock/mock-1`, with fast retries. */
function lifelineDirFor(url: string): string {
  const dir = tempDir(cleanups, "lifeline-open-load-");
  writeFileSync(join(dir, "models.json"), mockModelsJson(url));
  writeFileSync(join(dir, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 5 } }));
  return dir;
}

/** Arrivals per whole second from `origin` (the first arrival), over the first `seconds` seconds. */
function perSecond(arrivals: readonly number[], seconds: number, origin = arrivals[0] ?? 0): number[] {
  const bins = new Array<number>(seconds).fill(0);
  for (const at of arrivals) {
    const bin = Math.floor((at - origin) / 1000);
    if (bin < seconds) bins[bin] = (bins[bin] ?? 0) + 1;
  }
  return bins;
}

function indexOfDispersion(counts: readonly number[]): number {
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
  const variance = counts.reduce((sum, c) => sum + (c - mean) ** 2, 0) / (counts.length - 1);
  return variance / mean;
}

const RATE = 50;
const WINDOW_S = 20;

describe("open model arrivals, counted by the server", () => {
  it.each([
    ["constant", 0, 0.1, 0],
    ["poisson", 0.6, 1.6, 0.5],
  ] as const)(
    "%s arrivals at 50/s over 20 s reach the server at 50/s ± 5 %, none lost uncounted (schedule's index of dispersion in [%d, %d])",
    async (process, minDispersion, maxDispersion, minAtServer) => {
      const server = await startCountingServer();
      const { report } = await runLoad({
        model: "mock/mock-1",
        sessions: 1000,
        arrival: { rate: RATE, process },
        durationMs: WINDOW_S * 1000,
        seed: 1,
        lifelineDir: lifelineDirFor(server.url),
        cwd: tempDir(cleanups),
        outDir: false,
      });
      const a = report.totals.arrivals;
      expect(a).not.toBeNull();
      if (a === null) return;
      // Every arrival the schedule made is started, dropped or unstarted: none is lost silently.
      expect(a.started + a.dropped + a.unstarted).toBe(a.offered);
      expect(a.dropped, "the cap of 1000 open conversations was never reached").toBe(0);
      // The run offered exactly its seeded schedule's arrivals, which spread as the process says.
      const schedule = [
        ...arrivalTimes({ stages: [{ durationMs: WINDOW_S * 1000, rate: RATE }], startRate: RATE, process, seed: 1 }),
      ];
      expect(a.offered).toBe(schedule.length);
      if (process === "constant") expect(a.offered).toBe(RATE * WINDOW_S);
      const scheduled = indexOfDispersion(perSecond(schedule, WINDOW_S, 0));
      expect(scheduled).toBeGreaterThanOrEqual(minDispersion);
      expect(scheduled).toBeLessThanOrEqual(maxDispersion);
      // The server's own count, over the run: the requested rate within ±5 %.
      const received = server.arrivals.length;
      expect(Math.abs(received / WINDOW_S - RATE) / RATE).toBeLessThanOrEqual(0.05);
      // One prompt per arrival, no faults: each started conversation sent one request (those the
      // run's end cut before it left the host are sent and aborted, not received).
      expect(received).toBeLessThanOrEqual(report.totals.requests.sent);
      expect(received).toBeGreaterThanOrEqual(
        report.totals.requests.sent - (report.totals.requests.failuresByKind.aborted ?? 0),
      );
      // Whole seconds inside the run (the last is cut by its end); stalls only add to it.
      expect(indexOfDispersion(perSecond(server.arrivals, WINDOW_S - 1))).toBeGreaterThanOrEqual(minAtServer);
      expect(report.config.arrival).toMatchObject({ model: "open", process, maxInFlight: 1000, onCap: "drop" });
    },
    90_000,
  );
});

describe("arrivals over the cap", () => {
  it.each(["drop", "delay"] as const)(
    "with --on-cap %s, arrivals that find 2 conversations open are counted, and the server sees only those started",
    async (onCap) => {
      // Answers take 400 ms and arrive every 50 ms: at most 2 open, so most arrivals find the cap reached.
      const server = await startCountingServer(400);
      const { report, prompts } = await runLoad({
        model: "mock/mock-1",
        sessions: 2,
        arrival: { rate: 20, onCap },
        durationMs: 2000,
        lifelineDir: lifelineDirFor(server.url),
        cwd: tempDir(cleanups),
        outDir: false,
      });
      const a = report.totals.arrivals;
      expect(a).not.toBeNull();
      if (a === null) return;
      expect(a.offered).toBe(40);
      expect(a.started + a.dropped + a.unstarted).toBe(a.offered);
      expect(a.completed + a.failed + a.cancelled).toBe(a.started);
      // Every request the server got came from a started conversation, one prompt each.
      expect(server.arrivals.length).toBeLessThanOrEqual(a.started);
      if (onCap === "drop") {
        expect(a.dropped).toBeGreaterThan(20);
        expect(a.delayed).toBe(0);
        expect(a.capWaitMs.count).toBe(0);
      } else {
        expect(a.dropped).toBe(0);
        // Most found the cap reached and waited: delayed ones started after their wait, those
        // still waiting at the end are unstarted (and not delayed).
        expect(a.delayed + a.unstarted).toBeGreaterThan(20);
        expect(a.delayed).toBeGreaterThan(0);
        expect(a.capWaitMs.count).toBe(a.delayed);
        expect(a.unstarted).toBeGreaterThan(0);
      }
      // Arrivals that did not wait for the cap are the ones whose schedule lag is measured.
      expect(a.scheduleLagMs.count + a.capWaitMs.count).toBe(a.started);
      // Each started conversation (a session of its own) left a prompt record, one prompt each.
      expect(new Set(prompts.map((record) => record.session)).size).toBe(a.started);
      expect(prompts).toHaveLength(a.started);
    },
    60_000,
  );
});

describe("the sweep against a target that saturates", () => {
  it("stops at the first rate step once the target serves only 4 requests a second, and says why", async () => {
    const server = await startCountingServer();
    const { report } = await runLoad({
      model: "mock/mock-1",
      sessions: 8,
      sweep: { rates: 3, stepMs: 2000 },
      lifelineDir: lifelineDirFor(server.url),
      cwd: tempDir(cleanups),
      outDir: false,
      progressIntervalMs: 20,
      // The target's capacity falls as the first rate step begins (its stage is "<rate>/s").
      onProgress: (progress) => {
        if (progress.stage?.endsWith("/s") === true) server.throttle(4);
      },
    });
    const sweep = report.sweep;
    expect(sweep).not.toBeNull();
    if (sweep === null) return;
    expect(sweep.rates).toHaveLength(3);
    expect(sweep.stages.map((step) => step.kind)).toEqual(["baseline", "probe", "rate"]);
    const [baseline, probe, first] = sweep.stages;
    expect(probe?.achievedRate).toBeGreaterThan(baseline?.achievedRate ?? Number.POSITIVE_INFINITY);
    expect(first?.offeredRate).toBe(sweep.rates[0]);
    expect(sweep.stopReason).toBe("completion");
    expect(first?.saturated).toBe("completion");
    expect(first?.arrivals.completed).toBeLessThan(0.9 * (first?.arrivals.offered ?? 0));
    // What did not complete is accounted for: dropped at the cap, or cut at the step's end.
    const counts = first?.arrivals;
    expect(counts && counts.started + counts.dropped + counts.unstarted).toBe(counts?.offered);
    expect(counts && counts.completed + counts.failed + counts.cancelled).toBe(counts?.started);
    expect(report.config.arrival).toMatchObject({ model: "sweep", sweep: { rates: 3, stepMs: 2000 } });
  }, 90_000);
});
