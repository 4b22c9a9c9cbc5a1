/**
 * report.html's tables for `--slo` and the retry verdicts (report.json `slo`, `verdicts`,
 * `failures`): the markup report-html.ts places after its percentile table, and the browser
 * script that fills it from the page's inlined report. The script is self-contained (it runs
 * before the page's chart script, so the page is complete when that one marks it rendered).
 */

/** The sections, empty until {@link VERDICTS_SCRIPT} fills them. */
export const VERDICTS_SECTIONS = `<style>
#retries td:last-child, #failures th:last-child { text-align: left; }
td.example { text-align: left; font-family: ui-monospace, monospace; font-size: 12px; max-width: 640px; overflow-wrap: anywhere; }
</style>
<section><h2>Service-level objective</h2><p id="slo-spec"></p><table id="slo"></table></section>
<section><h2>Retry verdicts per prompt</h2><table id="verdicts"></table></section>
<section><h2>Retries</h2><table id="retries"></table></section>
<section><h2>Failures by kind</h2><table id="failures"></table></section>`;

// Plain browser JavaScript (no build step), in its own scope.
/** Fills {@link VERDICTS_SECTIONS} from `#report-data`. */
export const VERDICTS_SCRIPT = `
"use strict";
(() => {
  const report = JSON.parse(document.getElementById("report-data").textContent);
  const num = (v, digits = 1) => v === null || v === undefined ? "–" : Number(v).toLocaleString("en-US", { maximumFractionDigits: digits });
  const pct = (v) => v === null || v === undefined ? "–" : num(v * 100, 2) + " %";
  const cell = (tag, text) => { const e = document.createElement(tag); e.textContent = String(text); return e; };
  const line = (table, tag, values) => { const tr = document.createElement("tr"); for (const v of values) tr.append(cell(tag, v)); table.append(tr); };

  const slo = report.slo, sloTable = document.getElementById("slo");
  if (slo === null) document.getElementById("slo-spec").textContent = "No SLO was set (--slo).";
  else {
    document.getElementById("slo-spec").textContent = slo.spec;
    line(sloTable, "th", ["", "judged", "conforming", "attainment", "goodput / s"]);
    for (const [name, f] of [["requests", slo.requests], ["prompts, retries included", slo.prompts], ["sessions", slo.sessions]]) {
      if (f !== null) line(sloTable, "td", [name, f.total, f.conforming, pct(f.attainment), num(f.goodputPerSecond, 3)]);
    }
  }

  const v = report.verdicts, verdicts = document.getElementById("verdicts");
  line(verdicts, "th", ["verdict", "prompts", "share"]);
  for (const [name, key] of [["succeeded on the first attempt", "firstAttempt"], ["succeeded after retries", "afterRetries"],
    ["failed after retries", "failedAfterRetries"], ["failed without retry", "failedWithoutRetry"]]) {
    line(verdicts, "td", [name, v.prompts[key], pct(v.shares[key])]);
  }
  line(verdicts, "td", ["requests per successful prompt", num(v.requestsPerSuccessfulPrompt, 3), ""]);

  const retries = document.getElementById("retries");
  const counts = (o) => Object.entries(o).sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => k + " " + n).join(", ") || "none";
  const b = v.backoff.perPromptMs, h = v.hints;
  for (const [name, value] of [
    ["retries by cause", counts(v.retriesByCause)],
    ["retry chains by end", counts(v.chainsByEnd)],
    ["back-off slept", num(v.backoff.sumMs / 1000) + " s; per retried prompt p50 " + num(b.p50) + " ms, p99 " + num(b.p99) + " ms (n = " + b.count + ")"],
    ["retry hints honoured", h.honoured + " / " + h.total + (h.early ? " (" + h.early + " early)" : "") + (h.overCap ? "; " + h.overCap + " over the cap" : "") +
      (h.total ? "; slept − hint p50 " + num(h.sleptMinusHintMs.p50) + " ms, min " + num(h.sleptMinusHintMs.min) + " ms" : "")],
    ["provider gate waits", v.providerGate.waits + " (" + v.providerGate.beforeRetry + " before a retry, " + v.providerGate.beforePrompt + " before a prompt; " + num(v.providerGate.waitMs / 1000) + " s)"],
    ["retry budget refusals", v.budgetRefusals],
    ["fallback-model switches", v.fallbackSwitches],
    ["credential rotations", v.credentialRotations],
  ]) line(retries, "td", [name, value]);

  const failures = document.getElementById("failures");
  if (report.failures.length === 0) line(failures, "td", ["No request failed."]);
  else {
    line(failures, "th", ["kind", "requests", "example"]);
    for (const f of report.failures) {
      line(failures, "td", [f.label, f.count, f.example]);
      failures.lastChild.lastChild.className = "example";
    }
  }
})();
`;
