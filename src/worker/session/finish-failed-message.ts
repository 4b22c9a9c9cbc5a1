/**
 * Finishes an assistant message that ended in an error, before it leaves the worker (SPEC B2, X6):
 * it gets what its request exposed and, when it is one, the context-overflow mark (R1); a server
 * that could not be reached or not be trusted is named, and no key the server echoed survives in it.
 */
import { type AssistantMessage, isContextOverflow } from "@mariozechner/pi-ai";
import { redactSecrets, redactStrings } from "../../shared/failures/redact.js";
import { attachRequestFailure, markOverflow, type RequestFailure } from "../../shared/failures/request-failure.js";
import { proxiesInUse } from "../network/network-setup.js";

/**
 * B2/X6: a failed reply carries what its request exposed (message_end's object is the
 * transcript's, so the run tail and later events carry it too); an unreachable server is named;
 * and a key the server echoed in its error text, type, code or retry headers never leaves the
 * worker. Edits `message` in place; safe to call again on the same message. `proxies`: those the
 * request may have gone through (docs/network.md), named in the unreachable hint. R1: pi-ai's
 * overflow test (on the server's own text, before any hint is added) marks the message, for the
 * main thread's classifier; `contextWindow` is the model's (0 or less when unknown).
 */
export function finishFailedMessage(
  message: AssistantMessage,
  failure: RequestFailure | undefined,
  secrets: readonly string[],
  contextWindow: number,
  proxies: readonly string[] = proxiesInUse(),
): void {
  markIfOverflow(message, contextWindow);
  // Every string of the record may be the server's (type, code, header values, socket message).
  if (failure !== undefined) attachRequestFailure(message, redactStrings(failure, secrets), Date.now());
  if (message.errorMessage === undefined) return;
  const hinted =
    message.errorMessage.endsWith(HINT_END) || message.errorMessage.endsWith(TLS_HINT_END)
      ? message.errorMessage
      : message.errorMessage +
        unreachableHint(failure, message.provider, proxies) +
        untrustedHint(failure, message.provider);
  message.errorMessage = redactSecrets(hinted, secrets);
}

/** Socket errors that mean the server was never reached (as opposed to reached, then lost). */
const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);
const HINT_END = "; check its baseUrl and that the server is running)";

/**
 * What to do about a server that could not be reached: pi-ai reports only "Connection error.",
 * which names neither the address nor the provider. Behind a proxy the refusal may be the proxy's
 * (the socket error does not say whose), so the proxy is named too.
 */
function unreachableHint(failure: RequestFailure | undefined, provider: string, proxies: readonly string[]): string {
  const network = failure?.network;
  if (network?.phase !== "request" || network.code === undefined || !UNREACHABLE_CODES.has(network.code)) return "";
  const where = network.origin === undefined ? "" : ` ${network.origin}`;
  const via = proxies.length === 0 ? "" : `, directly or through the proxy ${proxies.join(" or ")}`;
  return ` (could not reach${where} for provider "${provider}": ${network.code}${via}${HINT_END}`;
}

/**
 * Node's codes for a server certificate that TLS would not trust (OpenSSL's verify errors, and
 * Node's own for a name mismatch): behind a proxy that inspects TLS, or with a server of an
 * in-house CA, the cure is to trust that CA.
 */
const UNTRUSTED_CODES = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_UNTRUSTED",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);
const TLS_HINT_END =
  "; if a proxy or the server uses a CA of your own, trust it with the caFile setting or NODE_EXTRA_CA_CERTS, docs/network.md)";

/**
 * What to do about a certificate TLS did not trust: pi-ai reports only "Connection error.", which
 * names neither the server nor the certificate problem.
 */
function untrustedHint(failure: RequestFailure | undefined, provider: string): string {
  const network = failure?.network;
  if (network?.phase !== "request" || network.code === undefined || !UNTRUSTED_CODES.has(network.code)) return "";
  const where = network.origin === undefined ? "" : ` of ${network.origin}`;
  return ` (the TLS certificate${where} for provider "${provider}" is not trusted: ${network.code}, ${network.message}${TLS_HINT_END}`;
}

/** R1: marks `message` (a failed reply) when pi-ai's `isContextOverflow` says it is an overflow. */
export function markIfOverflow(message: AssistantMessage, contextWindow: number): void {
  if (isContextOverflow(message, contextWindow > 0 ? contextWindow : undefined)) markOverflow(message, Date.now());
}
