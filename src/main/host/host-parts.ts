/**
 * The parts a `SessionHost` owns, made together because they refer to one another (the roster
 * asks coordination for permits and tells telemetry of exits; joining a fleet moves the session
 * files and coordination onto its Redis), and closed together in the one order that loses nothing.
 * Called by `SessionHost` only: its constructor and its `close()`.
 */

import { toModuleUrl } from "../config/module-url.js";
import { HostCoordination } from "../coordination/host-coordination.js";
import { permitBridge } from "../coordination/permit-bridge.js";
import type { ExtensionRunner } from "../extensions/extension-runner.js";
import { abortableSleep } from "../retry/sleep.js";
import type { AgentSession } from "../session/agent-session.js";
import { SessionPersistence } from "../session-files/session-persistence.js";
import { HostTelemetry } from "../telemetry/host-telemetry.js";
import { TurnPacer } from "../workers/turn-pacer.js";
import { WorkerRoster } from "../workers/worker-roster.js";
import { HostConfig } from "./host-config.js";
import { HostFleet } from "./host-fleet.js";
import { hostInternals } from "./host-internals.js";
import { CONTROL_TIMEOUT_MS, HOST_DEFAULTS, type SessionHostOptions } from "./host-options.js";
import { SessionAssembly } from "./session-assembly.js";

/** One host's parts. */
export interface HostParts {
  /** Settings files, models.json, the auth storage, model resolution (host-config.ts). */
  config: HostConfig;
  /** The workers: pool, watchdog, where sessions go (workers/worker-roster.ts). */
  workers: WorkerRoster;
  /** Session files (B7): stores, recorders, and closing them before `close()` resolves. */
  files: SessionPersistence;
  /**
   * B8: retry budgets, provider gates and request permits shared by every session of this host.
   * Real time always: a gate's reopening is the server's clock, not a test's retry sleep.
   */
  coordination: HostCoordination;
  /** Fleet mode: the connection to the fleet's Redis, made with the first session (host-fleet.ts). */
  fleet: HostFleet;
  /** B9: the host's metrics and spans (telemetry/host-telemetry.ts); records nothing without a provider. */
  telemetry: HostTelemetry;
  /** Builds each new or resumed session from the parts above (session-assembly.ts). */
  assembly: SessionAssembly;
  /** The host's extensions (the `extensions` option); undefined without any. */
  extensions: ExtensionRunner | undefined;
}

/** What the parts need of the host that owns them. */
export interface HostOwner {
  /** The host's open sessions by id, which the assembly adds to and a disposed session leaves. */
  sessions: Map<string, AgentSession>;
  isClosed(): boolean;
  /** @throws ERR_HOST_CLOSED once the host is closed. */
  assertOpen(): void;
}

/** Makes a host's parts; nothing starts (no worker, no file read, no socket) until a session opens. */
export function makeHostParts(
  options: SessionHostOptions,
  extensions: ExtensionRunner | undefined,
  owner: HostOwner,
): HostParts {
  const { sessions } = owner;
  const config = new HostConfig(options);
  const coordination = new HostCoordination({ now: () => performance.now(), sleep: abortableSleep });
  const files = new SessionPersistence({
    sessions: options.sessions,
    lifelineDir: () => config.lifelineDir(),
    cwd: () => config.cwd(),
  });
  const fleet = new HostFleet(
    () => config.sessionSettings(undefined),
    async (connection) => {
      files.joinFleet(connection);
      // B8 fleet-wide; a fallback to the host's own decisions and the rejoin are told to its sessions.
      await coordination.joinFleet(connection, (event) => {
        for (const session of sessions.values()) session.announceCoordination(event);
      });
    },
  );
  const telemetry: HostTelemetry = new HostTelemetry(options.telemetry, {
    sessionCount: () => sessions.size,
    coordination: () => coordination.snapshot(),
    workerThreads: () => workers.threads,
    watchWorkerLoops: () => workers.watchEventLoops(),
  });
  const callTimeoutMs = options.callTimeoutMs ?? HOST_DEFAULTS.callTimeoutMs;
  // One pacer for the host's bursts: prompts admitted, retries woken, run ops' answers settled.
  const pacer = new TurnPacer();
  const workers: WorkerRoster = new WorkerRoster({
    threads: options.threads ?? HOST_DEFAULTS.threads(),
    callTimeoutMs,
    setupTimeoutMs: options.setupTimeoutMs ?? HOST_DEFAULTS.setupTimeoutMs,
    controlTimeoutMs: Math.min(callTimeoutMs, CONTROL_TIMEOUT_MS),
    hangTimeoutMs: options.hangTimeoutMs ?? HOST_DEFAULTS.hangTimeoutMs,
    workerEntry:
      options.workerEntry === undefined
        ? new URL("../../worker/entry.js", import.meta.url).href
        : toModuleUrl(options.workerEntry, options.cwd ?? process.cwd()),
    resourceLimits: options.resourceLimits,
    batchIntervalMs: options.batchIntervalMs,
    workerPriority: options.workerPriority,
    connect: hostInternals(options).connect,
    isClosed: owner.isClosed,
    permits: permitBridge(coordination, (sessionId) => sessions.get(sessionId)?.permitTarget),
    onWorkerExit: (cause) => telemetry.workerExited(cause),
    onLoopDelay: (threadId, delay) => telemetry.workerLoopDelay(threadId, delay),
    ui: options.extensionUi,
    pacer,
  });
  const assembly = new SessionAssembly({
    options,
    config,
    workers,
    files,
    coordination,
    fleet,
    extensions,
    telemetry,
    pacer,
    sessions,
    assertOpen: owner.assertOpen,
  });
  return { config, workers, files, coordination, fleet, telemetry, assembly, extensions };
}

/**
 * Closes the parts after the host is marked closed: every open session disposed, then the
 * extensions, session files, workers, fleet coordination, telemetry and the fleet connection.
 * Bounded even with a worker stuck in synchronous code (the roster's control bound).
 */
export async function closeHostParts(parts: HostParts, sessions: Iterable<AgentSession>): Promise<void> {
  // Concurrently: each worker gets its sessions' closeSession calls before its shutdown (one
  // FIFO port), and a stuck worker costs one control bound, not one per step.
  await Promise.all([...[...sessions].map((session) => session.dispose()), parts.workers.closeLinks()]);
  // Extensions' handlers see the sessions' last events and session_shutdown (bounded).
  await parts.extensions?.drain();
  // Every accepted entry is on disk (per the fsync policy) and every lock released.
  await parts.files.closeAll();
  await parts.workers.destroy();
  parts.coordination.leaveFleet();
  parts.telemetry.close();
  await parts.fleet.close();
}
