/**
 * `lifeline/load-fleet`: distributed load runs from code. `runLoadAgent()` is a generator (what
 * `lifeline load-agent` runs), `runFleetLoad()` the coordinator (what `lifeline load --fleet URL
 * --generators K` runs); `FleetLoadReport` is the merged report.json with its `fleet` and
 * `generators` fields. Re-exports only; see docs/load.md ("Distributed runs").
 */
export type { FleetLoadReport, GeneratorFigures, GeneratorSummary } from "./fleet-load-report.js";
export { type LoadAgentOptions, runLoadAgent } from "./load-agent.js";
export type { AgentRegistration } from "./load-fleet-protocol.js";
export {
  FLEET_LOAD_DEFAULTS,
  type FleetLoadOptions,
  type FleetLoadResult,
  type GeneratorLossPolicy,
  runFleetLoad,
} from "./run-fleet-load.js";
