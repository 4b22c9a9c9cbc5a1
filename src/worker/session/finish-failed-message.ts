/**
 * Finishes an assistant message that ended in an error, before it leaves the worker (SPEC B2, X6):
 * it gets what its request exposed and, when it is one, the context-overflow mark (R1); a server
 * that could not be reached is named, and no key the server echoed survives in it.
 */
import { type AssistantMessage, isContextOverflow } from "@mariozechner/pi-ai";
import { redactSecrets, redactStrings } from "../../shared/redact.js";
import { attachRequestFailure, markOverflow, type RequestFailure } from "../../shared/request-failure.js";

/**
 * B2/X6: a failed reply carries what its request exposed (message_end's object is the
 * transcript's, so the run tail and later events carry it too); an unreachable server is named;
 * and a key the server echoed in its error text, type, code or retry headers never leaves the
 * worker. R1: pi-ai's overflow test (on the server's own text, before any hint is added) marks
 * the message, for the main thread's classifier. Edits `message` in place; safe to call again on
 * the same message.
 * @param contextWindow the model's; 0 or less when unknown.
 */
export function finishFailedMessage(
  message: AssistantMessage,
  failure: RequestFailure | undefined,
  secrets: readonly string[],
  contextWindow: number,
): void {
  markIfOverflow(message, contextWindow);
  // Every string of the record may be the server's (type, code, header values, socket message).
  if (failure !== undefined) attachRequestFailure(message, redactStrings(failure, secrets), Date.now());
  if (message.errorMessage === undefined) return;
  const hinted = message.errorMessage.endsWith(HINT_END)
    ? message.errorMessage
    : message.errorMessage + unreachableHint(failure, message.provider);
  message.errorMessage = redactSecrets(hinted, secrets);
}

/** Socket errors that mean the server was never reached (as opposed to reached, then lost). */
const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);
const HINT_END = "; check its baseUrl and that the server is running)";

/**
 * What to do about a server that could not be reached: pi-ai reports only "Connection error.",
 * which names neither the address nor the provider.
 */
function unreachableHint(failure: RequestFailure | undefined, provider: string): string {
  const network = failure?.network;
  if (network?.phase !== "request" || network.code === undefined || !UNREACHABLE_CODES.has(network.code)) return "";
  const where = network.origin === undefined ? "" : ` ${network.origin}`;
  return ` (could not reach${where} for provider "${provider}": ${network.code}${HINT_END}`;
}

/** R1: marks `message` (a failed reply) when pi-ai's `isContextOverflow` says it is an overflow. */
export function markIfOverflow(message: AssistantMessage, contextWindow: number): void {
  if (isContextOverflow(message, contextWindow > 0 ? contextWindow : undefined)) markOverflow(message, Date.now());
}
