/**
 * The init a worker opens a session from (`openSession`): built by the host for a new or resumed
 * session, and again, with the session's current model and transcript, for a restore (X7).
 */
import { resolve } from "node:path";
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Settings } from "../../shared/settings/settings.js";
import type { ThinkingLevel } from "../../shared/thinking.js";
import type { ModelChange, SessionInit, WorkerNetwork } from "../../shared/wire/protocol.js";
import { toModuleUrl } from "../config/module-url.js";
import { SESSION_DEFAULTS } from "./host-options.js";

/** The session options the init carries (see `SessionOptions` for each). */
export interface SessionInitOptions {
  systemPrompt?: string;
  workerModule?: string | URL;
  workerModuleOptions?: unknown;
  thinkingLevel?: ThinkingLevel;
}

/**
 * A session's init: its model and key (`resolved`), its settings' provider options and permit
 * flag, its worker module (a relative path taken from `cwd`) and the thinking level asked for
 * (`options.thinkingLevel`, else the stored one of a resumed session, else the settings' default;
 * the worker clamps it to the model). Pure.
 */
export function sessionInit(
  sessionId: string,
  resolved: ModelChange,
  settings: Settings,
  messages: AgentMessage[],
  options: SessionInitOptions,
  cwd: string,
  storedThinkingLevel?: ThinkingLevel,
): SessionInit {
  const init: SessionInit = {
    sessionId,
    model: resolved.model,
    systemPrompt: options.systemPrompt ?? SESSION_DEFAULTS.systemPrompt,
    messages,
    provider: { ...settings.retry.provider },
    thinkingLevel: options.thinkingLevel ?? storedThinkingLevel ?? settings.defaultThinkingLevel,
    cwd,
  };
  if (settings.retry.maxConcurrentRequests !== undefined) init.requestPermits = true;
  if (resolved.apiKey !== undefined) init.apiKey = resolved.apiKey;
  if (resolved.authHeader === true) init.authHeader = true;
  if (options.workerModule !== undefined) init.workerModule = toModuleUrl(options.workerModule, cwd);
  if (options.workerModuleOptions !== undefined) init.workerModuleOptions = options.workerModuleOptions;
  const network = workerNetwork(settings, cwd);
  if (network !== undefined) init.network = network;
  return init;
}

/** The settings' network keys for the worker (docs/network.md), `caFile` taken from `cwd`; none set: undefined. */
function workerNetwork(settings: Settings, cwd: string): WorkerNetwork | undefined {
  if (settings.proxy === undefined && settings.noProxy === undefined && settings.caFile === undefined) return undefined;
  const network: WorkerNetwork = {};
  if (settings.proxy !== undefined) network.proxy = settings.proxy;
  if (settings.noProxy !== undefined) network.noProxy = settings.noProxy;
  if (settings.caFile !== undefined) network.caFile = resolve(cwd, settings.caFile);
  return network;
}

/** `init` with the session's current model and key, thinking level and transcript (they may have changed). */
export function withModel(
  init: SessionInit,
  change: ModelChange,
  messages: AgentMessage[],
  thinkingLevel: ThinkingLevel,
): SessionInit {
  const { apiKey: _key, authHeader: _header, ...rest } = init;
  const next: SessionInit = { ...rest, model: change.model, messages, thinkingLevel };
  if (change.apiKey !== undefined) next.apiKey = change.apiKey;
  if (change.authHeader === true) next.authHeader = true;
  return next;
}
