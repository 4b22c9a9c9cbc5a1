/**
 * `lifeline/load`: the load test run from code (`runLoad`, what `lifeline load` runs), its
 * options (the open model's and the sweep's among them), the report it writes
 * (`LOAD_REPORT_SCHEMA` names report.json's format), the merge of reports (`mergeReports`, what
 * `lifeline load merge` runs) and the metrics a threshold may name. Re-exports only; see
 * docs/load.md.
 */

export {
  COMPARE_SCHEMA,
  type ComparedRunSummary,
  type CompareOptions,
  type Comparison,
  compareReports,
  type FigureComparison,
  type Verdict,
} from "./compare/compare-reports.js";
export type { Interval } from "./compare/compare-stats.js";
export type { ComparisonThresholdResult } from "./compare/compare-thresholds.js";
export { type MergeOptions, type MergeResult, mergeReports } from "./merge/merge-reports.js";
export type { MergedPart, MergedReport, MergeInfo } from "./merge/report-merge.js";
export { type ComparedRun, readLoadReport } from "./merge/report-reader.js";
export type { LoadProgress, PromptOutcome, PromptRecord, RequestRecord } from "./metrics/load-metrics.js";
export type { SketchJson } from "./metrics/sketch.js";
export type { Histogram, Summary } from "./metrics/stats.js";
export type {
  ArrivalConfig,
  ArrivalCounts,
  ArrivalTotals,
  SaturationReason,
  SweepReport,
  SweepStage,
} from "./open/arrival-report.js";
export type { FaultKind, LoadFault, LoadOptions } from "./options/load-options.js";
export type { LoadToolBehaviour, MockTools } from "./options/load-tools.js";
export type { ArrivalOptions, ArrivalProcess, ArrivalStage, OnCap, SweepOptions } from "./options/open-options.js";
export type { AgenticReport } from "./report/agentic-report.js";
export { type LoadReport, REPORT_SCHEMA as LOAD_REPORT_SCHEMA } from "./report/load-report.js";
export type { ReportFileOptions, ReportFiles, ReportFolderFiles } from "./report/report-files.js";
export { type LoadResult, runLoad } from "./run/run-load.js";
export type { FailureGroup } from "./verdicts/failure-groups.js";
export type { RetryVerdicts } from "./verdicts/retry-verdicts.js";
export type { SloAttainment, SloReport } from "./verdicts/slo.js";
export {
  THRESHOLD_METRICS,
  type Threshold,
  type ThresholdMetric,
  type ThresholdOperator,
  type ThresholdResult,
} from "./verdicts/thresholds.js";
