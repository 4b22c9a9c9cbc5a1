/**
 * The timeline of merged reports, on the wall clock: each part's points are shifted by how much
 * later than the earliest part it started, and put in the interval of the merged timeline they
 * end in (the nearest multiple of the interval). Within one part, the counts of points that land
 * in one interval add up and its gauges are the latest point's; across parts, counts and gauges
 * both add up (the parts ran side by side: their prompts in flight were in flight together), and
 * the event-loop delay is the largest (each part measured its own host). Pure, no I/O.
 */
import type { TimelinePoint } from "../metrics/timeline.js";

/** A timeline as report.json has it. */
export interface TimelineFigures {
  intervalMs: number;
  points: TimelinePoint[];
}

/** The fields of a timeline point this merge knows; any other is reported as unmerged. */
const KNOWN_POINT_FIELDS = new Set<string>([
  "tMs",
  "inFlightPrompts",
  "inFlightRequests",
  "requests",
  "retries",
  "failures",
  "outputTokens",
  "loopDelayMeanMs",
  "loopDelayMaxMs",
]);

/**
 * Merges the parts' timelines; `offsetMs` is how long after the earliest part each one started.
 * The merged interval is the largest of the parts'. Fields of points it does not know are left
 * out and named in `unmerged` (as `timeline.points.<field>`).
 */
export function mergeTimelines(parts: readonly { offsetMs: number; timeline: TimelineFigures }[]): {
  timeline: TimelineFigures;
  unmerged: string[];
} {
  const intervalMs = Math.max(...parts.map((part) => part.timeline.intervalMs));
  const unmerged = new Set<string>();
  const merged = new Map<number, TimelinePoint>();
  for (const { offsetMs, timeline } of parts) {
    const own = new Map<number, TimelinePoint>();
    for (const point of timeline.points) {
      for (const key of Object.keys(point)) if (!KNOWN_POINT_FIELDS.has(key)) unmerged.add(`timeline.points.${key}`);
      const tMs = Math.round(offsetMs + point.tMs);
      const slot = Math.round(tMs / intervalMs);
      const before = own.get(slot);
      own.set(slot, before === undefined ? copy(point, tMs) : combine(before, point, tMs, "latest"));
    }
    for (const [slot, point] of own) {
      const before = merged.get(slot);
      merged.set(slot, before === undefined ? point : combine(before, point, point.tMs, "sum"));
    }
  }
  const points = [...merged].sort(([a], [b]) => a - b).map(([, point]) => point);
  return { timeline: { intervalMs, points }, unmerged: [...unmerged] };
}

function copy(point: TimelinePoint, tMs: number): TimelinePoint {
  return {
    tMs,
    inFlightPrompts: point.inFlightPrompts,
    inFlightRequests: point.inFlightRequests,
    requests: point.requests,
    retries: point.retries,
    failures: { ...point.failures },
    outputTokens: point.outputTokens,
    loopDelayMeanMs: point.loopDelayMeanMs,
    loopDelayMaxMs: point.loopDelayMaxMs,
  };
}

/** `a` and `b` in one interval: counts add; gauges are `b`'s (latest, one part) or add (sum, parts). */
function combine(a: TimelinePoint, b: TimelinePoint, tMs: number, gauges: "latest" | "sum"): TimelinePoint {
  const failures = { ...a.failures };
  for (const [kind, n] of Object.entries(b.failures)) failures[kind] = (failures[kind] ?? 0) + n;
  return {
    tMs: Math.max(a.tMs, tMs),
    inFlightPrompts: gauges === "sum" ? a.inFlightPrompts + b.inFlightPrompts : b.inFlightPrompts,
    inFlightRequests: gauges === "sum" ? a.inFlightRequests + b.inFlightRequests : b.inFlightRequests,
    requests: a.requests + b.requests,
    retries: a.retries + b.retries,
    failures,
    outputTokens: a.outputTokens + b.outputTokens,
    loopDelayMeanMs: Math.max(a.loopDelayMeanMs, b.loopDelayMeanMs),
    loopDelayMaxMs: Math.max(a.loopDelayMaxMs, b.loopDelayMaxMs),
  };
}
