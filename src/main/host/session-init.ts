/**
 * The init a worker opens a session from (`openSession`): built by the host for a new or resumed
 * session, and again, with the session's current model and transcript, for a restore (X7).
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { ModelChange, SessionInit } from "../../shared/protocol.js";
import type { Settings } from "../../shared/settings.js";
import { toModuleUrl } from "../config/module-url.js";
import { SESSION_DEFAULTS } from "./host-options.js";

/** The session options the init carries (see `SessionOptions` for each). */
export interface SessionInitOptions {
  systemPrompt?: string;
  workerModule?: string | URL;
  workerModuleOptions?: unknown;
}

/**
 * A session's init: its model and key (`resolved`), its settings' provider options and permit
 * flag, and its worker module (a relative path taken from `cwd`). Pure.
 */
export function sessionInit(
  sessionId: string,
  resolved: ModelChange,
  settings: Settings,
  messages: AgentMessage[],
  options: SessionInitOptions,
  cwd: string,
): SessionInit {
  const init: SessionInit = {
    sessionId,
    model: resolved.model,
    systemPrompt: options.systemPrompt ?? SESSION_DEFAULTS.systemPrompt,
    messages,
    provider: { ...settings.retry.provider },
    cwd,
  };
  if (settings.retry.maxConcurrentRequests !== undefined) init.requestPermits = true;
  if (resolved.apiKey !== undefined) init.apiKey = resolved.apiKey;
  if (resolved.authHeader === true) init.authHeader = true;
  if (options.workerModule !== undefined) init.workerModule = toModuleUrl(options.workerModule, cwd);
  if (options.workerModuleOptions !== undefined) init.workerModuleOptions = options.workerModuleOptions;
  return init;
}

/** `init` with the session's current model and key (they may have changed) and transcript. */
export function withModel(init: SessionInit, change: ModelChange, messages: AgentMessage[]): SessionInit {
  const { apiKey: _key, authHeader: _header, ...rest } = init;
  const next: SessionInit = { ...rest, model: change.model, messages };
  if (change.apiKey !== undefined) next.apiKey = change.apiKey;
  if (change.authHeader === true) next.authHeader = true;
  return next;
}
