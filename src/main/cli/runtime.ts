/**
 * What carries out a command once its flags are resolved: one call per command, each taking the
 * typed options the library takes (the request) and resolving to the exit code. The process's
 * runtime imports each mode only when its command runs, so `--help` and a mistyped flag load the
 * CLI's dispatch alone; the flag table test (test/main/cli/flag-table.test.ts) puts a recording
 * runtime in its place to check, flag by flag, what each call receives.
 */

import type { MockServerCommandRequest } from "../../mock-server/mock-server-command.js";
import type { AuthCommandRequest } from "../auth/auth-command.js";
import type { ServeCommandRequest, SubmitCommandRequest } from "../fleet/serve-command.js";
import type { PrintModeOptions } from "../host/print-mode.js";
import type {
  DeleteCommandRequest,
  ExportCommandRequest,
  PruneCommandRequest,
  SessionsCommandRequest,
} from "../host/stored-sessions-command.js";
import type { CompareCommandRequest } from "../load/compare/compare-command.js";
import type { LoadCommandRequest } from "../load/load-command.js";
import type { MergeCommandRequest } from "../load/merge/merge-command.js";
import type { LoadAgentCommandRequest } from "../load-fleet/load-fleet-command.js";
import type { HostModeOptions } from "../rpc/host/host-mode.js";
import type { RpcModeOptions } from "../rpc/rpc-mode.js";
import type { InteractiveOptions } from "../tui/interactive-mode.js";

/** One call per command; each resolves to the command's exit code. */
export interface CliRuntime {
  print(options: PrintModeOptions): Promise<number>;
  rpc(options: RpcModeOptions): Promise<number>;
  host(options: HostModeOptions): Promise<number>;
  interactive(options: InteractiveOptions): Promise<number>;
  auth(request: AuthCommandRequest): Promise<number>;
  mockServer(request: MockServerCommandRequest): Promise<number>;
  load(request: LoadCommandRequest): Promise<number>;
  loadMerge(request: MergeCommandRequest): Promise<number>;
  loadCompare(request: CompareCommandRequest): Promise<number>;
  loadAgent(request: LoadAgentCommandRequest): Promise<number>;
  serve(request: ServeCommandRequest): Promise<number>;
  submit(request: SubmitCommandRequest): Promise<number>;
  exportSession(request: ExportCommandRequest): Promise<number>;
  listSessions(request: SessionsCommandRequest): Promise<number>;
  deleteSession(request: DeleteCommandRequest): Promise<number>;
  pruneSessions(request: PruneCommandRequest): Promise<number>;
}

/** The runtime of the `lifeline` process: each mode imported when its command runs. */
export const processRuntime: CliRuntime = {
  print: async (options) => (await import("../host/print-mode.js")).runPrintMode(options),
  rpc: async (options) => (await import("../rpc/rpc-mode.js")).runRpcMode(options),
  host: async (options) => (await import("../rpc/host/host-mode.js")).runHostMode(options),
  interactive: async (options) => (await import("../tui/interactive-mode.js")).runInteractive(options),
  auth: async (request) => (await import("../auth/auth-command.js")).runAuthCommand(request),
  mockServer: async (request) =>
    (await import("../../mock-server/mock-server-command.js")).runMockServerCommand(request),
  load: async (request) => {
    const { runLoadCommand } = await import("../load/load-command.js");
    if (request.distributed === undefined) return runLoadCommand(request);
    const { runDistributedLoad } = await import("../load-fleet/load-fleet-command.js");
    return runLoadCommand(request, runDistributedLoad);
  },
  loadMerge: async (request) => (await import("../load/merge/merge-command.js")).runMergeCommand(request),
  loadCompare: async (request) => (await import("../load/compare/compare-command.js")).runCompareCommand(request),
  loadAgent: async (request) => (await import("../load-fleet/load-fleet-command.js")).runLoadAgentCommand(request),
  serve: async (request) => (await import("../fleet/serve-command.js")).runServeCommand(request),
  submit: async (request) => (await import("../fleet/serve-command.js")).runSubmitCommand(request),
  exportSession: async (request) => (await import("../host/stored-sessions-command.js")).runExportCommand(request),
  listSessions: async (request) => (await import("../host/stored-sessions-command.js")).runSessionsCommand(request),
  deleteSession: async (request) => (await import("../host/stored-sessions-command.js")).runDeleteCommand(request),
  pruneSessions: async (request) => (await import("../host/stored-sessions-command.js")).runPruneCommand(request),
};
