/**
 * The API key of a session's model requests, set when the session opens and on every model
 * switch. Every key a session has used is kept for redaction (X6: a key never leaves the worker).
 */
import { type Api, getEnvApiKey, type Model } from "@mariozechner/pi-ai";
import { LifelineError } from "../../shared/errors.js";
import { missingKeyMessages } from "../../shared/settings/provider-keys.js";

/**
 * The key a session's requests use. Every key it has used stays in `secrets`, so a key replaced
 * by `setModel` is still redacted from late error texts.
 */
export class Credentials {
  /** The key of the next request; undefined for an API that needs none. */
  apiKey: string | undefined;
  /** Send the key as `Authorization: Bearer …` as well (models.json `authHeader`). */
  authHeader = false;
  /** Every key set so far, to redact from whatever leaves the worker. */
  readonly secrets: string[] = [];

  /**
   * Uses `apiKey`, or the provider's key from the environment, for `model`'s requests.
   * @throws LifelineError ERR_MISSING_API_KEY when `model`'s API needs a key and none is found.
   */
  set(model: Model<Api>, apiKey: string | undefined, authHeader: boolean): void {
    const key = apiKey ?? getEnvApiKey(model.provider);
    if (key === undefined && needsKey(model)) {
      const { message, cliMessage } = missingKeyMessages(model.provider);
      throw new LifelineError("ERR_MISSING_API_KEY", message, { cliMessage });
    }
    this.apiKey = key;
    this.authHeader = authHeader;
    if (key !== undefined && !this.secrets.includes(key)) this.secrets.push(key);
  }
}

/**
 * pi-ai's HTTP APIs that take an API key. Bedrock and Vertex use ambient credentials, and APIs
 * registered by worker modules (fakes, custom transports) decide for themselves.
 */
const KEYED_APIS = new Set([
  "openai-completions",
  "openai-responses",
  "azure-openai-responses",
  "openai-codex-responses",
  "anthropic-messages",
  "google-generative-ai",
  "mistral-conversations",
]);

function needsKey(model: { api: string }): boolean {
  return KEYED_APIS.has(model.api);
}
