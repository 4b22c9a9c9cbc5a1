/**
 * The fault-injecting model server: OpenAI chat completions and Anthropic messages on 127.0.0.1,
 * scripted per conversation, for chaos and load tests of code that calls models.
 * See docs/mock-server.md.
 */
export { MockServerError, type MockServerErrorCode } from "./errors.js";
export { type MockServer, type MockServerOptions, startMockServer } from "./mock-server.js";
export { CONVERSATION_HEADER } from "./model-request.js";
export type { MockRequestRecord, MockStats, Outcome } from "./request-log.js";
export {
  DEFAULT_REPLY,
  DEFAULT_TOOL_NAME,
  loadMockScript,
  type MockScript,
  type MockScriptInput,
  type MockStep,
  type MockStepInput,
  parseMockScript,
  STEP_KINDS,
  type StepKind,
} from "./script.js";
export type { MockUsage, WireApi } from "./wire.js";
