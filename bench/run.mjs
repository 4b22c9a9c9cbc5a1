/**
 * `npm run bench`: runs every section in a fresh child process, one after the other, and prints
 * their tables and a summary of targets. Sections:
 *   (a) post-message.mjs   main-thread cost per delivered event vs raw postMessage
 *   (b) abort-latency.mjs  session.abort() → the worker's HTTP request is torn down
 *   (c) event-loop.mjs     main event-loop delay, 100 / 1,000 streaming sessions vs in-process
 *                          (plus a supplementary HTTP/SSE variant served by sse-server.mjs)
 *   (d) memory.mjs         main-thread heap per idle session at 1,000 sessions
 *   (e) persistence.mjs    main event-loop delay, 1,000 sessions prompting, session files on vs off
 *   (f) load-scale.mjs     `lifeline load` (runLoad) at 50 … 4,000 sessions: where the host's loop limits
 *   (g) fleet-coordination.mjs  fleet mode: latency the Redis-backed budget, gate and permits add per
 *                          request attempt, vs the same decisions in memory (needs redis-server)
 *   (h) fleet-throughput.mjs  a fleet's queue: prompts/s with 1, 2, 3 `lifeline serve` processes, Redis calls per prompt
 *   (i) telemetry.mjs      OpenTelemetry (B9): process CPU per prompt on (o)'s workload with
 *                          `telemetry: false` / the API without a provider / the SDK recording (a fresh
 *                          process a run, telemetry-prompts.mjs); supplementary: main-thread CPU per
 *                          model request, short and streamed replies; event-loop p99 with streaming
 *                          sessions, off vs SDK; lifeline's recording alone (replay)
 *   (j) load-generator.mjs `lifeline load`'s own overhead: main-thread share of its bookkeeping at 1,000
 *                          sessions, and the highest open-model arrival rate it starts on schedule
 *   (k) load-fleet.mjs     distributed `lifeline load` with 1, 2, 3 generators: the coordinator's CPU
 *                          and Redis traffic per generator (needs redis-server)
 *   (l) abort-under-load.mjs  abort() → prompt settled, idle and while 500 sessions stream on the same
 *                          worker (the built-in mock in its own process)
 *   (m) stall-scale.mjs    stalls of the host's loop with 1,000 … 10,000 sessions started at once (a 503,
 *                          then 200 tokens at ~500/s from `lifeline mock-server` in its own process):
 *                          max stall per phase (kickoff, after), its distribution, heap per session;
 *                          and the cut: aborting every prompt still running in one loop
 *   (n) threads.mjs        worker threads: 1,000 prompts over HTTP/SSE (and on demo-fast) with 1, 2 (3)
 *                          workers, the fixed cost of a worker, and the default `threads` rule checked
 *                          against the main thread's measured share per busy worker
 *   (o) cpu-baseline.mjs   P3: process CPU per prompt, lifeline vs the same agent loop in-process (a 503,
 *                          then 200 tokens at ~500/s over HTTP/SSE), RSS of each, worker/main CPU profiles
 *                          by component; BENCH_P4_RSS=1 adds RSS at 5,000 sessions (P4)
 *   (r) rss.mjs            P4: process RSS at 5,000 sessions on (o)'s workload, lifeline vs in-process, and
 *                          where lifeline's is: main heap, worker heap, their external memory, the rest
 *   (s) embedding-cost.mjs what an embedding app pays: import("lifeline") vs import("piscina"), the
 *                          packages it loads, a minimal embedder's bundle, and a host's start to its
 *                          first reply with the longest main-thread block meanwhile (BENCH_BASE_DIR=<a
 *                          built checkout of the base commit> measures the start there too)
 *   (t) host-mode.mjs      `--mode host`, one process with 1,000 sessions, vs `--mode rpc`, 50 processes with
 *                          one session each, on the same per-session prompts: RSS per session, process CPU
 *                          per prompt, `prompt` → first event as the client sees it; host ÷ rpc
 *
 * Env: BENCH_QUICK=1 for smaller counts (a smoke run; noisier), BENCH_JSON=<path> to also write
 * the raw results as JSON, BENCH_ONLY=a,c to run some sections only.
 * Timings are printed, never asserted: the exit code is 0 whether or not targets are met.
 */
import { writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, platform, release, totalmem } from "node:os";
import { median, QUICK, runChild } from "./lib.mjs";

const SECTIONS = [
  { id: "a", file: "./post-message.mjs", title: "(a) per-event cost on the main thread vs raw postMessage" },
  { id: "b", file: "./abort-latency.mjs", title: "(b) abort latency" },
  { id: "c", file: "./event-loop.mjs", title: "(c) main event-loop delay while sessions stream" },
  { id: "d", file: "./memory.mjs", title: "(d) main-thread memory per idle session" },
  { id: "e", file: "./persistence.mjs", title: "(e) session files: main event-loop delay, persistence on vs off" },
  { id: "f", file: "./load-scale.mjs", title: "(f) lifeline load: sessions one machine drives" },
  {
    id: "g",
    file: "./fleet-coordination.mjs",
    title: "(g) fleet mode: latency added per request attempt by B8 in Redis",
  },
  { id: "h", file: "./fleet-throughput.mjs", title: "(h) fleet: prompts/s with 1, 2, 3 serve processes on one Redis" },
  { id: "i", file: "./telemetry.mjs", title: "(i) OpenTelemetry: what recording costs per prompt" },
  { id: "j", file: "./load-generator.mjs", title: "(j) lifeline load: the generator's own overhead" },
  {
    id: "k",
    file: "./load-fleet.mjs",
    title: "(k) distributed load: coordinator CPU and Redis traffic per generator (1, 2, 3 generators)",
  },
  { id: "l", file: "./abort-under-load.mjs", title: "(l) abort under load: abort() → prompt settled, one worker" },
  { id: "m", file: "./stall-scale.mjs", title: "(m) host stalls at scale: N prompts started at once" },
  { id: "n", file: "./threads.mjs", title: "(n) worker threads: what a second worker buys and what one costs" },
  { id: "o", file: "./cpu-baseline.mjs", title: "(o) process CPU per prompt: lifeline vs the agent loop in-process" },
  { id: "r", file: "./rss.mjs", title: "(r) P4: RSS at 5,000 sessions, lifeline vs the agent loop in-process" },
  { id: "s", file: "./embedding-cost.mjs", title: "(s) what an embedding app pays: import, bundle, start" },
  {
    id: "t",
    file: "./host-mode.mjs",
    title: "(t) --mode host, many sessions in one process, vs --mode rpc, a process per session",
  },
];

const only = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());

// ---------------------------------------------------------------- formatting

function table(headers, rows) {
  const cells = [headers, ...rows].map((row) => row.map((cell) => String(cell)));
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => row[i].length)));
  const line = (row) =>
    `| ${row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `${"-".repeat(w + 1)}-` : `${"-".repeat(w + 1)}:`)).join("|")}|`;
  return [line(cells[0]), rule, ...cells.slice(1).map(line)].join("\n");
}

const us = (ns) => (ns / 1e3).toFixed(1);
const ms2 = (ms) => ms.toFixed(2);
const ratio = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));

// ---------------------------------------------------------------- sections

function printA(a) {
  const base = a.raw.rttMainCpuNsPerMessage;
  console.log(
    table(
      ["measurement", "main CPU µs / msg or event", "× raw round trip", "notes"],
      [
        [
          "raw postMessage round trip (baseline)",
          us(base),
          "1.00",
          `latency p50 ${a.raw.rttLatencyUs.p50.toFixed(1)} µs, p99 ${a.raw.rttLatencyUs.p99.toFixed(1)} µs (${a.raw.rttLatencyUs.n} trips)`,
        ],
        [
          "raw postMessage one-way, per message received",
          us(a.raw.oneWayMainCpuNsPerMessage),
          ratio(a.raw.oneWayMainCpuNsPerMessage / base),
          `${a.raw.oneWayMessages} back-to-back messages`,
        ],
        ...a.runs.flatMap((r) => {
          const rows = [
            [
              `${r.name}, per delivered event`,
              us(r.mainCpuNsPerEvent),
              ratio(r.mainCpuNsPerEvent / base),
              `${r.events} events (${r.updates} message_update) for ${r.prompts} prompts; ${us(r.mainCpuNsPerPrompt)} µs/prompt; wall ${ms2(r.wallMs / r.prompts)} ms/prompt`,
            ],
          ];
          if (r.mainCpuNsPerSourceEvent !== undefined) {
            rows.push([
              `${r.name}, per agent event (before batching)`,
              us(r.mainCpuNsPerSourceEvent),
              ratio(r.mainCpuNsPerSourceEvent / base),
              `~${Math.round(r.sourceEventsEstimate)} agent events (counted in-process for the same prompts)`,
            ]);
          }
          return rows;
        }),
      ],
    ),
  );
  console.log(`CPU clock: ${a.clock}.`);
}

function printB(b) {
  const rows = [];
  for (const [label, s] of [
    ["idle", b.idle],
    [`${b.busy.busySessions} other sessions streaming`, b.busy],
  ]) {
    for (const [what, h] of [
      ["abort() → request socket closed", s.closeMs],
      ["abort() → abort() resolved", s.ackMs],
      ["abort() → prompt settled", s.settleMs],
    ]) {
      rows.push([`${label}: ${what}`, ms2(h.p50), ms2(h.p90), ms2(h.p99), ms2(h.max), h.n]);
    }
  }
  console.log(table(["measurement (ms)", "p50", "p90", "p99", "max", "n"], rows));
}

function findC(c, mode, n) {
  return c.aggregates.find((r) => r.mode === mode && r.sessions === n);
}

const LABELS = {
  inprocess: "in-process Agent, demo-stream",
  lifeline: "lifeline (worker), demo-stream",
  "inprocess-http": "in-process Agent, HTTP/SSE mock",
  "lifeline-http": "lifeline (worker), HTTP/SSE mock",
};

function printC(c) {
  const rows = [];
  const groups = [
    ["inprocess", "lifeline", c.config.SIZES],
    ["inprocess-http", "lifeline-http", c.config.HTTP_SIZES ?? []],
  ];
  for (const [baseMode, mode2, sizes] of groups) {
    for (const n of sizes) {
      const base = findC(c, baseMode, n);
      for (const mode of [baseMode, mode2]) {
        const r = findC(c, mode, n);
        rows.push([
          `${LABELS[mode]} × ${n}`,
          ms2(r.p50),
          `${ms2(r.p99)} (${ms2(r.p99Min)}–${ms2(r.p99Max)})`,
          `${ms2(r.max)} (${ms2(r.maxOfRuns)})`,
          ms2(r.mean),
          ratio(r.p99 / base.p99),
          `${Math.round(r.elu * 100)}%`,
          r.mainCpuUsPerEvent.toFixed(1),
          Math.round(r.eventsPerS),
          Math.round(r.charsPerS / 1000),
          ms2(r.idleP99),
          ms2(r.startMax),
        ]);
      }
    }
  }
  console.log(
    table(
      [
        "sessions streaming",
        "p50 ms",
        "p99 ms (range)",
        "max ms (worst run)",
        "mean ms",
        "p99 × in-process",
        "main ELU",
        "main µs/event",
        "events/s",
        "kchars/s",
        "idle p99 ms",
        "start-burst max ms",
      ],
      rows,
    ),
  );
  console.log(
    table(
      [
        "sessions streaming",
        "events per delivery (largest)",
        "main-thread GC pauses",
        "GC total ms",
        "GC max ms",
        "process CPU % of a core",
        "of which off main thread",
        "main waiting for a CPU, ms/s",
      ],
      c.aggregates.map((r) => [
        `${LABELS[r.mode]} × ${r.sessions}`,
        `${r.eventsPerDelivery.toFixed(1)} (${r.largestDelivery})`,
        Math.round(r.gcCount),
        r.gcTotalMs.toFixed(1),
        r.gcMaxMs.toFixed(2),
        r.processCpuPct.toFixed(0),
        r.otherThreadsCpuPct.toFixed(0),
        r.mainRunqueueWaitMsPerS.toFixed(1),
      ]),
    ),
  );
  console.log(
    `Median of ${c.config.REPS} run(s) per demo-stream row and ${c.config.HTTP_REPS} per HTTP row, each a fresh process; window ${c.config.WINDOW_S} s after a ${c.config.WARM_S} s ramp; ` +
      "monitorEventLoopDelay resolution 1 ms (an idle loop reads ~1.1 ms).",
  );
}

function printD(d) {
  console.log(
    table(
      ["measurement", "value"],
      [
        [`main heapUsed per idle session (${d.sessions} sessions)`, `${(d.heapBytesPerSession / 1024).toFixed(2)} KB`],
        [
          "main heapUsed per session after one prompt (a retry, then 200 words)",
          `${(d.heapBytesPerPromptedSession / 1024).toFixed(2)} KB (RSS ${d.rssPromptedMb.toFixed(1)} MB)`,
        ],
        [
          "heapUsed before → after → after dispose",
          `${ms2(d.heapUsedBeforeMb)} → ${ms2(d.heapUsedAfterMb)} → ${ms2(d.heapUsedDisposedMb)} MB`,
        ],
        [
          "process RSS before → after → after dispose (main + workers)",
          `${d.rssBeforeMb.toFixed(1)} → ${d.rssAfterMb.toFixed(1)} → ${d.rssDisposedMb.toFixed(1)} MB`,
        ],
        ["worker threads", d.workers],
        [`time to create ${d.sessions} sessions (32 in flight)`, `${d.createMsTotal.toFixed(0)} ms`],
      ],
    ),
  );
}

function printE(e) {
  console.log(
    table(
      [
        "persistence",
        "sessions",
        "p50 ms",
        "p99 ms (min–max of runs)",
        "max ms",
        "prompts/s",
        "main CPU µs/prompt",
        "ELU",
        "bytes written/s",
      ],
      e.aggregates.map((x) => [
        x.mode,
        x.sessions,
        ms2(x.p50),
        `${ms2(x.p99)} (${ms2(x.p99Min)}–${ms2(x.p99Max)})`,
        ms2(x.max),
        x.promptsPerS.toFixed(0),
        x.mainCpuUsPerPrompt.toFixed(0),
        `${(x.elu * 100).toFixed(0)} %`,
        x.bytesWrittenPerS.toFixed(0),
      ]),
    ),
  );
}

/** (f): the host's loop is the limit once the main thread is busy this share of the time. */
const F_HOST_LIMIT_ELU = 0.9;

function printH(h) {
  console.log(
    table(
      [
        "serve processes",
        "prompts",
        "failed",
        "wall s",
        "prompts/s",
        "Redis commands / prompt",
        "of them scripts",
        "Redis CPU / prompt, µs",
      ],
      h.runs.map((r) => [
        r.hosts,
        r.prompts,
        r.failed,
        (r.wallMs / 1000).toFixed(1),
        r.promptsPerS.toFixed(1),
        r.redisCallsPerPrompt.toFixed(0),
        r.scriptCallsPerPrompt.toFixed(1),
        r.redisCpuUsPerPrompt?.toFixed(0) ?? "",
      ]),
    ),
  );
  const first = h.runs[0];
  console.log(
    `Commands per prompt with ${first.hosts} serve process(es), by command (those inside scripts included): ${first.byCommand.map(([command, perPrompt]) => `${command} ${perPrompt.toFixed(1)}`).join(", ")}`,
  );
  const kb = (bytes) => (bytes / 1024).toFixed(1);
  const stored = first.stored;
  if (stored !== undefined) {
    const sessions = h.config.SESSIONS;
    const prompts = first.prompts;
    console.log(
      `Redis memory (MEMORY USAGE) after the run of ${first.hosts}: per stored session of ${h.config.PROMPTS} prompts ${kb(stored.session.bytes / sessions)} KiB (${stored.session.keys} keys) + ${kb(stored.indexes.bytes / sessions)} KiB of indexes; per finished prompt (kept an hour) ${kb(stored.queue.bytes / prompts)} KiB of job and ${kb(stored.events.bytes / prompts)} KiB of event stream`,
    );
  }
  if (h.byOrigin !== undefined) {
    console.log("Where a prompt's Redis commands come from (MONITOR over 20 prompts, one serve process):");
    console.log(
      table(
        ["origin", "commands / prompt", "round trips / prompt"],
        h.byOrigin.map((row) => [row.name, row.commands.toFixed(1), row.roundTrips.toFixed(2)]),
      ),
    );
  }
  if (h.queued !== undefined) {
    console.log(
      `Redis memory per queued prompt (used_memory over ${h.queued.count} waiting, no host serving): ${kb(h.queued.bytesPerPrompt)} KiB`,
    );
  }
}

/** (l): targets of abort() → prompt settled, p99, ms. */
const L_BUSY_P99_MS = 25;
const L_IDLE_P99_MS = 5;

function printL(l) {
  const rows = [];
  for (const [label, s] of [
    ["idle", l.idle],
    [`${l.busy.busySessions} sessions streaming`, l.busy],
  ]) {
    for (const [what, h] of [
      ["abort() → prompt settled", s.settleMs],
      ["abort() → abort() resolved", s.ackMs],
      ["abort() → server saw the request closed", s.closeMs],
    ]) {
      rows.push([`${label}: ${what}`, ms2(h.p50), ms2(h.p90), ms2(h.p99), ms2(h.max), h.n]);
    }
  }
  console.log(table(["measurement (ms)", "p50", "p90", "p99", "max", "n"], rows));
  console.log(
    `busy ÷ idle, settled: p50 ${ratio(l.busy.settleMs.p50 / l.idle.settleMs.p50)}×, p99 ${ratio(l.busy.settleMs.p99 / l.idle.settleMs.p99)}×. ` +
      `While probing, the ${l.busy.busySessions} sessions got ${Math.round(l.busy.deltasPerS)} text deltas/s (${l.busy.kcharsPerS.toFixed(0)} kchars/s); ` +
      `main loop delay p99 ${ms2(l.busy.mainLoopP99Ms)} ms, max ${ms2(l.busy.mainLoopMaxMs)} ms; ` +
      `CPU (% of a core) main ${l.busy.mainCpuPct.toFixed(0)}, other threads (the worker, mostly) ${l.busy.otherThreadsCpuPct.toFixed(0)}, the mock's process ${l.busy.mockCpuPct.toFixed(0)}; ` +
      `sessions restored on a fresh worker (a worker terminated as hung) ${l.busy.sessionsRestored}; ` +
      `load average at the end ${l.busy.loadavg.toFixed(2)}.`,
  );
}

function printK(k) {
  console.log(
    table(
      [
        "generators",
        "sessions",
        "requests/s",
        "coordinator CPU ms (% of a core)",
        "snapshot B/s per gen",
        "Redis bytes in/s per gen",
        "run cmds/s per gen",
        "limiter cmds/s per gen",
      ],
      k.runs.map((r) => [
        r.generators,
        r.sessions,
        r.requestsPerS.toFixed(1),
        `${r.coordinatorCpuMs} (${r.coordinatorCpuPercent.toFixed(2)} %)`,
        r.snapshotBytesPerS,
        r.redisInputBytesPerGenS.toFixed(0),
        r.runCommandsPerGenS.toFixed(1),
        r.limiterCommandsPerGenS.toFixed(1),
      ]),
    ),
  );
  const last = k.runs[k.runs.length - 1];
  console.log(
    `Commands per generator per second with ${last.generators} generators, by command: ${last.byCommand.map(([command, n]) => `${command} ${n.toFixed(2)}`).join(", ")}`,
  );
}

/** (i): process CPU per prompt, API without a provider ÷ off, and SDK recording ÷ off. */
const I_API_RATIO_MAX = 1.02;
const I_SDK_RATIO_MAX = 1.03;

function printI(i) {
  const label = { off: "telemetry: false", api: "API installed, no provider", sdk: "SDK: metrics and traces" };
  const p = i.prompts;
  if (p !== undefined) {
    const base = p.medians.off.processCpuUsPerPrompt;
    const runsOf = (mode, key) =>
      p.runs
        .filter((r) => r.mode === mode)
        .map((r) => r[key].toFixed(0))
        .join(", ");
    console.log(
      `Process CPU per prompt, ${p.config.sessions} sessions at once, each a 503 then ${p.config.tokens} tokens over HTTP/SSE ((o)'s workload); ${p.config.reps} rounds, a fresh process a run:`,
    );
    console.log(
      table(
        ["mode", "process CPU µs/prompt", "÷ off", "runs (µs)", "main µs/prompt", "worker µs/prompt", "wall s"],
        ["off", "api", "sdk"].map((mode) => {
          const m = p.medians[mode];
          return [
            label[mode],
            m.processCpuUsPerPrompt.toFixed(0),
            (m.processCpuUsPerPrompt / base).toFixed(3),
            runsOf(mode, "processCpuUsPerPrompt"),
            m.mainCpuUsPerPrompt.toFixed(0),
            m.workerCpuUsPerPrompt.toFixed(0),
            (m.wallMs / 1000).toFixed(1),
          ];
        }),
      ),
    );
    const fmt = (v) => v.map((x) => x.toFixed(3)).join(", ");
    console.log(
      `Round by round ÷ off: api ${fmt(p.roundRatios.api)} (median ${median(p.roundRatios.api).toFixed(3)}); sdk ${fmt(p.roundRatios.sdk)} (median ${median(p.roundRatios.sdk).toFixed(3)}).`,
    );
    const sdkRuns = p.runs.filter((r) => r.mode === "sdk");
    console.log(
      `SDK runs: ${sdkRuns.map((r) => r.spansPerPrompt.toFixed(2)).join(", ")} spans exported per prompt (4 expected), ${sdkRuns.map((r) => r.metricExports).join(", ")} metric exports; failed prompts ${Math.max(...p.runs.map((r) => r.failed))}; loadavg ${Math.min(...p.runs.map((r) => r.loadavg)).toFixed(1)}–${Math.max(...p.runs.map((r) => r.loadavg)).toFixed(1)}.`,
    );
  }
  for (const [name, w] of Object.entries(i.cpu)) {
    const base = w.usPerRequest.off;
    const words = name === "short" ? 40 : i.config.STREAMED_WORDS;
    console.log(`Workload ${name}: ${words}-word replies.`);
    console.log(
      table(
        ["mode", "main-thread CPU per model request (µs)", "vs off", "runs (µs)"],
        ["off", "api", "sdk"].map((mode) => [
          label[mode],
          w.usPerRequest[mode].toFixed(1),
          `${(((w.usPerRequest[mode] - base) / base) * 100).toFixed(1)} %`,
          w.runs[mode].map((ns) => (ns / 1e3).toFixed(0)).join(", "),
        ]),
      ),
    );
    console.log(`SDK vs off, round by round: ${w.sdkAddedRuns.map((x) => `${(x * 100).toFixed(1)} %`).join(", ")}`);
    if (Number.isFinite(w.fixedUsPerRequest)) {
      const perRequest = w.usPerRequest.sdk - base - w.fixedUsPerRequest;
      console.log(
        `Of the SDK's added ${(w.usPerRequest.sdk - base).toFixed(1)} µs, the idle host's fixed cost spread over these requests is ${w.fixedUsPerRequest.toFixed(1)} µs; the rest, ${perRequest.toFixed(1)} µs (${((perRequest / base) * 100).toFixed(1)} %), is per request.`,
      );
    }
  }
  if (i.replayNsPerRequest.length > 0) {
    const runs = i.replayNsPerRequest.map((ns) => (ns / 1e3).toFixed(1)).join(", ");
    console.log(
      `Replay, lifeline's recording alone with the SDK (in-process CPU per request): median ${(median(i.replayNsPerRequest) / 1e3).toFixed(1)} µs (runs ${runs}).`,
    );
  }
  if (i.replayO !== undefined && i.replayO.runs.length > 0) {
    const us = median(i.replayO.runs) / 1e3;
    const share =
      i.prompts === undefined
        ? ""
        : `: ${((us / i.prompts.medians.off.processCpuUsPerPrompt) * 100).toFixed(2)} % of a prompt's process CPU with telemetry: false above`;
    console.log(
      `Replay of one prompt of (o)'s workload (${i.replayO.events} events, ${i.replayO.chunkGaps} chunk gaps), lifeline's recording with the SDK: median ${us.toFixed(1)} µs per prompt (runs ${i.replayO.runs.map((ns) => (ns / 1e3).toFixed(1)).join(", ")})${share}.`,
    );
    const noGaps = median(i.replayO.noGapsRuns) / 1e3;
    console.log(
      `The same prompt without its chunk gaps: ${noGaps.toFixed(1)} µs (runs ${i.replayO.noGapsRuns.map((ns) => (ns / 1e3).toFixed(1)).join(", ")}); so the ${i.replayO.chunkGaps} records of gen_ai.client.operation.time_per_output_chunk cost ${(us - noGaps).toFixed(1)} µs, ${(((us - noGaps) / i.replayO.chunkGaps) * 1e3).toFixed(0)} ns each.`,
    );
  }
  if (i.idleMsPerS.off.length > 0) {
    const fmt = (v) => v.map((x) => x.toFixed(2)).join(", ");
    console.log(
      `Idle host, main-thread CPU per second (ms): off ${fmt(i.idleMsPerS.off)}; sdk ${fmt(i.idleMsPerS.sdk)} (loop-delay sampler and a collection each second).`,
    );
  }
  if (i.loopRuns.off.length > 0) {
    console.log(
      table(
        [`event-loop p99, ${i.config.STREAM_SESSIONS} streaming sessions (ms)`, "off", "sdk", "sdk / off"],
        [["median of runs", ms2(i.loopP99Ms.off), ms2(i.loopP99Ms.sdk), ratio(i.loopP99Ms.sdk / i.loopP99Ms.off)]],
      ),
    );
    console.log(`runs (ms): off ${i.loopRuns.off.map(ms2).join(", ")}; sdk ${i.loopRuns.sdk.map(ms2).join(", ")}`);
  }
}

function printF(f) {
  const base = f.runs[0];
  console.log(
    table(
      [
        "sessions",
        "main ELU",
        "loop p99 ms",
        "p99 × smallest",
        "loop max ms",
        "prompts/s",
        "tokens/s",
        "TTFT p50 / p99 ms",
        "mock received (sent − aborted ≤ it ≤ sent)",
      ],
      f.runs.map((r) => [
        r.sessions,
        `${(r.mainElu * 100).toFixed(0)} %`,
        ms2(r.loopDelayMs.p99),
        ratio(r.loopDelayMs.p99 / base.loopDelayMs.p99),
        ms2(r.loopDelayMs.max),
        r.promptsPerS.toFixed(0),
        r.outputTokensPerS.toFixed(0),
        `${r.ttftP50?.toFixed(0) ?? "—"} / ${r.ttftP99?.toFixed(0) ?? "—"}`,
        `${r.mockReceived} of ${r.requestsSent}: ${r.mockReceived <= r.requestsSent && r.mockReceived >= r.requestsSent - r.requestsAborted ? "yes" : "NO"} (${r.requestsAborted} aborted)`,
      ]),
    ),
  );
}

/** (m): P1, the largest stall of the host's loop, kickoff included, at every N. */
const M_STALL_MAX_MS = 20;

/** (o): P3, process CPU per prompt of lifeline ÷ the in-process loop. */
const O_CPU_RATIO_MAX = 0.8;

function printO(o) {
  const row = (name, r) => [
    name,
    r.reps,
    r.processCpuUsPerPrompt.toFixed(0),
    `${r.userUsPerPrompt.toFixed(0)} / ${r.systemUsPerPrompt.toFixed(0)}`,
    r.mainCpuUsPerPrompt === null ? "—" : r.mainCpuUsPerPrompt.toFixed(0),
    r.workerCpuUsPerPrompt === null ? "—" : r.workerCpuUsPerPrompt.toFixed(0),
    r.processCpuRuns.map((x) => x.toFixed(0)).join(", "),
    (r.wallMs / 1e3).toFixed(1),
    (r.events / o.config.N).toFixed(1),
    r.rssMb.toFixed(0),
    r.failed,
  ];
  console.log(
    table(
      [
        `${o.config.N} prompts at once`,
        "runs",
        "process CPU µs/prompt",
        "user / sys",
        "main thread µs/prompt",
        "worker µs/prompt",
        "runs µs/prompt",
        "wall s",
        "events/prompt",
        "RSS end MB",
        "failed",
      ],
      [row("in-process (pi-agent-core Agent)", o.sides.baseline), row("lifeline (SessionHost)", o.sides.lifeline)],
    ),
  );
  console.log(
    `lifeline ÷ in-process, process CPU per prompt: ${ratio(o.ratio)} (loadavg at the end ${o.loadavg.map((x) => x.toFixed(2)).join(" ")})`,
  );
  if (o.profile !== undefined) {
    const threads = o.profile.flatMap((p) => p.threads);
    const names = [...new Set(threads.flatMap((t) => Object.keys(t.usPerPrompt)))];
    const busy = (t) => Object.entries(t.usPerPrompt).reduce((a, [k, v]) => (k === "idle / program" ? a : a + v), 0);
    const sum = (row) => row.slice(1).reduce((a, v) => a + Number(v), 0);
    const rows = names
      .map((name) => [name, ...threads.map((t) => (t.usPerPrompt[name] ?? 0).toFixed(0))])
      .sort((x, y) => sum(y) - sum(x));
    rows.push(["total busy (without idle / program)", ...threads.map((t) => busy(t).toFixed(0))]);
    const under = o.profile.map((p) => `${p.side} ${p.processCpuUsPerPrompt.toFixed(0)}`).join(", ");
    console.log(
      `\nSelf time per prompt over the batch, by component (µs; one profiled run a side, process CPU µs/prompt under the profiler: ${under}; profiles in ${o.profile[0]?.dir ?? "?"}/..):`,
    );
    console.log(table(["component", ...threads.map((t) => t.thread)], rows));
  }
  if (o.p4 !== undefined) {
    console.log(
      `\nP4 RSS at 5,000 sessions: in-process ${o.p4.baseline.rssMb.toFixed(0)} MB, lifeline ${o.p4.lifeline.rssMb.toFixed(0)} MB (failed ${o.p4.baseline.failed} / ${o.p4.lifeline.failed})`,
    );
  }
}

function printR(r) {
  const mb = (x) => x.toFixed(0);
  const row = (label, side, phase) => {
    const p = side[phase];
    return [
      label,
      mb(p.rssMb),
      `${mb(p.mainHeapUsedMb)} / ${mb(p.mainHeapTotalMb)}`,
      p.workerHeapTotalMb === 0 ? "—" : `${mb(p.workerHeapUsedMb)} / ${mb(p.workerHeapTotalMb)}`,
      `${mb(p.mainExternalMb + p.workerExternalMb)} (${mb(p.mainArrayBuffersMb + p.workerArrayBuffersMb)})`,
      mb(p.restMb),
    ];
  };
  console.log(
    table(
      [
        `${r.config.N} sessions, MB (median of ${r.config.REPS} a side)`,
        "RSS",
        "main heap used / total",
        "worker heap used / total",
        "external (ArrayBuffers)",
        "rest (native)",
      ],
      [
        row("in-process, at the batch's end", r.sides.baseline, "end"),
        row("lifeline, at the batch's end", r.sides.lifeline, "end"),
        row("in-process, after a full GC", r.sides.baseline, "afterGc"),
        row("lifeline, after a full GC of every isolate", r.sides.lifeline, "afterGc"),
      ],
    ),
  );
  console.log(
    `RSS runs: in-process ${r.sides.baseline.rssRuns.map(mb).join(", ")}; lifeline ${r.sides.lifeline.rssRuns.map(mb).join(", ")} MB; failed ${r.sides.baseline.failed} / ${r.sides.lifeline.failed}`,
  );
  console.log(
    `lifeline ÷ in-process, RSS at the batch's end: ${ratio(r.ratio)} (loadavg at the end ${r.loadavg.map((x) => x.toFixed(2)).join(" ")})`,
  );
}

/** (s): targets of what an embedding app pays. */
const S_IMPORT_RATIO_MAX = 4;
const S_BUNDLE_KB_MAX = 1000;
const S_BLOCK_MS_MAX = 20;
const S_START_RATIO_MAX = 1.1;

function printS(s) {
  const { import: imp, bundle, start } = s;
  const kb = (bytes) => `${(bytes / 1024).toFixed(0)} KB`;
  const rows = [
    ['import("piscina") (baseline)', ms2(imp.piscina.wallMs), ms2(imp.piscina.cpuMs), "1.00"],
    [
      'import("lifeline")',
      ms2(imp.lifeline.wallMs),
      ms2(imp.lifeline.cpuMs),
      `${ratio(imp.lifeline.wallMs / imp.piscina.wallMs)} wall, ${ratio(imp.lifeline.cpuMs / imp.piscina.cpuMs)} CPU`,
    ],
  ];
  console.log(table([`fresh process, median of ${s.config.RUNS}`, "wall ms", "CPU ms", "× piscina"], rows));
  console.log(
    `packages import("lifeline") loads: ${imp.packages.join(", ")}; listed ones among them: ${imp.forbidden.join(", ") || "none"}`,
  );
  console.log(
    `minimal embedder's bundle (esbuild --bundle --platform=node --format=esm --minify): ${kb(bundle.bytes)}; largest parts: ${bundle.largest.map(([name, bytes]) => `${name} ${kb(bytes)}`).join(", ")}; listed packages inside: ${bundle.forbidden.join(", ") || "none"}`,
  );
  const startRows = [
    [
      "this build",
      ms2(start.head.firstReplyMs),
      `${ms2(start.head.longestBlockMs)} (worst run ${ms2(start.headWorstBlockMs)})`,
    ],
  ];
  if (start.base !== null) {
    startRows.push(["base commit", ms2(start.base.firstReplyMs), ms2(start.base.longestBlockMs)]);
  }
  console.log(
    table(
      [`createSessionHost() → first reply, median of ${s.config.START_RUNS}`, "ms", "longest main-thread block ms"],
      startRows,
    ),
  );
  if (start.base === null) console.log("Base commit not measured: set BENCH_BASE_DIR to a built checkout of it.");
}

function printM(m) {
  const over = (p) => p.over.join(" / ");
  console.log(
    table(
      [
        "sessions",
        "workers",
        "max stall ms",
        "own ms",
        "kickoff max",
        "after max",
        "> 10/20/50/100 ms, kickoff",
        "> 10/20/50/100 ms, after",
        "p99 kickoff / after",
        "GC max ms",
        "prompt() loop ms",
        "kickoff s",
        "after s (settled)",
        "heap KB/session",
        "loadavg",
      ],
      m.runs.map((r) => [
        r.sessions,
        r.workers,
        ms2(r.maxStallMs),
        ms2(r.maxOwnStallMs),
        ms2(r.gaps.kickoff.max),
        ms2(r.gaps.after.max),
        over(r.gaps.kickoff),
        over(r.gaps.after),
        `${ms2(r.delay.kickoff.p99)} / ${ms2(r.delay.after.p99)}`,
        ms2(Math.max(r.gc.kickoff.maxMs, r.gc.after.maxMs)),
        ms2(r.promptLoopMs),
        (r.kickoffMs / 1e3).toFixed(1),
        `${(r.afterMs / 1e3).toFixed(1)} (${r.settledInTime}${r.timedOut ? ", cut" : ""})`,
        (r.heapBytesPerSession / 1024).toFixed(2),
        `${r.loadavgBefore.toFixed(1)} → ${r.loadavgAfter.toFixed(1)}`,
      ]),
    ),
  );
  for (const r of m.runs) {
    const top = r.topStalls
      .slice(0, 4)
      .map((t) => `${ms2(t.gapMs)} ms (ran ${ms2(t.ranMs)}) at ${(t.atMs / 1e3).toFixed(2)} s, ${t.phase}`)
      .join("; ");
    const exits = Object.entries(r.workerExits ?? {});
    console.log(
      `${r.sessions}: largest stalls ${top || "none over 10 ms"}; GC max by kind ${JSON.stringify(r.gc.maxByKind)}` +
        (exits.length === 0
          ? ""
          : `; sessions restored after a worker died: ${JSON.stringify(r.workerExits)}, of them while measured (before the cut's aborts): ${JSON.stringify(r.exitsInWindow ?? {})}${r.firstExitS === undefined ? "" : `, the first at ${r.firstExitS.toFixed(1)} s`}; workers the watchdog terminated: ${r.watchdogTerminations}`),
    );
  }
  for (const r of m.runs) {
    const own = (r.topOwnStalls ?? [])
      .slice(0, 4)
      .map(
        (t) =>
          `ran ${ms2(t.ranMs)} of ${ms2(t.gapMs)} ms at ${(t.atMs / 1e3).toFixed(2)} s, ${t.phase}` +
          (t.gc.length === 0 ? "" : ` (GC ${t.gc.map(([kind, d]) => `${kind} ${ms2(d)}`).join(", ")})`),
      )
      .join("; ");
    console.log(`${r.sessions}: largest own stalls ${own || "none over 5 ms"}`);
  }
  for (const r of m.runs) {
    if (r.cut === undefined) continue;
    const c = r.cut;
    console.log(
      `${r.sessions}: the cut (not part of P1): abort() on the ${c.running} prompts still running, in one loop: max stall ${ms2(c.maxStallMs)} ms (own ${ms2(c.maxOwnStallMs)}), > 10/20/50/100 ms: ${c.over.join(" / ")}; every abort() resolved in ${(c.abortedMs / 1e3).toFixed(1)} s, every prompt settled in ${(c.settledMs / 1e3).toFixed(1)} s`,
    );
  }
  console.log(
    '"own ms": the largest main-thread run time within one stall (schedstat); the rest of a stall was waiting for a CPU.',
  );
}

/** (j): targets of the generator's overhead. */
const J_BOOKKEEPING_MAX = 0.2;
const J_RATE_MIN = 500;

function printJ(j) {
  const s = j.share;
  console.log(
    table(
      [`main thread, ${s.sessions} sessions, ${s.windowS} s window`, "ms", "share of busy", "share of wall"],
      [
        ["bookkeeping (dist/main/load/, sampled)", s.bookkeepingMs.toFixed(1), pct(s.shareOfBusy), pct(s.shareOfWall)],
        ["bookkeeping (instrumented: metrics + timeline calls)", s.instrumentedMs.toFixed(1), "", ""],
        ["everything else busy (sessions, retry controller, messages)", s.otherBusyMs.toFixed(1), "", ""],
        ["garbage collection", s.gcMs.toFixed(1), "", ""],
        ["idle", s.idleMs.toFixed(1), "", ""],
      ],
    ),
  );
  console.log(
    `ELU ${pct(s.mainElu)} (active ${s.eluActiveMs.toFixed(0)} ms); ${s.promptsPerS.toFixed(0)} prompts/s, up to ${s.inFlightPromptsMax} in flight; ` +
      `top bookkeeping functions: ${s.topFunctions.map(([name, ms]) => `${name} ${ms.toFixed(1)} ms`).join(", ") || "none sampled"}`,
  );
  console.log(
    table(
      [
        "offered rate /s",
        "started",
        "dropped",
        "lag p50 ms",
        "lag p99 ms",
        "lag max ms",
        "completed /s",
        "most in flight",
        "main ELU",
        "sustained",
      ],
      j.rates.map((r) => [
        r.rate,
        `${r.started} of ${r.offered}`,
        r.dropped,
        ms2(r.lagP50Ms),
        ms2(r.lagP99Ms),
        ms2(r.lagMaxMs),
        r.completedPerS.toFixed(0),
        r.maxInFlight,
        pct(r.mainElu),
        r.sustained ? "yes" : "no",
      ]),
    ),
  );
}

const pct = (x) => `${(x * 100).toFixed(1)} %`;

/** (n): the share of the main thread busy workers may take (MAIN_BUDGET in host-options.ts). */
const N_MAIN_BUDGET = 0.5;

/**
 * (n)'s derived figures: from the streamed workload (the real-provider shape), the main thread's
 * CPU per unit of worker CPU (the worst of the thread counts), what one worker on a whole core
 * sustains, and so how many busy workers the main thread serves within its budget.
 */
function deriveN(n) {
  const stream = n.aggregates.filter((r) => r.workload === "stream");
  const one = stream.find((r) => r.threads === 1);
  const share = Math.max(...stream.map((r) => r.mainCpuMs / r.workerCpuMs));
  return {
    one,
    share,
    promptsPerWorkerS: 1e6 / one.workerCpuUsPerPrompt,
    messagesPerWorkerS: 1e6 / one.workerCpuUsPerDelivery,
    mainUsPerMessage: one.mainCpuUsPerDelivery,
    saturatesAt: 1 / share,
    withinBudget: Math.floor(N_MAIN_BUDGET / share),
  };
}

async function printN(n) {
  const rows = [];
  for (const r of n.aggregates) {
    const base = n.aggregates.find((x) => x.workload === r.workload && x.threads === 1);
    rows.push([
      `${r.workload}, threads ${r.threads}`,
      `${(r.wallMs / 1000).toFixed(2)} (${r.wallMsRuns.map((ms) => (ms / 1000).toFixed(1)).join(", ")})`,
      r.promptsPerS.toFixed(0),
      ratio(r.promptsPerS / base.promptsPerS),
      r.mainCpuUsPerPrompt.toFixed(0),
      `${r.mainCpuUsPerDelivery.toFixed(0)} / ${r.mainCpuUsPerEvent.toFixed(1)}`,
      r.workerCpuUsPerPrompt.toFixed(0),
      `${r.workerCpuUsPerDelivery.toFixed(0)} / ${r.workerCpuUsPerEvent.toFixed(1)}`,
      `${r.processCpuUsPerPrompt.toFixed(0)} (${ratio(r.processCpuUsPerPrompt / base.processCpuUsPerPrompt)})`,
      r.processCores.toFixed(2),
      `${(r.events / n.config.N).toFixed(1)} / ${(r.deliveries / n.config.N).toFixed(2)}`,
      `${ms2(r.loopP99Ms)} / ${ms2(r.loopMaxMs)}`,
      `${pct(r.mainElu)} (${r.mainWaitMsPerS.toFixed(0)})`,
      `${r.rssPeakMb.toFixed(0)} (${ratio(r.rssPeakMb / base.rssPeakMb)})`,
      r.failed,
    ]);
  }
  console.log(
    table(
      [
        `${n.config.N} prompts at once`,
        "wall s (runs)",
        "prompts/s",
        "× threads 1",
        "main CPU µs/prompt",
        "main µs/msg / µs/event",
        "worker CPU µs/prompt",
        "worker µs/msg / µs/event",
        "process CPU µs/prompt (× t1)",
        "process cores",
        "events / msgs per prompt",
        "loop p99 / max ms",
        "main ELU (waiting ms/s)",
        "RSS peak MB (× t1)",
        "failed",
      ],
      rows,
    ),
  );
  for (const r of n.runs.filter((x) => x.failed > 0)) {
    console.log(
      `Run ${r.rep}, ${r.workload}, threads ${r.threads}: ${r.failed} prompt(s) failed, ending with ${r.failedWith.join(" | ")}`,
    );
  }
  const idle = n.idle;
  console.log(
    `A worker's fixed cost (threads 4, sessions opened one by one): RSS ${idle.rssPerWorkerMb.toFixed(1)} MB per idle worker ` +
      `(the first: ${idle.rssFirstWorkerMb.toFixed(1)} MB with the host's own start), startup ${idle.startupMs.toFixed(0)} ms ` +
      `(an open that starts a worker ${idle.openMs
        .slice(1, 4)
        .map((ms) => ms.toFixed(0))
        .join(", ")} ms, one that joins a running worker ${idle.joinOpenMs.toFixed(0)} ms).`,
  );
  const d = deriveN(n);
  console.log(
    `Derived (stream): one worker on a whole core sustains ${d.promptsPerWorkerS.toFixed(0)} prompts/s and ${d.messagesPerWorkerS.toFixed(0)} messages/s; ` +
      `the main thread spends ${d.mainUsPerMessage.toFixed(0)} µs per message, ${pct(d.share)} of a core per busy worker (worst of the thread counts), ` +
      `so it saturates at ${d.saturatesAt.toFixed(1)} busy workers and stays within ${N_MAIN_BUDGET * 100} % with ${d.withinBudget}.`,
  );
  const { defaultThreads } = await import("../dist/main/host/host-options.js");
  console.log(
    table(
      [
        "cores (on paper)",
        "default threads",
        "prompts/s (busy workers)",
        "messages/s",
        "main-thread share",
        "cores − 1 uncapped: main share",
      ],
      [2, 4, 16, 64].map((cores) => {
        const w = defaultThreads(cores);
        return [
          cores,
          w,
          (w * d.promptsPerWorkerS).toFixed(0),
          (w * d.messagesPerWorkerS).toFixed(0),
          pct(w * d.share),
          pct((cores - 1) * d.share),
        ];
      }),
    ),
  );
}

function printG(g) {
  const row = (label, q, base, rtts) => [
    label,
    ms2(q.p50),
    ms2(q.p99),
    base === undefined ? "—" : `${ms2(q.p50 - base.p50)} / ${ms2(q.p99 - base.p99)}`,
    rtts,
  ];
  console.log(
    table(
      ["decisions per request attempt", "p50 ms", "p99 ms", "added p50 / p99 ms", "Redis round trips"],
      [
        row("PING on loopback (floor of a Redis decision)", g.pingMs, undefined, "1"),
        row("first attempt, host alone (in memory; baseline)", g.local.first, undefined, "0"),
        row(
          "first attempt, fleet (deposit, gate + permit, release)",
          g.fleet.first,
          g.local.first,
          g.roundTripsPerAttempt.first.toFixed(2),
        ),
        row("retry, host alone (in memory; baseline)", g.local.retry, undefined, "0"),
        row(
          "retry, fleet (withdrawal, gate + permit, release)",
          g.fleet.retry,
          g.local.retry,
          g.roundTripsPerAttempt.retry.toFixed(2),
        ),
        row("a gate closed by host A, until host B's mirror knows", g.gateLearnMs, undefined, "1 + pub/sub"),
      ],
    ),
  );
  console.log(
    `Redis ${g.config.redis}, appendfsync ${g.config.appendfsync}, ${g.config.SAMPLES} samples per row; Redis CPU ${g.redisUsecPerScript.toFixed(1)} µs per script call.`,
  );
}

/** Ratios of (t) span 1e-3 … 10: two significant digits. */
const ratio2 = (x) => (x >= 10 ? x.toFixed(1) : x.toPrecision(2));

function printT(t) {
  const { host, rpc } = t.sides;
  const mb = (bytes) => (bytes / 1e6).toFixed(2);
  const row = (label, read, format) => [label, format(read(host)), format(read(rpc)), ratio2(read(host) / read(rpc))];
  const ms = (x) => x.toFixed(1);
  const pct = (x) => `${(x * 100).toFixed(1)} %`;
  const c = t.config;
  console.log(
    `Per session and per prompt, so the sides compare although host has ${host.sessions} sessions in ${host.processes} process and rpc ${rpc.sessions} in ${rpc.processes} processes. ` +
      `Every session: open, 1 warm-up prompt, then ${c.PROMPTS} measured prompts in a row; replies of ${c.TOKENS} tokens ${c.TOKEN_DELAY_MS} ms apart from one mock server (its own process). ` +
      `Prompts in flight: host ${host.lanes} sessions at a time, rpc all ${rpc.lanes}. CPU: utime + stime of the children (/proc/<pid>/stat, ${c.CLK_TCK} ticks/s), summed. ` +
      "An rpc process serves one session, so its measured prompts run on code warmed by one prompt only: that is part of what a process per session costs.",
  );
  console.log(
    table(
      [
        "measurement",
        `host: 1 process, ${host.sessions} sessions`,
        `rpc: ${rpc.processes} processes, 1 session each`,
        "host ÷ rpc",
      ],
      [
        row("RSS per session after opening, MB", (s) => s.rssOpenBytesPerSession, mb),
        row("RSS per session after the prompts, MB", (s) => s.rssEndBytesPerSession, mb),
        row(`process CPU per prompt, ${c.PROMPTS} measured a session, ms`, (s) => s.measured.cpuUsPerPrompt / 1000, ms),
        row("process CPU per prompt, the warm-up prompt, ms", (s) => s.warm.cpuUsPerPrompt / 1000, ms),
        row("process CPU to start and open, per session, ms", (s) => s.openCpuMsPerSession, ms),
        row("prompt → first event (client), p50 ms", (s) => s.measured.firstEventMs.p50, ms),
        row("prompt → first event (client), p99 ms", (s) => s.measured.firstEventMs.p99, ms),
        row("prompt → its response (client), p50 ms", (s) => s.measured.responseMs.p50, ms),
        row("prompt → its response (client), p99 ms", (s) => s.measured.responseMs.p99, ms),
        row("main thread running, share of the measured wall time", (s) => s.measured.mainRunShare, pct),
        row("main thread runnable but waiting for a CPU, share", (s) => s.measured.mainWaitShare, pct),
      ],
    ),
  );
  console.log(
    "Main-thread shares are averaged over the side's processes (/proc/<pid>/schedstat). On a machine other work crowds, the scheduler shares the CPUs by thread: 50 processes get more of them than one, which favours rpc's latency.",
  );
  console.log(
    `wall time to start and open: host ${ms(host.openMs / 1000)} s, rpc ${ms(rpc.openMs / 1000)} s; measured prompts: host ${host.measured.prompts} in ${ms(host.measured.wallMs / 1000)} s, rpc ${rpc.measured.prompts} in ${ms(rpc.measured.wallMs / 1000)} s; load average (1 min) rpc side ${rpc.loadavgBefore[0].toFixed(2)} → ${rpc.loadavgAfter[0].toFixed(2)}, host side ${host.loadavgBefore[0].toFixed(2)} → ${host.loadavgAfter[0].toFixed(2)}`,
  );
}

// ---------------------------------------------------------------- main

const cpu = cpus()[0]?.model ?? "unknown CPU";
console.log(
  `lifeline benchmarks${QUICK ? " (BENCH_QUICK=1: reduced counts)" : ""}\n` +
    `Node ${process.version}, ${platform()} ${release()}, ${availableParallelism()} vCPU (${cpu}), ${(totalmem() / 2 ** 30).toFixed(1)} GB RAM\n`,
);

const results = {};
const started = performance.now();
for (const section of SECTIONS) {
  if (only !== undefined && !only.includes(section.id)) continue;
  console.log(`## ${section.title}`);
  // Other processes on a 2-vCPU machine skew every figure; the 1-minute load average shows them.
  console.log(`load average before: ${loadavg()[0].toFixed(2)}`);
  const t0 = performance.now();
  try {
    results[section.id] = await runChild(section.file);
  } catch (error) {
    console.log(`FAILED: ${error instanceof Error ? error.message : String(error)}\n`);
    continue;
  }
  await {
    a: printA,
    b: printB,
    c: printC,
    d: printD,
    e: printE,
    f: printF,
    g: printG,
    h: printH,
    i: printI,
    j: printJ,
    k: printK,
    l: printL,
    m: printM,
    n: printN,
    o: printO,
    r: printR,
    s: printS,
    t: printT,
  }[section.id](results[section.id]);
  console.log(`(${((performance.now() - t0) / 1000).toFixed(1)} s; load average after: ${loadavg()[0].toFixed(2)})\n`);
}

// ---------------------------------------------------------------- summary

const summary = [];
const { a, b, c, d, e, f, g } = results;
if (a !== undefined) {
  const fast = a.runs[0];
  const stream = a.runs[2];
  summary.push([
    "(a) main CPU per delivered event, demo-fast, vs raw round trip",
    "— (reported)",
    `${us(fast.mainCpuNsPerEvent)} µs vs ${us(a.raw.rttMainCpuNsPerMessage)} µs = ${ratio(fast.mainCpuNsPerEvent / a.raw.rttMainCpuNsPerMessage)}×`,
    "info",
  ]);
  summary.push([
    `(a) main CPU per delivered event, demo-stream × ${a.config.STREAM_SESSIONS}, vs raw round trip`,
    "— (reported)",
    `${us(stream.mainCpuNsPerEvent)} µs vs ${us(a.raw.rttMainCpuNsPerMessage)} µs = ${ratio(stream.mainCpuNsPerEvent / a.raw.rttMainCpuNsPerMessage)}×`,
    "info",
  ]);
}
if (b !== undefined) {
  summary.push([
    "(b) abort → request cancelled, p99, idle",
    "≤ 5 ms",
    `${ms2(b.idle.closeMs.p99)} ms (p50 ${ms2(b.idle.closeMs.p50)}, n=${b.idle.closeMs.n})`,
    b.idle.closeMs.p99 <= 5 ? "PASS" : "FAIL",
  ]);
  summary.push([
    `(b) same, while ${b.busy.busySessions} other sessions stream on the worker`,
    "— (reported)",
    `${ms2(b.busy.closeMs.p99)} ms (p50 ${ms2(b.busy.closeMs.p50)}, n=${b.busy.closeMs.n})`,
    "info",
  ]);
}
if (c !== undefined) {
  for (const n of c.config.SIZES) {
    const l = findC(c, "lifeline", n);
    const i = findC(c, "inprocess", n);
    const r = l.p99 / i.p99;
    const isTarget = n === 1000;
    summary.push([
      `(c) event-loop delay p99, ${n} streaming sessions: lifeline / in-process`,
      isTarget ? "≤ 0.20" : "— (reported)",
      `${ms2(l.p99)} / ${ms2(i.p99)} ms = ${ratio(r)}`,
      isTarget ? (r <= 0.2 ? "PASS" : "FAIL") : "info",
    ]);
  }
  for (const n of c.config.HTTP_SIZES ?? []) {
    const l = findC(c, "lifeline-http", n);
    const i = findC(c, "inprocess-http", n);
    summary.push([
      `(c) same over real HTTP/SSE (supplementary), ${n} sessions`,
      "— (reported)",
      `${ms2(l.p99)} / ${ms2(i.p99)} ms = ${ratio(l.p99 / i.p99)}`,
      "info",
    ]);
  }
}
if (d !== undefined) {
  summary.push([
    `(d) main heap per idle session at ${d.sessions}`,
    "≤ 100 KB",
    `${(d.heapBytesPerSession / 1024).toFixed(2)} KB (${d.workers} worker, RSS ${d.rssAfterMb.toFixed(0)} MB)`,
    d.heapBytesPerSession <= 100 * 1024 ? "PASS" : "FAIL",
  ]);
  summary.push([
    `(d) P4 main heap per idle session at ${d.sessions}`,
    "≤ 8 KB",
    `${(d.heapBytesPerSession / 1024).toFixed(2)} KB`,
    d.heapBytesPerSession <= 8 * 1024 ? "PASS" : "FAIL",
  ]);
  summary.push([
    `(d) P4 main heap per session after one prompt (retry + 200 words) at ${d.sessions}`,
    "≤ 8 KB",
    `${(d.heapBytesPerPromptedSession / 1024).toFixed(2)} KB`,
    d.heapBytesPerPromptedSession <= 8 * 1024 ? "PASS" : "FAIL",
  ]);
}
if (e !== undefined) {
  const off = e.aggregates.find((x) => x.mode === "off");
  const on = e.aggregates.find((x) => x.mode === "on");
  const r = on.p99 / off.p99;
  summary.push([
    `(e) event-loop delay p99, ${on.sessions} sessions prompting: files on / off`,
    "≤ 1.20",
    `${ms2(on.p99)} / ${ms2(off.p99)} ms = ${ratio(r)}`,
    r <= 1.2 ? "PASS" : "FAIL",
  ]);
}
if (f !== undefined) {
  const limited = f.runs.find((r) => r.mainElu >= F_HOST_LIMIT_ELU);
  const free = f.runs.filter((r) => r.mainElu < F_HOST_LIMIT_ELU);
  const best = free.reduce((a, r) => (a === undefined || r.promptsPerS > a.promptsPerS ? r : a), undefined);
  summary.push([
    `(f) lifeline load: first size where the host's loop is the limit (main ELU ≥ ${F_HOST_LIMIT_ELU * 100} %)`,
    "— (reported)",
    limited === undefined
      ? `not reached up to ${f.runs.at(-1).sessions} sessions (main ELU ${(f.runs.at(-1).mainElu * 100).toFixed(0)} %); most prompts/s at ${best?.sessions}`
      : `${limited.sessions} sessions (ELU ${(limited.mainElu * 100).toFixed(0)} %, loop p99 ${ms2(limited.loopDelayMs.p99)} ms)`,
    "info",
  ]);
}
if (g !== undefined) {
  const added = Math.max(g.addedMs.first.p99, g.addedMs.retry.p99);
  summary.push([
    "(g) fleet mode: added latency per request attempt, p99 (first attempt / retry)",
    "≤ 2 ms",
    `${ms2(g.addedMs.first.p99)} / ${ms2(g.addedMs.retry.p99)} ms (p50 ${ms2(g.addedMs.first.p50)} / ${ms2(g.addedMs.retry.p50)})`,
    added <= 2 ? "PASS" : "FAIL",
  ]);
  summary.push([
    "(g) fleet mode: Redis round trips per request attempt (first attempt / retry)",
    "constant",
    `${g.roundTripsPerAttempt.first.toFixed(2)} / ${g.roundTripsPerAttempt.retry.toFixed(2)}`,
    "info",
  ]);
}
const i = results.i;
if (i !== undefined) {
  const p = i.prompts;
  if (p !== undefined) {
    const row = (mode, max, what) => {
      const x = p.ratio[mode];
      summary.push([
        `(i) telemetry: process CPU per prompt, ${what} ÷ telemetry: false, ${p.config.sessions} prompts ((o)'s workload)`,
        `≤ ${max.toFixed(2)}`,
        `${p.medians[mode].processCpuUsPerPrompt.toFixed(0)} ÷ ${p.medians.off.processCpuUsPerPrompt.toFixed(0)} µs = ${x.toFixed(3)} (rounds ${Math.min(...p.roundRatios[mode]).toFixed(2)}–${Math.max(...p.roundRatios[mode]).toFixed(2)})`,
        x <= max ? "PASS" : "FAIL",
      ]);
    };
    row("api", I_API_RATIO_MAX, "API installed, no SDK,");
    row("sdk", I_SDK_RATIO_MAX, "SDK recording every metric and span");
    if (i.replayO !== undefined && i.replayO.runs.length > 0) {
      // The low-noise view of the same cost: the recording alone, in process CPU, against off's prompt.
      const us = median(i.replayO.runs) / 1e3;
      const noGaps = median(i.replayO.noGapsRuns) / 1e3;
      const base = p.medians.off.processCpuUsPerPrompt;
      summary.push([
        "(i) telemetry: lifeline's recording with the SDK of one such prompt (replay) ÷ its process CPU with telemetry: false",
        "— (reported)",
        `${us.toFixed(0)} µs = ${((us / base) * 100).toFixed(2)} % (without the ${i.replayO.chunkGaps} per-chunk records ${noGaps.toFixed(0)} µs = ${((noGaps / base) * 100).toFixed(2)} %)`,
        "info",
      ]);
    }
  }
  for (const [name, w] of Object.entries(i.cpu)) {
    const added = (w.usPerRequest.sdk - w.usPerRequest.off) / w.usPerRequest.off;
    const noSdk = (w.usPerRequest.api - w.usPerRequest.off) / w.usPerRequest.off;
    summary.push([
      `(i) telemetry: main-thread CPU added per model request, SDK recording, ${name} replies (supplementary)`,
      "— (reported)",
      `${(added * 100).toFixed(1)} %`,
      "info",
    ]);
    summary.push([
      `(i) telemetry: added with the API but no provider, ${name} replies`,
      "0 (noise)",
      `${(noSdk * 100).toFixed(1)} %`,
      "info",
    ]);
  }
  if (i.loopRuns.off.length > 0) {
    const loopRatio = i.loopP99Ms.sdk / i.loopP99Ms.off;
    summary.push([
      `(i) telemetry: event-loop p99, ${i.config.STREAM_SESSIONS} streaming sessions, SDK / off`,
      "≤ 1.10",
      ratio(loopRatio),
      loopRatio <= 1.1 ? "PASS" : "FAIL",
    ]);
  }
}
const j = results.j;
if (j !== undefined) {
  summary.push([
    `(j) lifeline load: main-thread time on its own bookkeeping, ${j.share.sessions} sessions (of busy time)`,
    `≤ ${J_BOOKKEEPING_MAX * 100} %`,
    `${pct(j.share.shareOfBusy)} (${pct(j.share.shareOfWall)} of wall time)`,
    j.share.shareOfBusy <= J_BOOKKEEPING_MAX ? "PASS" : "FAIL",
  ]);
  const best = j.rates
    .filter((r) => r.sustained)
    .reduce((a, r) => (a === undefined || r.rate > a.rate ? r : a), undefined);
  summary.push([
    `(j) lifeline load: highest open-model rate started on schedule (lag p99 ≤ ${j.config.LAG_LIMIT_MS} ms)`,
    `≥ ${J_RATE_MIN}/s`,
    best === undefined ? `none of ${j.config.RATES.join(", ")}/s` : `${best.rate}/s (lag p99 ${ms2(best.lagP99Ms)} ms)`,
    best !== undefined && best.rate >= J_RATE_MIN ? "PASS" : "FAIL",
  ]);
}
const n = results.n;
if (n !== undefined) {
  const d = deriveN(n);
  const { defaultThreads } = await import("../dist/main/host/host-options.js");
  const cap = defaultThreads(1024);
  for (const r of n.aggregates.filter((x) => x.threads > 1)) {
    const base = n.aggregates.find((x) => x.workload === r.workload && x.threads === 1);
    summary.push([
      `(n) threads ${r.threads} ÷ 1 on this machine, ${r.workload}: prompts/s (loop max ms)`,
      "— (reported)",
      `${ratio(r.promptsPerS / base.promptsPerS)} (${ms2(r.loopMaxMs)} vs ${ms2(base.loopMaxMs)})`,
      "info",
    ]);
  }
  summary.push([
    `(n) default threads cap ${cap}: main share with that many busy workers`,
    `≤ ${N_MAIN_BUDGET * 100} %`,
    `${pct(cap * d.share)} (${pct(d.share)} per busy worker; ${d.withinBudget} fit)`,
    cap * d.share <= N_MAIN_BUDGET ? "PASS" : "FAIL",
  ]);
  summary.push([
    "(n) fixed cost of one idle worker: RSS, startup",
    "— (reported)",
    `${n.idle.rssPerWorkerMb.toFixed(1)} MB, ${n.idle.startupMs.toFixed(0)} ms`,
    "info",
  ]);
}
const m = results.m;
if (m !== undefined) {
  for (const r of m.runs) {
    summary.push([
      `(m) P1: max stall of the host's loop, ${r.sessions} prompts started at once (kickoff / after)`,
      `≤ ${M_STALL_MAX_MS} ms`,
      `${ms2(r.maxStallMs)} ms (${ms2(r.gaps.kickoff.max)} / ${ms2(r.gaps.after.max)}; own ${ms2(r.maxOwnStallMs)}; loadavg ${r.loadavgBefore.toFixed(1)})`,
      r.maxStallMs <= M_STALL_MAX_MS ? "PASS" : "FAIL",
    ]);
  }
  const last = m.runs.at(-1);
  summary.push([
    `(m) main heap per session before prompting, ${last.sessions} sessions (P4 wants ≤ 8 KB)`,
    "— (reported)",
    `${(last.heapBytesPerSession / 1024).toFixed(2)} KB`,
    "info",
  ]);
}
const l = results.l;
if (l !== undefined) {
  summary.push([
    `(l) abort() → prompt settled, p99, while ${l.busy.busySessions} sessions stream on the worker`,
    `≤ ${L_BUSY_P99_MS} ms`,
    `${ms2(l.busy.settleMs.p99)} ms (p50 ${ms2(l.busy.settleMs.p50)}, max ${ms2(l.busy.settleMs.max)}, n=${l.busy.settleMs.n}; ${ratio(l.busy.settleMs.p99 / l.idle.settleMs.p99)}× idle)`,
    l.busy.settleMs.p99 <= L_BUSY_P99_MS ? "PASS" : "FAIL",
  ]);
  summary.push([
    "(l) abort() → prompt settled, p99, idle",
    `≤ ${L_IDLE_P99_MS} ms`,
    `${ms2(l.idle.settleMs.p99)} ms (p50 ${ms2(l.idle.settleMs.p50)}, n=${l.idle.settleMs.n})`,
    l.idle.settleMs.p99 <= L_IDLE_P99_MS ? "PASS" : "FAIL",
  ]);
}
const o = results.o;
if (o !== undefined) {
  summary.push([
    `(o) P3: process CPU per prompt, lifeline ÷ in-process, ${o.config.N} prompts (a 503, then ${o.config.TOKENS} tokens)`,
    `≤ ${O_CPU_RATIO_MAX}`,
    `${o.sides.lifeline.processCpuUsPerPrompt.toFixed(0)} ÷ ${o.sides.baseline.processCpuUsPerPrompt.toFixed(0)} µs = ${ratio(o.ratio)} (loadavg ${o.loadavg[0].toFixed(1)})`,
    o.ratio <= O_CPU_RATIO_MAX ? "PASS" : "FAIL",
  ]);
  summary.push([
    `(o) RSS at the end, ${o.config.N} sessions: lifeline vs in-process`,
    "— (reported)",
    `${o.sides.lifeline.rssMb.toFixed(0)} vs ${o.sides.baseline.rssMb.toFixed(0)} MB`,
    "info",
  ]);
  if (o.p4 !== undefined) {
    summary.push([
      "(o) P4: RSS at 5,000 sessions, lifeline vs in-process",
      "≤ 1.0×",
      `${o.p4.lifeline.rssMb.toFixed(0)} vs ${o.p4.baseline.rssMb.toFixed(0)} MB = ${ratio(o.p4.lifeline.rssMb / o.p4.baseline.rssMb)}×`,
      o.p4.lifeline.rssMb <= o.p4.baseline.rssMb ? "PASS" : "FAIL",
    ]);
  }
}
const r = results.r;
if (r !== undefined) {
  summary.push([
    `(r) P4: RSS at ${r.config.N} sessions (a 503, then ${r.config.TOKENS} tokens), lifeline vs in-process`,
    "≤ 1.0×",
    `${r.sides.lifeline.end.rssMb.toFixed(0)} vs ${r.sides.baseline.end.rssMb.toFixed(0)} MB = ${ratio(r.ratio)}× (loadavg ${r.loadavg[0].toFixed(1)})`,
    r.ratio <= 1 ? "PASS" : "FAIL",
  ]);
}
const s = results.s;
if (s !== undefined) {
  const importRatio = s.import.lifeline.wallMs / s.import.piscina.wallMs;
  summary.push([
    '(s) import("lifeline") vs import("piscina"), fresh processes, median wall',
    `≤ ${S_IMPORT_RATIO_MAX}×, none listed loaded`,
    `${ratio(importRatio)}× (${ms2(s.import.lifeline.wallMs)} vs ${ms2(s.import.piscina.wallMs)} ms); listed loaded: ${s.import.forbidden.length}`,
    importRatio <= S_IMPORT_RATIO_MAX && s.import.forbidden.length === 0 ? "PASS" : "FAIL",
  ]);
  summary.push([
    "(s) minimal embedder's bundle, minified",
    `≤ ${S_BUNDLE_KB_MAX} KB, none listed inside`,
    `${(s.bundle.bytes / 1024).toFixed(0)} KB; listed inside: ${s.bundle.forbidden.length}`,
    s.bundle.bytes <= S_BUNDLE_KB_MAX * 1024 && s.bundle.forbidden.length === 0 ? "PASS" : "FAIL",
  ]);
  summary.push([
    "(s) longest main-thread block, host start → first reply (median run)",
    `≤ ${S_BLOCK_MS_MAX} ms`,
    `${ms2(s.start.head.longestBlockMs)} ms`,
    s.start.head.longestBlockMs <= S_BLOCK_MS_MAX ? "PASS" : "FAIL",
  ]);
  if (s.start.base !== null) {
    const startRatio = s.start.head.firstReplyMs / s.start.base.firstReplyMs;
    summary.push([
      "(s) host start → first reply vs the base commit",
      `≤ ${S_START_RATIO_MAX}×`,
      `${ratio(startRatio)}× (${ms2(s.start.head.firstReplyMs)} vs ${ms2(s.start.base.firstReplyMs)} ms)`,
      startRatio <= S_START_RATIO_MAX ? "PASS" : "FAIL",
    ]);
  }
}
const t = results.t;
if (t !== undefined) {
  const { host, rpc } = t.sides;
  const mb = (bytes) => `${(bytes / 1e6).toFixed(2)} MB`;
  const ms = (x) => `${x.toFixed(1)} ms`;
  for (const [label, h, r, format] of [
    ["RSS per session after the prompts", host.rssEndBytesPerSession, rpc.rssEndBytesPerSession, mb],
    ["process CPU per measured prompt", host.measured.cpuUsPerPrompt / 1000, rpc.measured.cpuUsPerPrompt / 1000, ms],
    ["prompt → first event, p50", host.measured.firstEventMs.p50, rpc.measured.firstEventMs.p50, ms],
    ["prompt → first event, p99", host.measured.firstEventMs.p99, rpc.measured.firstEventMs.p99, ms],
  ]) {
    summary.push([
      `(t) ${label}: --mode host (${host.sessions} sessions) ÷ --mode rpc (${rpc.processes} processes)`,
      "— (reported)",
      `${format(h)} ÷ ${format(r)} = ${ratio2(h / r)}`,
      "info",
    ]);
  }
}
console.log("## Summary");
console.log(table(["target", "target", "actual", "result"], summary));
console.log(`\nTotal ${((performance.now() - started) / 1000).toFixed(1)} s.`);

if (process.env.BENCH_JSON) {
  writeFileSync(
    process.env.BENCH_JSON,
    `${JSON.stringify({ node: process.version, vcpu: availableParallelism(), cpu, quick: QUICK, results }, null, 2)}\n`,
  );
  console.log(`Raw results written to ${process.env.BENCH_JSON}.`);
}
