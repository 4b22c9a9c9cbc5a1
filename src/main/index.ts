// The main entry, `lifeline`: what a program that embeds session hosts needs, and nothing else:
// the host and its sessions, their options, events and settings, every error class a public call
// throws, reading why a reply failed, the auth and session-store interfaces with their shipped
// implementations, and the types extensions and worker modules are written against.
// Re-exports only. Other uses are subpaths, so that this entry loads none of their code:
// "lifeline/tui" (tui/interactive-mode.ts; pi-tui would otherwise load, and break bundles, in
// every embedding app), "lifeline/rpc" (rpc/index.ts), "lifeline/load" (load/index.ts) and
// "lifeline/mock-server" (src/mock-server/index.ts). docs/api.md, "Entry points", says why.

export type { BashExecutionMessage, BashResult } from "../shared/bash/bash-message.js";
export type { CompactionSummaryMessage } from "../shared/compaction/summary-message.js";
export type { ErrorCode, WireError, WorkerExitCause } from "../shared/errors.js";
export {
  ExtensionLoadError,
  ExtensionUnsupportedError,
  FleetAuthError,
  FleetUnavailableError,
  InvalidSettingsError,
  LifelineError,
  SessionBusyError,
  SessionCrashedError,
  WorkerExitedError,
  WorkerStartError,
} from "../shared/errors.js";
export type * from "../shared/events.js";
export type {
  ExtensionAPI,
  ExtensionContext,
  ExtensionEvent,
  ExtensionEventType,
  ExtensionFactory,
  ExtensionHandler,
  ExtensionLifecycleEvent,
  ExtensionThread,
  ExtensionToolDefinition,
} from "../shared/extensions/extension-api.js";
export type {
  ExtensionUIContext,
  ExtensionUIDialogOptions,
  UiAnswer,
  UiDialogRequest,
  UiNotice,
  UiRequest,
  UiTransport,
} from "../shared/extensions/extension-ui.js";
export type { ClassifiableMessage, Classification, FailureClass } from "../shared/failures/classify.js";
export { explainMessage } from "../shared/failures/classify.js";
export type { RequestFailure } from "../shared/failures/request-failure.js";
export { requestFailureOf } from "../shared/failures/request-failure.js";
export type { RequestTiming, ToolTiming } from "../shared/request-timing.js";
export type {
  CompactionSettings,
  RetryBudgetSettings,
  RetrySettings,
  Settings,
  SettingsInput,
  SupervisionSettings,
} from "../shared/settings/settings.js";
export { DEFAULT_SETTINGS } from "../shared/settings/settings.js";
export { THINKING_LEVELS, type ThinkingLevel } from "../shared/thinking.js";
export type { ModelRef, ProviderOverrides, QueueMode } from "../shared/wire/protocol.js";
export type { WorkerModuleContext, WorkerModuleSetup, WorkerModuleSetupFn } from "../shared/worker-module.js";
export type {
  AuthStorage,
  LimitKind,
  UsageLimitInfo,
  UsageLimitOutcome,
  UsageLimitRecord,
} from "./auth/auth-storage.js";
export { InMemoryAuthStorage } from "./auth/auth-storage.js";
export { type AuthEntry, FileAuthStorage, type FileAuthStorageOptions } from "./auth/file-auth-storage.js";
export type {
  ContextOverflowAnswer,
  ContextOverflowHook,
  ContextOverflowInfo,
} from "./compaction/context-overflow-hook.js";
export type { CoordinationState } from "./coordination/session-coordination.js";
export type { ResumeOptions, SessionHostOptions, SessionOptions } from "./host/host-options.js";
export type { PruneOptions, PruneResult } from "./host/prune-options.js";
export type { ForkOptions, ForkResult } from "./host/session-forks.js";
export { createSessionHost, SessionHost } from "./host/session-host.js";
export { AgentSession } from "./session/agent-session.js";
export type { QueueKind } from "./session/commands/queued-messages.js";
export type { BashOptions } from "./session/commands/session-bash.js";
export type { PromptOptions } from "./session/prompt/pending-prompt.js";
export type { PromptRecord } from "./session/prompt/prompt-records.js";
export type { SessionListener } from "./session/state/session-listeners.js";
export type { ContextUsage, SessionStats } from "./session/state/session-stats.js";
export { FileSessionStore, type FileSessionStoreOptions } from "./session-files/file-session-store.js";
export type { FsyncPolicy } from "./session-files/persistence-queue.js";
export type { ForkMessage, ForkPosition } from "./session-files/session-fork.js";
export type {
  CompactionEntry,
  CustomEntry,
  EntryBase,
  MessageEntry,
  ModelChangeEntry,
  OtherEntry,
  SessionEntry,
  SessionHeader,
  ThinkingLevelChangeEntry,
} from "./session-files/session-format.js";
export type { SessionsOptions } from "./session-files/session-persistence.js";
export type {
  OpenedSession,
  SessionInfo,
  SessionStore,
  SessionWriter,
  StoredSession,
} from "./session-files/session-store.js";
export type {
  TelemetryMeterProvider,
  TelemetryOptions,
  TelemetryTracerProvider,
} from "./telemetry/telemetry-options.js";
