/**
 * The merge of report fields report-merge.ts does not know by name (fields other parts of
 * lifeline add to report.json): merged only where that cannot be wrong. A Summary (an object
 * with a `sketch`) merges through its sketch; an object merges key by key; anything else (a
 * number might be a count, a gauge or a rate) is left out and its path listed. Pure.
 */
import { Sketch } from "../metrics/sketch.js";
import { type Summary, summarizeSketch } from "../metrics/stats.js";

/**
 * Merges the values of one field across the parts (`sources` names them in errors) where that
 * cannot be wrong: Summaries (an object with a `sketch`) through their sketches, objects key by
 * key. Anything else (a number might be a count or a rate), or a field some part lacks, is left
 * out: undefined, and its path added to `unmerged`.
 * @throws ERR_LOAD_REPORT for a malformed sketch, naming its part and field.
 */
export function mergeUnknown(
  values: readonly unknown[],
  sources: readonly string[],
  path: string,
  unmerged: Set<string>,
): unknown {
  if (values.every(isSummary)) {
    const sketch = new Sketch();
    for (const [i, value] of values.entries()) {
      sketch.merge(Sketch.fromJSON(value.sketch, `${sources[i]}: ${path}.sketch`));
    }
    return summarizeSketch(sketch);
  }
  if (values.every(isPlainObject)) {
    const merged = mergeObject(values, sources, path, unmerged);
    // An object none of whose fields could be merged is left out (its fields are listed).
    const emptied = Object.keys(merged).length === 0 && values.some((value) => Object.keys(value).length > 0);
    return emptied ? undefined : merged;
  }
  unmerged.add(path);
  return undefined;
}

/** {@link mergeUnknown} for each key of `values` (present in any of them); what merges, under its key. */
export function mergeObject(
  values: readonly Record<string, unknown>[],
  sources: readonly string[],
  path: string,
  unmerged: Set<string>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  for (const key of new Set(values.flatMap((value) => Object.keys(value)))) {
    const value = mergeUnknown(
      values.map((v) => v[key]),
      sources,
      `${path}.${key}`,
      unmerged,
    );
    if (value !== undefined) merged[key] = value;
  }
  return merged;
}

/** A plain object (not null, not an array). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function isSummary(value: unknown): value is Summary {
  return isPlainObject(value) && "sketch" in value;
}
