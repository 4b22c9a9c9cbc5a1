/**
 * compare.html: `lifeline load compare`'s comparison as one self-contained page, like
 * report.html (Chart.js and the data inlined; it opens offline). A table of every figure with
 * its verdict (`td.verdict[data-verdict]`), the thresholds, and two charts: the interval of each
 * tested difference in % of A, and B / A of every figure. The page sets
 * `document.body.dataset.rendered = "true"` once both charts are drawn (the browser test waits
 * for it).
 */
import { chartJs, escapeHtml } from "../report/report-html.js";
import type { Comparison } from "./compare-reports.js";
import { verdictText } from "./compare-table.js";

/** Ids of the page's charts, in page order. */
export const COMPARE_CHART_IDS = ["intervals", "ratios"] as const;

/** The whole page. @throws when Chart.js cannot be read from node_modules. */
export async function renderCompareHtml(comparison: Comparison): Promise<string> {
  // The verdict texts are the terminal's, computed here so that page and table agree.
  const data = JSON.stringify({
    ...comparison,
    figures: comparison.figures.map((figure) => ({ ...figure, verdictText: verdictText(figure) })),
  }).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lifeline load compare: ${escapeHtml(comparison.a.source)} vs ${escapeHtml(comparison.b.source)}</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>lifeline load compare</h1><p id="runs"></p><ul id="config"></ul><p id="method"></p></header>
<section><h2>Figures</h2><table id="figures"></table></section>
<section><h2>Thresholds</h2><table id="thresholds"></table></section>
<section class="charts">
${COMPARE_CHART_IDS.map((id) => `<figure class="chart" data-chart="${id}"><figcaption></figcaption><div class="box"><canvas></canvas></div></figure>`).join("\n")}
</section>
<footer>Figures in compare.json (schema <code>${escapeHtml(comparison.schema)}</code>).</footer>
<script type="application/json" id="compare-data">${data}</script>
<script>${await chartJs()}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}

const STYLE = `
:root { font-family: system-ui, sans-serif; color: #1d2433; background: #ffffff; }
body { margin: 24px auto; max-width: 1200px; padding: 0 16px; }
h1 { margin: 0 0 4px; font-size: 22px; } h2 { font-size: 16px; margin: 24px 0 8px; }
#runs, #method { margin: 4px 0; color: #5b6478; } #config { margin: 4px 0; color: #5b6478; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; } td, th { padding: 4px 10px; border-bottom: 1px solid #e6e9f0; text-align: right; }
td:first-child, th:first-child, td.verdict, th:last-child { text-align: left; }
.better, .pass { color: #1a7f37; font-weight: 600; } .worse, .fail { color: #cf222e; font-weight: 600; }
.noise { color: #5b6478; } .nosamples { color: #9a6700; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 16px; margin-top: 24px; }
.chart { margin: 0; border: 1px solid #dde2ec; border-radius: 8px; padding: 10px; }
.chart figcaption { font-size: 13px; font-weight: 600; margin-bottom: 6px; }
.chart .box { position: relative; height: 420px; }
footer { margin: 24px 0; color: #5b6478; font-size: 12px; }
`;

// Plain browser JavaScript (no build step), run after Chart.js.
const PAGE_SCRIPT = `
"use strict";
const cmp = JSON.parse(document.getElementById("compare-data").textContent);
Chart.defaults.animation = false;
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.font.size = 11;
const el = (tag, attrs = {}, text) => { const e = document.createElement(tag); Object.assign(e, attrs); if (text !== undefined) e.textContent = text; return e; };
const num = (v) => v === null || v === undefined ? "—" : Math.abs(v) >= 1000 ? String(Math.round(v)) : String(Number(Number(v).toPrecision(4)));
const signed = (v) => v !== null && v > 0 ? "+" + num(v) : num(v);
const run = (name, r) => name + " = " + r.source + (r.startedAt ? " (started " + r.startedAt + ")" : "") + (r.records ? "" : ", no records.jsonl");
document.getElementById("runs").textContent = run("A", cmp.a) + " · " + run("B", cmp.b);
for (const d of cmp.configDifferences) document.getElementById("config").append(el("li", {}, "config differs: " + d.path + ": A " + JSON.stringify(d.a) + ", B " + JSON.stringify(d.b)));
document.getElementById("method").textContent = Math.round(cmp.confidence * 1000) / 10 + " % intervals of B − A; bootstrap of " + cmp.resamples + " resamples, seed " + cmp.seed + (cmp.noise > 0 ? "; noise floor ± " + Math.round(cmp.noise * 1000) / 10 + " % of A" : "");

const CLASS = { "better": "better", "worse": "worse", "within noise": "noise", "no samples": "nosamples" };
const figures = document.getElementById("figures");
const head = el("tr"); for (const h of ["figure", "A", "B", "B − A", "B / A", "test", "verdict"]) head.append(el("th", {}, h)); figures.append(head);
for (const f of cmp.figures) {
  const tr = el("tr"); tr.dataset.figure = f.id;
  for (const text of [f.label, num(f.a), num(f.b), signed(f.delta), num(f.ratio), f.test]) tr.append(el("td", {}, text));
  const cell = el("td", { className: "verdict " + (CLASS[f.verdict] || "") }, f.verdictText);
  cell.dataset.verdict = f.verdict === null ? "absent" : f.verdict;
  tr.append(cell); figures.append(tr);
}
const thresholds = document.getElementById("thresholds");
if (cmp.thresholds.length === 0) thresholds.append(el("tr", {}, "none"));
for (const t of cmp.thresholds) {
  const tr = el("tr"); tr.append(el("td", {}, t.expression));
  tr.append(el("td", {}, t.actual === null ? (t.note || "no data") : num(t.actual)));
  tr.append(el("td", { className: t.passed ? "pass" : "fail" }, t.passed ? "ok" : "FAIL"));
  thresholds.append(tr);
}

const COLOR = { "better": "#2b9348", "worse": "#cf222e", "within noise": "#8a94a6", "no samples": "#f59f00" };
function chart(id, caption, config) {
  const figure = document.querySelector('figure[data-chart="' + id + '"]');
  figure.querySelector("figcaption").textContent = caption;
  new Chart(figure.querySelector("canvas"), config);
}
const tested = cmp.figures.filter((f) => f.interval !== null && f.a !== null && f.a !== 0);
chart("intervals", "Interval of B − A, in % of A (green: B better, red: B worse, grey: within noise)", {
  type: "bar",
  data: {
    labels: tested.map((f) => f.label),
    datasets: [{
      label: "interval of B − A, % of A",
      data: tested.map((f) => [100 * f.interval.low / Math.abs(f.a), 100 * f.interval.high / Math.abs(f.a)]),
      backgroundColor: tested.map((f) => COLOR[f.verdict]),
      minBarLength: 3,
    }],
  },
  options: { indexAxis: "y", plugins: { legend: { display: false } }, scales: { x: { title: { display: true, text: "% of A" } } } },
});
const ratios = cmp.figures.filter((f) => f.ratio !== null);
chart("ratios", "B / A of every figure (1: equal)", {
  type: "bar",
  data: {
    labels: ratios.map((f) => f.label),
    datasets: [{ label: "B / A", data: ratios.map((f) => f.ratio), backgroundColor: ratios.map((f) => COLOR[f.verdict]) }],
  },
  options: { indexAxis: "y", plugins: { legend: { display: false } }, scales: { x: { title: { display: true, text: "B / A" } } } },
});
document.body.dataset.rendered = "true";
`;
