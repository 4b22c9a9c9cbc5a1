/**
 * The CLI's `/metrics` (B9, `--metrics-port` of `lifeline serve` and `lifeline load`): a meter
 * provider of the OpenTelemetry SDK whose reader is OpenTelemetry's Prometheus exporter, served
 * over HTTP by lifeline's own server (so the port is known once it listens, `0` included, and
 * closing it is bounded). Prometheus names follow the exporter's rules: dots become underscores,
 * counters end in `_total` (the 0.2xx exporter appends no unit) (`lifeline.model.attempts` →
 * `lifeline_model_attempts_total`); the resource's attributes appear once, on `target_info`.
 *
 * The SDK and the exporter are optional peer dependencies, loaded with `import()` only here; when
 * they are missing the call fails with ERR_TELEMETRY_UNAVAILABLE naming the `npm install` to run.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { LifelineError } from "../../shared/errors.js";
import type { TelemetryMeterProvider } from "./telemetry-options.js";

/** The command that installs what the endpoint needs (versions of the SDK's Node 20 line). */
const METRICS_INSTALL =
  "npm install @opentelemetry/api@^1.9.0 @opentelemetry/sdk-metrics@^2.0.0 @opentelemetry/resources@^2.0.0 @opentelemetry/exporter-prometheus@^0.200.0";

/** A running endpoint. */
export interface MetricsEndpoint {
  /** Record into this (the host's `telemetry.meterProvider`). */
  meterProvider: TelemetryMeterProvider;
  /** The port it listens on. */
  port: number;
  /** Stops the server and the meter provider. Idempotent; never rejects. */
  close(): Promise<void>;
}

/** Options of {@link startMetricsEndpoint}. */
export interface MetricsEndpointOptions {
  /** 0 picks a free port. */
  port: number;
  /** @default "0.0.0.0" (every interface: Prometheus scrapes from elsewhere) */
  host?: string;
  /** Resource attributes (`service.name` is `lifeline` unless given); they reach Prometheus as `target_info`. */
  resource?: Record<string, string>;
}

/**
 * Starts `/metrics` on `port`.
 * @throws ERR_TELEMETRY_UNAVAILABLE when the optional packages are missing or the port cannot be used.
 */
export async function startMetricsEndpoint(options: MetricsEndpointOptions): Promise<MetricsEndpoint> {
  const [sdk, prometheus, resources] = await Promise.all([
    import("@opentelemetry/sdk-metrics"),
    import("@opentelemetry/exporter-prometheus"),
    import("@opentelemetry/resources"),
  ]).catch((error: unknown) => {
    throw new LifelineError(
      "ERR_TELEMETRY_UNAVAILABLE",
      `--metrics-port needs the OpenTelemetry SDK and its Prometheus exporter, which are optional: run ${METRICS_INSTALL}`,
      { cause: error },
    );
  });
  const exporter = new prometheus.PrometheusExporter({ preventServerStart: true });
  const meterProvider = new sdk.MeterProvider({
    readers: [exporter],
    resource: resources.resourceFromAttributes({ "service.name": "lifeline", ...options.resource }),
  });
  const server = createServer((request, response) => {
    if (request.url?.split("?")[0] === "/metrics") exporter.getMetricsRequestHandler(request, response);
    else response.writeHead(404, { "content-type": "text/plain" }).end("Not found: metrics are at /metrics\n");
  });
  try {
    await listen(server, options.port, options.host ?? "0.0.0.0");
  } catch (error) {
    await meterProvider.shutdown().catch(() => {});
    throw new LifelineError(
      "ERR_TELEMETRY_UNAVAILABLE",
      `Cannot serve /metrics on port ${options.port}: ${error instanceof Error ? error.message : String(error)}. Pick another --metrics-port.`,
      { cause: error },
    );
  }
  let closing: Promise<void> | undefined;
  return {
    meterProvider,
    port: (server.address() as AddressInfo).port,
    close: () => {
      closing ??= (async () => {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await meterProvider.shutdown().catch(() => {});
      })();
      return closing;
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}
