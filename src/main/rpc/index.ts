/**
 * `lifeline/rpc`: `RpcClient`, which drives `lifeline --mode rpc` in a child process, and the
 * types of the protocol it speaks (pi's RPC protocol, JSONL on stdin/stdout), and of host mode's
 * (`lifeline --mode host`: pi's protocol in a session envelope, many sessions per connection). RPC mode itself is
 * the CLI's (`lifeline --mode rpc`): it owns its process's stdin, stdout and signals, so it is no
 * library call. Re-exports only; see docs/rpc.md.
 */

export type { ThinkingLevel } from "../../shared/thinking.js";
export type { ContextUsage, SessionStats } from "../session/state/session-stats.js";
export type {
  HostCommand,
  HostCommandType,
  HostErrorResponse,
  HostEvent,
  HostEventEnvelope,
  HostOnlyCommand,
  HostOutput,
  HostResponse,
  HostResponseData,
  HostSessionInfo,
  HostSuccessResponse,
} from "./host/host-protocol.js";
export { RpcClient, type RpcClientOptions } from "./rpc-client.js";
export type { RpcExtensionUiAnswer, RpcExtensionUiHandler } from "./rpc-client-ui.js";
export type {
  RpcCommand,
  RpcCommandType,
  RpcEvent,
  RpcExtensionUiRequest,
  RpcExtensionUiResponse,
  RpcOutput,
  RpcResponse,
  RpcResponseData,
  RpcSessionState,
  RpcSlashCommand,
} from "./rpc-protocol.js";
