/**
 * The one error class of the mock model server. Its own small union: this zone imports nothing
 * from src/shared, so that the server can be started from any process without lifeline's runtime.
 */

/**
 * - `ERR_MOCK_SCRIPT`: a script (object or file) failed to load or validate; the message names the
 *   file, the line:column or the field path, and what is allowed.
 * - `ERR_MOCK_SERVER`: the server could not start, was used after `close()`, or a wait timed out.
 */
export type MockServerErrorCode = "ERR_MOCK_SCRIPT" | "ERR_MOCK_SERVER";

/** Thrown (or rejected with) by every function of the mock server. Match on `code`, not on text. */
export class MockServerError extends Error {
  readonly code: MockServerErrorCode;

  constructor(code: MockServerErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "MockServerError";
    this.code = code;
  }
}
