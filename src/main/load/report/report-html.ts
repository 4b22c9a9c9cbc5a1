/**
 * report.html: one self-contained page of charts for a person, from report.json's figures.
 *
 * The charting library is Chart.js (its UMD build, read from node_modules when the report is
 * written and inlined into the page), and the report's data is inlined as JSON, so the file opens
 * offline, from a CI artifact or an e-mail, with nothing to fetch. Each chart sits in a
 * `figure.chart[data-chart]` box; the page sets `document.body.dataset.rendered = "true"` once
 * every chart is drawn (the browser test waits for it).
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { LoadReport } from "./load-report.js";
import { VERDICTS_SCRIPT, VERDICTS_SECTIONS } from "./verdicts-html.js";

/** Ids of the page's charts, in page order (the browser test checks each one has pixels). */
export const CHART_IDS = [
  "e2e",
  "ttft",
  "ttfb",
  "itl",
  "gaps",
  "tps",
  "requests",
  "failures",
  "concurrency",
  "loop",
  "amplification",
] as const;

/** Ids of the sweep's charts (report.json `sweep`), drawn after the others when the run was a sweep. */
export const SWEEP_CHART_IDS = ["sweep-throughput", "sweep-latency"] as const;

let chartSource: Promise<string> | undefined;

/** Chart.js's UMD bundle, read once per process (also for compare.html). */
export function chartJs(): Promise<string> {
  chartSource ??= (async () => {
    // `require.resolve` by that name: it is how knip (npm run check) sees chart.js is used.
    const require = createRequire(import.meta.url);
    const main = require.resolve("chart.js");
    const source = await readFile(join(dirname(main), "chart.umd.min.js"), "utf8");
    // Inside <script>, the text "</script" would end the element early.
    return source.replace(/<\/script/gi, "<\\/script");
  })();
  return chartSource;
}

/** The whole page for `report`. @throws when Chart.js cannot be read from node_modules. */
export async function renderHtmlReport(report: LoadReport): Promise<string> {
  const data = JSON.stringify(report).replace(/</g, "\\u003c");
  const title = `lifeline load: ${report.config.sessions} sessions, ${report.status}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>lifeline load report</h1><p id="subtitle"></p></header>
<section id="tiles" class="tiles"></section>
<section><h2>Thresholds</h2><table id="thresholds"></table></section>
<section><h2>Distributions</h2><table id="percentiles"></table></section>
${VERDICTS_SECTIONS}
<section class="charts">
${CHART_IDS.map((id) => `<figure class="chart" data-chart="${id}"><figcaption></figcaption><div class="box"><canvas></canvas></div></figure>`).join("\n")}
</section>
${
  report.sweep === null
    ? ""
    : `<section><h2>Sweep</h2><section class="charts">
${SWEEP_CHART_IDS.map((id) => `<figure class="chart" data-chart="${id}"><figcaption></figcaption><div class="box"><canvas></canvas></div></figure>`).join("\n")}
</section></section>`
}
<footer>Figures in report.json (schema <code>${escapeHtml(report.schema)}</code>); one line per request and prompt in records.jsonl.</footer>
<script type="application/json" id="report-data">${data}</script>
<script>${VERDICTS_SCRIPT}</script>
<script>${await chartJs()}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}

/** `text` safe inside HTML text and attribute values (also for compare.html). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `
:root { font-family: system-ui, sans-serif; color: #1d2433; background: #ffffff; }
body { margin: 24px auto; max-width: 1200px; padding: 0 16px; }
h1 { margin: 0 0 4px; font-size: 22px; } h2 { font-size: 16px; margin: 24px 0 8px; }
#subtitle { margin: 0; color: #5b6478; }
.tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 10px; margin-top: 16px; }
.tile { border: 1px solid #dde2ec; border-radius: 8px; padding: 10px 12px; }
.tile .v { font-size: 22px; font-weight: 600; } .tile .k { color: #5b6478; font-size: 12px; }
table { border-collapse: collapse; font-size: 13px; } td, th { padding: 4px 10px; border-bottom: 1px solid #e6e9f0; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.pass { color: #1a7f37; font-weight: 600; } .fail { color: #cf222e; font-weight: 600; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 16px; margin-top: 24px; }
.chart { margin: 0; border: 1px solid #dde2ec; border-radius: 8px; padding: 10px; }
.chart figcaption { font-size: 13px; font-weight: 600; margin-bottom: 6px; }
.chart .box { position: relative; height: 240px; }
footer { margin: 24px 0; color: #5b6478; font-size: 12px; }
`;

// Plain browser JavaScript (no build step), run after Chart.js.
const PAGE_SCRIPT = `
"use strict";
const report = JSON.parse(document.getElementById("report-data").textContent);
const COLORS = ["#2f6fde", "#e8590c", "#2b9348", "#c2255c", "#7048e8", "#f59f00", "#0c8599", "#5c940d", "#862e9c", "#d9480f"];
Chart.defaults.animation = false;
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.font.size = 11;

const fmt = (v, digits = 1) => v === null || v === undefined ? "–" : Number(v).toLocaleString("en-US", { maximumFractionDigits: digits });
const el = (tag, attrs = {}, text) => { const e = document.createElement(tag); Object.assign(e, attrs); if (text !== undefined) e.textContent = text; return e; };

const c = report.config, t = report.totals;
document.getElementById("subtitle").textContent =
  report.status + " · " + c.sessions + " sessions × " + (c.promptsPerSession ?? "∞") + " prompts" +
  (c.durationMs === null ? "" : " · duration " + fmt(c.durationMs / 1000) + " s") +
  " · " + (c.target === "mock" ? "built-in mock" : "model " + c.model) +
  (c.faults.length ? " · faults " + c.faults.map((f) => f.step + (f.retryAfterMs === undefined ? "" : "@" + f.retryAfterMs + "ms") + ":" + f.probability).join(",") + " (seed " + c.seed + ")" : "") +
  " · " + report.startedAt + " · ran " + fmt(report.durationMs / 1000) + " s" +
  (report.merged ? " · merged from " + report.merged.from.length + " reports" : "");

const tiles = [
  ["prompts succeeded", t.prompts.succeeded + " / " + t.prompts.sent],
  ["prompts failed", t.prompts.failed],
  ["prompts cancelled", t.prompts.cancelled],
  ["requests sent", t.requests.sent + (report.mock ? " (mock got " + report.mock.received + ")" : "")],
  ["amplification (requests / prompt)", fmt(t.amplification, 3)],
  ["failure rate", t.failureRate === null ? "–" : fmt(t.failureRate * 100, 2) + " %"],
  ["retries", t.retries],
  ["chains ended by the retry budget", t.retryChains.budget_exhausted ?? 0],
  ["provider gate waits", t.providerGate.waits + " (" + fmt(t.providerGate.waitMs / 1000) + " s)"],
  ["output tokens / s", fmt(report.throughput.outputTokensPerSecond)],
  ["estimated cost", "$" + fmt(t.costUsd, 4)],
  ["tool calls", t.toolCalls + (report.agentic.toolFailures > 0 ? " (" + report.agentic.toolFailures + " failed)" : "")],
  ["max event-loop delay", fmt(report.loopDelayMs.max) + " ms"],
  ["watchdog terminations", t.watchdogTerminations],
];
const tileBox = document.getElementById("tiles");
for (const [k, v] of tiles) { const d = el("div", { className: "tile" }); d.append(el("div", { className: "v" }, String(v)), el("div", { className: "k" }, k)); tileBox.append(d); }

const th = document.getElementById("thresholds");
if (report.thresholds.length === 0) th.append(el("tr", {}, "No thresholds were set."));
else {
  th.append(row("th", ["threshold", "actual", "result"]));
  for (const r of report.thresholds) {
    const tr = row("td", [r.expression, fmt(r.actual, 3), ""]);
    tr.lastChild.append(el("span", { className: r.passed ? "pass" : "fail" }, r.passed ? "passed" : "failed"));
    th.append(tr);
  }
}
function row(cell, values) { const tr = el("tr"); for (const v of values) tr.append(el(cell, {}, String(v))); return tr; }

const pt = document.getElementById("percentiles");
pt.append(row("th", ["", "count", "min", "p50", "p90", "p95", "p99", "max"]));
const L = report.latency;
for (const [name, s] of [["time to first token (ms)", L.ttftMs], ["inter-token latency (ms)", L.itlMs], ["end-to-end latency (ms)", L.e2eMs],
  ["output tokens/s per request", L.outputTokensPerSecond], ["prompt latency, retries included (ms)", L.promptMs], ["requests per prompt", L.requestsPerPrompt],
  // Agentic runs (docs/load.md): rows only when a tool ran.
  ...(report.agentic.toolCalls > 0 ? [["turns per prompt", report.agentic.turnsPerPrompt], ["tool latency (ms)", report.agentic.toolLatencyMs],
    ["session completion (ms)", report.agentic.sessionCompletionMs]] : [])]) {
  pt.append(row("td", [name, s.count, fmt(s.min), fmt(s.p50), fmt(s.p90), fmt(s.p95), fmt(s.p99), fmt(s.max)]));
}

function box(id, caption) {
  const figure = document.querySelector('figure[data-chart="' + id + '"]');
  figure.querySelector("figcaption").textContent = caption;
  return figure.querySelector("canvas");
}
function histogram(id, caption, summary, unit, color) {
  const h = summary.histogram;
  // One bin per whole number (requests per prompt) is labelled with that number.
  const unitBins = h.edges.every((e, i) => Number.isInteger(e) && (i === 0 || e - h.edges[i - 1] === 1));
  const labels = h.counts.map((_, i) => unitBins ? fmt(h.edges[i]) : fmt(h.edges[i]) + "–" + fmt(h.edges[i + 1]));
  new Chart(box(id, caption + " (n = " + summary.count + ")"), {
    type: "bar",
    data: { labels, datasets: [{ label: caption, data: h.counts, backgroundColor: color, barPercentage: 1, categoryPercentage: 0.95 }] },
    options: { plugins: { legend: { display: false } }, scales: { x: { title: { display: true, text: unit } }, y: { beginAtZero: true, title: { display: true, text: "count" } } } },
  });
}
const points = report.timeline.points;
const seconds = points.map((p) => fmt(p.tMs / 1000) + "s");
function series(id, caption, datasets, yTitle, stacked = false, type = "line") {
  new Chart(box(id, caption), {
    type,
    data: { labels: seconds, datasets: datasets.map((d, i) => ({ borderColor: COLORS[i % COLORS.length], backgroundColor: COLORS[i % COLORS.length], pointRadius: 0, borderWidth: 2, ...d })) },
    options: { interaction: { mode: "index", intersect: false }, scales: { x: { stacked, title: { display: true, text: "time since start" } }, y: { stacked, beginAtZero: true, title: { display: true, text: yTitle } } } },
  });
}

histogram("e2e", "End-to-end latency per request", L.e2eMs, "ms", COLORS[0]);
histogram("ttft", "Time to first token", L.ttftMs, "ms", COLORS[1]);
histogram("ttfb", "Time to first byte (response headers)", L.ttfbMs, "ms", COLORS[1]);
histogram("itl", "Inter-token latency", L.itlMs, "ms per token", COLORS[2]);
histogram("gaps", "Gaps between streamed chunks", L.chunkGapMs, "ms", COLORS[2]);
histogram("tps", "Output tokens/s per request", L.outputTokensPerSecond, "tokens/s", COLORS[3]);
series("requests", "Requests and retries per interval", [
  { label: "requests", data: points.map((p) => p.requests) },
  { label: "retries", data: points.map((p) => p.retries) },
], "per " + fmt(report.timeline.intervalMs / 1000) + " s");
const kinds = [...new Set(points.flatMap((p) => Object.keys(p.failures)))].sort();
series("failures", "Failed requests by kind, per interval", kinds.map((k) => ({ label: k, data: points.map((p) => p.failures[k] ?? 0) })),
  "failed requests", true, "bar");
series("concurrency", "Concurrency", [
  { label: "prompts in flight", data: points.map((p) => p.inFlightPrompts) },
  { label: "requests in flight", data: points.map((p) => p.inFlightRequests) },
], "in flight");
series("loop", "Host event-loop delay", [
  { label: "max", data: points.map((p) => p.loopDelayMaxMs) },
  { label: "mean", data: points.map((p) => p.loopDelayMeanMs) },
], "ms");
histogram("amplification", "Requests per prompt", L.requestsPerPrompt, "requests", COLORS[4]);
if (report.sweep) {
  // One point per step against its offered rate; the closed baseline and probe sit at their achieved rate.
  const steps = report.sweep.stages;
  const xOf = (s) => s.offeredRate ?? s.achievedRate;
  const pts = (f) => steps.map((s) => ({ x: xOf(s), y: f(s) })).filter((p) => p.y !== null && p.y !== undefined);
  const curve = (id, caption, datasets, yTitle) => new Chart(box(id, caption), {
    type: "line",
    data: { datasets: datasets.map((d, i) => ({ borderColor: COLORS[i % COLORS.length], backgroundColor: COLORS[i % COLORS.length], pointRadius: 4, borderWidth: 2, ...d })) },
    options: { interaction: { mode: "nearest", intersect: false }, scales: {
      x: { type: "linear", beginAtZero: true, title: { display: true, text: "offered rate, conversations/s (baseline, probe: achieved)" } },
      y: { beginAtZero: true, title: { display: true, text: yTitle } } } },
  });
  const rates = [
    { label: "achieved (conversations completed/s)", data: pts((s) => s.achievedRate) },
    { label: "prompts succeeded/s", data: pts((s) => s.throughput.promptsPerSecond) },
    { label: "offered", data: pts((s) => xOf(s)), borderDash: [4, 4], pointRadius: 0 },
  ];
  if (steps.some((s) => s.goodput !== null)) rates.push({ label: "goodput (prompts/s within the SLO)", data: pts((s) => s.goodput) });
  const stop = report.sweep.stopReason === null ? "" : " (stopped: " + report.sweep.stopReason + ")";
  curve("sweep-throughput", "Sweep: throughput against offered rate" + stop, rates, "per second");
  curve("sweep-latency", "Sweep: latency against offered rate", [
    { label: "TTFT p50", data: pts((s) => s.latency.ttftMs.p50) },
    { label: "TTFT p99", data: pts((s) => s.latency.ttftMs.p99) },
    { label: "e2e p50", data: pts((s) => s.latency.e2eMs.p50) },
    { label: "e2e p99", data: pts((s) => s.latency.e2eMs.p99) },
  ], "ms");
}
document.body.dataset.rendered = "true";
`;
