/**
 * The telemetry group (B9): `--metrics-port`, OpenTelemetry metrics served for Prometheus while
 * the command runs. Taken by the commands whose host runs sessions for a while, `load` and
 * `serve`; the endpoint itself is telemetry/metrics-endpoint.ts, started by the command's runner.
 */
import { valueFlag } from "../flag.js";
import { port } from "../flag-values.js";

/** The telemetry group's flag. */
export const telemetryFlags = {
  metricsPort: valueFlag(
    "--metrics-port <port>",
    "serve OpenTelemetry metrics for Prometheus at http://<host>:<port>/metrics while the command runs, 0 for any free port (needs the optional SDK packages: docs/observability.md)",
    port,
  ),
} as const;
