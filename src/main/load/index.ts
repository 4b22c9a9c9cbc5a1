/**
 * `lifeline/load`: the load test run from code (`runLoad`, what `lifeline load` runs), its
 * options (the open model's and the sweep's among them), the report it writes
 * (`LOAD_REPORT_SCHEMA` names report.json's format), the merge of reports (`mergeReports`, what
 * `lifeline load merge` runs) and the metrics a threshold may name. Re-exports only; see
 * docs/load.md.
 */

export type { AgenticReport } from "./agentic-report.js";
export type {
  ArrivalConfig,
  ArrivalCounts,
  ArrivalTotals,
  SaturationReason,
  SweepReport,
  SweepStage,
} from "./arrival-report.js";
export {
  COMPARE_SCHEMA,
  type ComparedRunSummary,
  type CompareOptions,
  type Comparison,
  compareReports,
  type FigureComparison,
  type Verdict,
} from "./compare-reports.js";
export type { Interval } from "./compare-stats.js";
export type { ComparisonThresholdResult } from "./compare-thresholds.js";
export type { FailureGroup } from "./failure-groups.js";
export type { LoadProgress, PromptOutcome, PromptRecord, RequestRecord } from "./load-metrics.js";
export type { FaultKind, LoadFault, LoadOptions } from "./load-options.js";
export { type LoadReport, REPORT_SCHEMA as LOAD_REPORT_SCHEMA } from "./load-report.js";
export type { LoadToolBehaviour, MockTools } from "./load-tools.js";
export { type MergeOptions, type MergeResult, mergeReports } from "./merge-reports.js";
export type { ArrivalOptions, ArrivalProcess, ArrivalStage, OnCap, SweepOptions } from "./open-options.js";
export type { ReportFileOptions, ReportFiles, ReportFolderFiles } from "./report-files.js";
export type { MergedPart, MergedReport, MergeInfo } from "./report-merge.js";
export { type ComparedRun, readLoadReport } from "./report-reader.js";
export type { RetryVerdicts } from "./retry-verdicts.js";
export { type LoadResult, runLoad } from "./run-load.js";
export type { SketchJson } from "./sketch.js";
export type { SloAttainment, SloReport } from "./slo.js";
export type { Histogram, Summary } from "./stats.js";
export {
  THRESHOLD_METRICS,
  type Threshold,
  type ThresholdMetric,
  type ThresholdOperator,
  type ThresholdResult,
} from "./thresholds.js";
