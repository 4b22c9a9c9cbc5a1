/**
 * Reads a report folder back, for `lifeline load merge` (report.json checked against the fields
 * the merge reads: a zod schema; fields it does not know pass as they are) and for `lifeline load
 * compare` (only the schema checked), with records.jsonl when it is there. Every refusal is
 * ERR_LOAD_REPORT naming the file, and the field or line.
 */
import { readFile, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import * as z from "zod";
import { LifelineError } from "../../../shared/errors.js";
import { type LoadReport, REPORT_SCHEMA } from "../report/load-report.js";
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
const attainment = z.looseObject({ total: count, conforming: count });
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
    .looseObject({
      received: count,
      invalid: count,
      outcomes: counts,
      steps: counts,
      maxConcurrentRequests: count,
      toolCalls: count,
    })
    .nullable(),
  slo: z
    .looseObject({
      spec: z.string(),
      requests: attainment,
      prompts: attainment,
      sessions: attainment.nullable(),
    })
    .nullable(),
  verdicts: z.looseObject({
    prompts: z.looseObject({
      firstAttempt: count,
      afterRetries: count,
      failedAfterRetries: count,
      failedWithoutRetry: count,
    }),
    retriesByCause: counts,
    chainsByEnd: counts,
    backoff: z.looseObject({ sumMs: finite, perPromptMs: summary }),
    hints: z.looseObject({ honoured: count, total: count, early: count, overCap: count, sleptMinusHintMs: summary }),
    providerGate: z.looseObject({ waits: count, beforeRetry: count, beforePrompt: count, waitMs: finite }),
    budgetRefusals: count,
    credentialRotations: count,
    fallbackSwitches: count,
  }),
  failures: z.array(z.looseObject({ label: z.string(), count, example: z.string() })),
  agentic: z.looseObject({
    toolCalls: count,
    toolFailures: count,
    turnsPerPrompt: summary,
    toolLatencyMs: summary,
    sessionCompletionMs: summary,
  }),
  merged: z.looseObject({ from: z.array(mergedPart), unmergedFields: z.array(z.string()) }).optional(),
});

/** A run as `lifeline load compare` takes it: report.json as parsed, read by path. */
export interface ComparedRun {
  /** Where it was read from (a folder or a file), for the comparison's output. */
  source: string;
  /** report.json, parsed (or a `LoadReport` from `runLoad()`); figures it lacks are absent in the comparison. */
  report: object;
  /** records.jsonl's lines, parsed; null when the run has none (figures then get no interval). */
  records: unknown[] | null;
}

/**
 * Reads `path` for a comparison: a report folder (its report.json, and records.jsonl when it is
 * there) or a report.json (and the records.jsonl beside it). Only the schema is checked: a figure
 * the report lacks is shown as absent.
 * @throws ERR_LOAD_REPORT when report.json cannot be read, is not JSON or is of another `schema`,
 *   or a line of records.jsonl is not a JSON record (the message names the file or line).
 */
export async function readLoadReport(path: string): Promise<ComparedRun> {
  const { json, records } = await readReportFiles(path);
  return { source: path, report: json, records: records ?? null };
}

/**
 * Reads `path` for a merge: {@link readLoadReport}'s files, and report.json checked against the
 * fields the merge reads (fields it does not know pass as they are).
 * @throws ERR_LOAD_REPORT as {@link readLoadReport}, and when report.json lacks a field the merge
 *   needs or has one of the wrong type (the message names the file and the field).
 */
export async function readReportFolder(path: string): Promise<ReportFolder> {
  const { jsonPath, json, records } = await readReportFiles(path);
  const result = reportSchema.safeParse(json);
  if (!result.success) {
    const problems = result.error.issues.map(
      (issue) => `${issue.path.map(String).join(".") || "(root)"}: ${issue.message}`,
    );
    fail(`${jsonPath} is not a complete load report: ${problems.join("; ")}`);
  }
  return { source: path, report: json as ReportFolder["report"], records };
}

/** report.json (a JSON object of this schema) and records.jsonl (undefined when absent) of `path`. */
async function readReportFiles(
  path: string,
): Promise<{ jsonPath: string; json: object; records: Record<string, unknown>[] | undefined }> {
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
      `${jsonPath} cannot be read (${(error as Error).message}); give a report folder of lifeline load or its report.json`,
      error,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return fail(
      `${jsonPath} is not JSON (${(error as Error).message}); give the report.json lifeline load wrote`,
      error,
    );
  }
  const schema = (json as { schema?: unknown } | null)?.schema;
  if (json === null || typeof json !== "object" || schema !== REPORT_SCHEMA) {
    fail(
      `${jsonPath} is not a lifeline load report of schema ${REPORT_SCHEMA} (its schema is ${JSON.stringify(schema ?? null)}); use reports written by this version of lifeline load (run the loads again with it)`,
    );
  }
  return { jsonPath, json: json as object, records: await readRecords(recordsPath) };
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
