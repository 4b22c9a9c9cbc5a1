/**
 * The tools of an agentic load run: how often the built-in mock answers with tool calls
 * (`--tool-calls`, `--tool-turns`), and what the load tool does in the sessions' workers
 * (`--tool-latency`, `--tool-cpu`, `--tool-failure`). The tool itself is a worker module
 * (src/worker/load/load-tool.ts), named here by URL and given only to load sessions.
 */
import { LOAD_TOOL_NAME, type LoadToolConfig } from "../../../shared/load-tool.js";

/** The built-in mock's tool calls (report.json `config.mock.tools`). */
export interface MockTools {
  /** Chance, per model request the mock would answer normally, that it calls tools instead. */
  probability: number;
  /** Calls in one such answer. @default 1 */
  calls?: number;
  /**
   * Most tool-call answers one prompt gets: past them the mock answers with text, so a prompt
   * makes at most `maxTurns + 1` turns. @default 1
   */
  maxTurns?: number;
}

/** What the load tool does on each call (report.json `config.tools`, with the tool's name). */
export interface LoadToolBehaviour {
  /** Time each call waits (a timer), in ms. @default 0 */
  latencyMs?: number;
  /** Time each call keeps its worker busy in synchronous code, in ms. @default 0 */
  cpuMs?: number;
  /** Probability that a call throws (the model gets an error result). @default 0 */
  failureRate?: number;
}

/** Defaults of {@link MockTools} and {@link LoadToolBehaviour}. */
const TOOL_DEFAULTS = { calls: 1, maxTurns: 1, latencyMs: 0, cpuMs: 0, failureRate: 0 } as const;

/** `tools` with its defaults filled in, as report.json shows it. */
export function fullMockTools(tools: MockTools): Required<MockTools> {
  return {
    probability: tools.probability,
    calls: tools.calls ?? TOOL_DEFAULTS.calls,
    maxTurns: tools.maxTurns ?? TOOL_DEFAULTS.maxTurns,
  };
}

/** `behaviour` with its defaults filled in and the tool's name, as report.json shows it. */
export function fullToolBehaviour(behaviour: LoadToolBehaviour): Required<LoadToolBehaviour> & { name: string } {
  return {
    name: LOAD_TOOL_NAME,
    latencyMs: behaviour.latencyMs ?? TOOL_DEFAULTS.latencyMs,
    cpuMs: behaviour.cpuMs ?? TOOL_DEFAULTS.cpuMs,
    failureRate: behaviour.failureRate ?? TOOL_DEFAULTS.failureRate,
  };
}

/** The mock script's `toolCalls` entry for `tools` (docs/mock-server.md): calls of the load tool. */
export function mockToolCalls(tools: MockTools): Record<string, unknown> {
  return { ...fullMockTools(tools), name: LOAD_TOOL_NAME };
}

/**
 * The session options that give session number `session` of a run the load tool: the worker
 * module by URL (main never imports the worker zone) and its plain-data config.
 */
export function loadToolSessionOptions(
  behaviour: LoadToolBehaviour,
  seed: number,
  session: number,
): { workerModule: URL; workerModuleOptions: LoadToolConfig } {
  const { latencyMs, cpuMs, failureRate } = fullToolBehaviour(behaviour);
  return {
    workerModule: new URL("../../../worker/load/load-tool.js", import.meta.url),
    workerModuleOptions: { latencyMs, cpuMs, failureRate, seed, stream: session },
  };
}
