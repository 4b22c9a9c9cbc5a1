/**
 * `lifeline/load`: the load test run from code (`runLoad`, what `lifeline load` runs), its
 * options (the open model's and the sweep's among them), the report it writes
 * (`LOAD_REPORT_SCHEMA` names report.json's format) and the metrics
 * a threshold may name. Re-exports only; see docs/load.md.
 */
export type {
  ArrivalConfig,
  ArrivalCounts,
  ArrivalTotals,
  SaturationReason,
  SweepReport,
  SweepStage,
} from "./arrival-report.js";
export type { ArrivalProcess, ArrivalStage } from "./arrivals.js";
export type { LoadProgress, PromptOutcome, PromptRecord, RequestRecord } from "./load-metrics.js";
export type { FaultKind, LoadFault, LoadOptions } from "./load-options.js";
export { type LoadReport, REPORT_SCHEMA as LOAD_REPORT_SCHEMA } from "./load-report.js";
export type { ArrivalOptions, OnCap, SweepOptions } from "./open-options.js";
export type { ReportFiles } from "./report-files.js";
export { type LoadResult, runLoad } from "./run-load.js";
export {
  THRESHOLD_METRICS,
  type Threshold,
  type ThresholdMetric,
  type ThresholdOperator,
  type ThresholdResult,
} from "./thresholds.js";
