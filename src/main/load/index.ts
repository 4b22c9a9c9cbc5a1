/**
 * `lifeline/load`: the load test run from code (`runLoad`, what `lifeline load` runs), its
 * options, the report it writes (`LOAD_REPORT_SCHEMA` names report.json's format) and the metrics
 * a threshold may name. Re-exports only; see docs/load.md.
 */
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
export type { LoadProgress, PromptOutcome, PromptRecord, RequestRecord } from "./load-metrics.js";
export type { FaultKind, LoadFault, LoadOptions } from "./load-options.js";
export { type LoadReport, REPORT_SCHEMA as LOAD_REPORT_SCHEMA } from "./load-report.js";
export { type ComparedRun, readLoadReport } from "./read-load-report.js";
export type { ReportFiles } from "./report-files.js";
export { type LoadResult, runLoad } from "./run-load.js";
export {
  THRESHOLD_METRICS,
  type Threshold,
  type ThresholdMetric,
  type ThresholdOperator,
  type ThresholdResult,
} from "./thresholds.js";
