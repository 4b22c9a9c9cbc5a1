/**
 * Reads a report folder back for `lifeline load merge`: report.json, checked against the fields
 * the merge reads (a zod schema; fields it does not know pass as they are), and records.jsonl
 * when it is there. Every refusal is ERR_LOAD_REPORT naming the file, and the field or line.
 */
import { readFile, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { z } from "zod";
import { LifelineError } from "../../shared/errors.js";
import { type LoadReport, REPORT_SCHEMA } from "./load-report.js";
import type { MergeInfo } from "./report-merge.js";

/** A report read from its folder. */
export interface ReportFolder {
  /** The folder or report.json as given. */
  source: string;
  report: LoadReport & { merged?: MergeInfo };
  /** The lines of records.jsonl as objects; undefined when the folder has none. */
  records: Record<string, unknown>[] | undefined;
}

const count = z.number().int().min(0);
const counts = z.record(z.string(), count);
const finite = z.number();
const summary = z.looseObject({
  count,
  sketch: z.custom<object>((value) => value !== null && typeof value === "object", {
    message: "missing: the report was written before summaries had sketches; run it again to merge it",
  }),
});
const point = z.looseObject({
  tMs: finite,
  inFlightPrompts: count,
  inFlightRequests: count,
  requests: count,
  retries: count,
  failures: counts,
  outputTokens: count,
  loopDelayMeanMs: finite,
  loopDelayMaxMs: finite,
});
const mergedPart: z.ZodType = z.lazy(() =>
  z.looseObject({
    startedAt: z.iso.datetime(),
    durationMs: finite.min(0),
    from: z.array(mergedPart).optional(),
  }),
);

const reportSchema = z.looseObject({
  status: z.enum(["completed", "interrupted"]),
  startedAt: z.iso.datetime(),
  endedAt: z.iso.datetime(),
  durationMs: finite.min(0),
  config: z.looseObject({
    sessions: count,
    concurrency: count,
    seed: finite,
    target: z.enum(["mock", "model"]),
    model: z.string(),
  }),
  totals: z.looseObject({
    prompts: z.looseObject({ sent: count, succeeded: count, failed: count, cancelled: count }),
    requests: z.looseObject({ sent: count, failed: count, failuresByKind: counts, failuresByClass: counts }),
    retries: count,
    retryChains: counts,
    providerGate: z.looseObject({ waits: count, waitMs: finite.min(0) }),
    toolCalls: count,
    inputTokens: count,
    outputTokens: count,
    costUsd: finite.min(0),
    sessionRestores: counts,
    watchdogTerminations: count,
  }),
  latency: z.record(z.string(), summary),
  loopDelayMs: z.looseObject({ mean: finite, p50: finite, p99: finite, max: finite }),
  timeline: z.looseObject({ intervalMs: finite.positive(), points: z.array(point) }),
  thresholds: z.array(z.looseObject({ expression: z.string() })),
  mock: z
    .looseObject({ received: count, invalid: count, outcomes: counts, steps: counts, maxConcurrentRequests: count })
    .nullable(),
  merged: z.looseObject({ from: z.array(mergedPart), unmergedFields: z.array(z.string()) }).optional(),
});

/**
 * Reads `path`: a report folder (its report.json and records.jsonl) or a report.json (and the
 * records.jsonl beside it).
 * @throws ERR_LOAD_REPORT when report.json cannot be read, is not JSON, is of another `schema`
 *   or lacks a field the merge needs (the message names the file and the field), or when a line
 *   of records.jsonl is not a JSON object with a `type` (naming the file and line).
 */
export async function readReportFolder(path: string): Promise<ReportFolder> {
  const isFile = await stat(path).then(
    (info) => info.isFile(),
    () => basename(path) === "report.json",
  );
  const jsonPath = isFile ? path : join(path, "report.json");
  const recordsPath = join(isFile ? dirname(path) : path, "records.jsonl");
  let text: string;
  try {
    text = await readFile(jsonPath, "utf8");
  } catch (error) {
    return fail(
      `${jsonPath} cannot be read (${(error as Error).message}); give a report folder or its report.json`,
      error,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return fail(`${jsonPath} is not JSON (${(error as Error).message})`, error);
  }
  const schema = (json as { schema?: unknown } | null)?.schema;
  if (schema !== REPORT_SCHEMA) {
    fail(
      `${jsonPath} is not a lifeline load report of schema ${REPORT_SCHEMA} (its schema is ${JSON.stringify(schema)}); merge reports of this schema only`,
    );
  }
  const result = reportSchema.safeParse(json);
  if (!result.success) {
    const problems = result.error.issues.map(
      (issue) => `${issue.path.map(String).join(".") || "(root)"}: ${issue.message}`,
    );
    fail(`${jsonPath} is not a complete load report: ${problems.join("; ")}`);
  }
  return { source: path, report: json as ReportFolder["report"], records: await readRecords(recordsPath) };
}

async function readRecords(path: string): Promise<Record<string, unknown>[] | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    return fail(`${path} cannot be read (${(error as Error).message})`, error);
  }
  const records: Record<string, unknown>[] = [];
  for (const [index, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch (error) {
      fail(`${path}:${index + 1} is not JSON (${(error as Error).message})`, error);
    }
    if (record === null || typeof record !== "object" || typeof (record as { type?: unknown }).type !== "string") {
      fail(`${path}:${index + 1} is not a record (a JSON object with a "type")`);
    }
    records.push(record as Record<string, unknown>);
  }
  return records;
}

function fail(message: string, cause?: unknown): never {
  throw new LifelineError("ERR_LOAD_REPORT", `${message}.`, cause === undefined ? {} : { cause });
}
