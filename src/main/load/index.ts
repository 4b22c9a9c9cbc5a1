/**
 * `lifeline/load`: the load test run from code (`runLoad`, what `lifeline load` runs), its
 * options, the report it writes (`LOAD_REPORT_SCHEMA` names report.json's format), the merge of
 * reports (`mergeReports`, what `lifeline load merge` runs) and the metrics a threshold may name.
 * Re-exports only; see docs/load.md.
 */
export type { LoadProgress, PromptOutcome, PromptRecord, RequestRecord } from "./load-metrics.js";
export type { FaultKind, LoadFault, LoadOptions } from "./load-options.js";
export { type LoadReport, REPORT_SCHEMA as LOAD_REPORT_SCHEMA } from "./load-report.js";
export { type MergeOptions, type MergeResult, mergeReports } from "./merge-reports.js";
export type { ReportFileOptions, ReportFiles, ReportFolderFiles } from "./report-files.js";
export type { MergedPart, MergedReport, MergeInfo } from "./report-merge.js";
export { type LoadResult, runLoad } from "./run-load.js";
export type { SketchJson } from "./sketch.js";
export type { Histogram, Summary } from "./stats.js";
export {
  THRESHOLD_METRICS,
  type Threshold,
  type ThresholdMetric,
  type ThresholdOperator,
  type ThresholdResult,
} from "./thresholds.js";
