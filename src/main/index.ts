// The public API of lifeline. Re-exports only. Nothing of the terminal UI: `runInteractive` is
// the subpath "lifeline/tui" (pi-tui would otherwise load, and break bundles, in every embedding app).

export {
  CONVERSATION_HEADER,
  loadMockScript,
  type MockRequestRecord,
  type MockScript,
  type MockScriptInput,
  type MockServer,
  MockServerError,
  type MockServerOptions,
  type MockStats,
  type MockStep,
  type Outcome as MockOutcome,
  parseMockScript,
  startMockServer,
} from "../mock-server/index.js";
export type { ClassifiableMessage, Classification, FailureClass, RetryHints } from "../shared/classify.js";
export {
  classifyMessage,
  explainMessage,
  isRetryableErrorText,
  parseRetryHeaders,
  parseRetryHintsFromText,
  retryHintsOf,
} from "../shared/classify.js";
export type { CompactionSummaryMessage } from "../shared/compaction/summary-message.js";
export type { ErrorCode, WireError } from "../shared/errors.js";
export {
  ExtensionLoadError,
  ExtensionUnsupportedError,
  InvalidSettingsError,
  LifelineError,
  SessionBusyError,
  WorkerExitedError,
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
export type { ModelRef, ProviderOverrides } from "../shared/protocol.js";
export type { RequestFailure } from "../shared/request-failure.js";
export { REQUEST_FAILURE_DIAGNOSTIC, requestFailureOf } from "../shared/request-failure.js";
export type { CompactionSettings, RetrySettings, Settings, SettingsInput } from "../shared/settings.js";
export { DEFAULT_SETTINGS, parseSettings } from "../shared/settings.js";
export type { WorkerModuleContext, WorkerModuleSetup, WorkerModuleSetupFn } from "../shared/worker-module.js";
export { authPath } from "./auth/auth-file.js";
export type {
  AuthStorage,
  LimitKind,
  UsageLimitInfo,
  UsageLimitOutcome,
  UsageLimitRecord,
} from "./auth/auth-storage.js";
export { InMemoryAuthStorage } from "./auth/auth-storage.js";
export { type AuthEntry, FileAuthStorage, type FileAuthStorageOptions } from "./auth/file-auth-storage.js";
export { DEFAULT_BLOCK_MS } from "./auth/key-pool.js";
export type { ModelsConfig } from "./config/models-config.js";
export { loadModelsConfig, modelsPath, parseModelsConfig } from "./config/models-config.js";
export { loadSettingsFiles, resolveLifelineDir, writeUserSettings } from "./config/settings-store.js";
export type { ResumeOptions, SessionHostOptions, SessionOptions } from "./host/host-options.js";
export { createSessionHost, SessionHost } from "./host/session-host.js";
export type { LoadProgress, PromptRecord, RequestRecord } from "./load/load-metrics.js";
export type { FaultKind, LoadFault, LoadOptions } from "./load/load-options.js";
export { type LoadReport, REPORT_SCHEMA as LOAD_REPORT_SCHEMA } from "./load/load-report.js";
export { type LoadResult, runLoad } from "./load/run-load.js";
export { THRESHOLD_METRICS, type ThresholdMetric, type ThresholdResult } from "./load/thresholds.js";
export type { RetryActions, RetryControllerOptions, RetryDecision, RetryMessage } from "./retry/retry-controller.js";
export { RETRY_CANCELLED, RetryController } from "./retry/retry-controller.js";
export {
  attachJsonlReader,
  type JsonlReaderHandlers,
  type JsonlReaderOptions,
  serializeJsonLine,
} from "./rpc/jsonl.js";
export { RpcClient, type RpcClientOptions } from "./rpc/rpc-client.js";
export type { RpcModeOptions } from "./rpc/rpc-mode.js";
export { runRpcMode } from "./rpc/rpc-mode.js";
export type {
  RpcCommand,
  RpcCommandType,
  RpcEvent,
  RpcOutput,
  RpcResponse,
  RpcResponseData,
  RpcSessionState,
} from "./rpc/rpc-protocol.js";
export type {
  ContextOverflowAnswer,
  ContextOverflowHook,
  ContextOverflowInfo,
  PromptOptions,
} from "./session/agent-session.js";
export { AgentSession } from "./session/agent-session.js";
export type { SessionListener } from "./session/session-listeners.js";
export { FileSessionStore, type FileSessionStoreOptions } from "./session-files/file-session-store.js";
export type { FsyncPolicy } from "./session-files/persistence-queue.js";
export type {
  CompactionEntry,
  CustomEntry,
  EntryBase,
  MessageEntry,
  ModelChangeEntry,
  OtherEntry,
  SessionEntry,
  SessionHeader,
} from "./session-files/session-format.js";
export type { SessionsOptions } from "./session-files/session-persistence.js";
export type { OpenedSession, SessionInfo, SessionStore, SessionWriter } from "./session-files/session-store.js";
