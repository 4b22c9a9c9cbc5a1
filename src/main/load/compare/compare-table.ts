/**
 * The terminal output of `lifeline load compare`: the runs, the settings that differ, a table of
 * every headline figure (A, B, B − A, B / A, verdict with its interval) and the thresholds, in
 * plain text so it reads the same in a CI log.
 */
import type { Comparison, FigureComparison } from "./compare-reports.js";

/** The comparison as text, ending with a newline; `dir` is the folder written, if any. */
export function formatComparison(comparison: Comparison, dir?: string): string {
  const lines: string[] = [];
  const run = (name: string, r: Comparison["a"]) =>
    `${name} = ${r.source}${r.startedAt === null ? "" : ` (started ${r.startedAt}${r.status === "completed" ? "" : `, ${r.status}`})`}${r.records ? "" : ", no records.jsonl"}`;
  lines.push(`lifeline load compare: ${run("A", comparison.a)}`);
  lines.push(`                       ${run("B", comparison.b)}`);
  for (const difference of comparison.configDifferences) {
    lines.push(`config differs: ${difference.path}: A ${show(difference.a)}, B ${show(difference.b)}`);
  }
  lines.push(
    `${Math.round(comparison.confidence * 1000) / 10} % intervals of B − A; bootstrap of ${comparison.resamples} resamples, seed ${comparison.seed}${comparison.noise > 0 ? `; noise floor ± ${Math.round(comparison.noise * 1000) / 10} % of A` : ""}`,
  );
  lines.push("");
  lines.push(
    ...table([
      ["figure", "A", "B", "B − A", "B / A", "verdict"],
      ...comparison.figures.map((figure) => [
        figure.label,
        num(figure.a),
        num(figure.b),
        signed(figure.delta),
        num(figure.ratio),
        verdictText(figure),
      ]),
    ]),
  );
  if (comparison.thresholds.length > 0) {
    lines.push("");
    for (const threshold of comparison.thresholds) {
      const actual = threshold.actual === null ? (threshold.note ?? "no data") : `actual ${num(threshold.actual)}`;
      lines.push(`${threshold.passed ? "ok  " : "FAIL"} ${threshold.expression}  (${actual})`);
    }
  }
  if (dir !== undefined) lines.push("", `compare.json and compare.html in ${dir}`);
  return `${lines.join("\n")}\n`;
}

/** A figure's verdict as the table and the page show it. */
export function verdictText(figure: FigureComparison): string {
  if (figure.verdict === null) return "—";
  if (figure.verdict === "no samples") {
    const why = figure.note === undefined ? "" : `${figure.note}; `;
    return `no samples (${why}by difference: ${figure.leaning === "equal" ? "equal" : `B ${figure.leaning}`})`;
  }
  const interval = figure.interval === null ? "" : ` [${signed(figure.interval.low)}, ${signed(figure.interval.high)}]`;
  return `${figure.verdict}${interval}`;
}

/** Four significant digits (whole numbers from 1000 on); "—" for an absent figure. */
function num(value: number | null): string {
  if (value === null) return "—";
  if (Math.abs(value) >= 1000) return String(Math.round(value));
  return String(Number(value.toPrecision(4)));
}

function signed(value: number | null): string {
  if (value === null) return "—";
  return value > 0 ? `+${num(value)}` : num(value);
}

function show(value: unknown): string {
  return value === null || value === undefined ? "—" : JSON.stringify(value);
}

/** Columns padded to their widest cell; text left, numbers right. */
function table(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (i === 0 || i === row.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}
