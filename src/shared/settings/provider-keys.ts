/**
 * What the main thread needs to know of pi-ai's providers without loading pi-ai (its catalogue and
 * SDKs are the worker's): their names, and the environment variables each reads its API key from,
 * as pi-ai 0.73.1 has them (its own table is private). Data only, so that `import "lifeline"`
 * stays light (docs/embedding.md, "What an embedding app pays"). A test
 * (test/shared/provider-keys.test.ts) checks every entry against pi-ai: the names against
 * `getProviders`, and the variables against `getEnvApiKey` with each variable set, alone and together.
 */

/** pi-ai 0.73.1's built-in providers (`getProviders()`), in its order. */
export const BUILT_IN_PROVIDERS: readonly string[] = [
  "amazon-bedrock",
  "anthropic",
  "azure-openai-responses",
  "cerebras",
  "cloudflare-ai-gateway",
  "cloudflare-workers-ai",
  "deepseek",
  "fireworks",
  "github-copilot",
  "google",
  "google-vertex",
  "groq",
  "huggingface",
  "kimi-coding",
  "minimax",
  "minimax-cn",
  "mistral",
  "moonshotai",
  "moonshotai-cn",
  "openai",
  "openai-codex",
  "opencode",
  "opencode-go",
  "openrouter",
  "vercel-ai-gateway",
  "xai",
  "xiaomi",
  "xiaomi-token-plan-ams",
  "xiaomi-token-plan-cn",
  "xiaomi-token-plan-sgp",
  "zai",
];

/**
 * Each provider's key variables, first match wins. The first is the one an error names: for
 * anthropic pi-ai prefers an OAuth token when one is set, but a user without a key is told of
 * ANTHROPIC_API_KEY.
 */
const KEY_VARIABLES: Readonly<Record<string, readonly string[]>> = {
  anthropic: ["ANTHROPIC_API_KEY"],
  openai: ["OPENAI_API_KEY"],
  "azure-openai-responses": ["AZURE_OPENAI_API_KEY"],
  deepseek: ["DEEPSEEK_API_KEY"],
  google: ["GEMINI_API_KEY"],
  "google-vertex": ["GOOGLE_CLOUD_API_KEY"],
  groq: ["GROQ_API_KEY"],
  cerebras: ["CEREBRAS_API_KEY"],
  xai: ["XAI_API_KEY"],
  openrouter: ["OPENROUTER_API_KEY"],
  "vercel-ai-gateway": ["AI_GATEWAY_API_KEY"],
  zai: ["ZAI_API_KEY"],
  mistral: ["MISTRAL_API_KEY"],
  minimax: ["MINIMAX_API_KEY"],
  "minimax-cn": ["MINIMAX_CN_API_KEY"],
  moonshotai: ["MOONSHOT_API_KEY"],
  "moonshotai-cn": ["MOONSHOT_API_KEY"],
  huggingface: ["HF_TOKEN"],
  fireworks: ["FIREWORKS_API_KEY"],
  opencode: ["OPENCODE_API_KEY"],
  "opencode-go": ["OPENCODE_API_KEY"],
  "kimi-coding": ["KIMI_API_KEY"],
  "cloudflare-workers-ai": ["CLOUDFLARE_API_KEY"],
  "cloudflare-ai-gateway": ["CLOUDFLARE_API_KEY"],
  xiaomi: ["XIAOMI_API_KEY"],
  "xiaomi-token-plan-cn": ["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
  "xiaomi-token-plan-ams": ["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
  "xiaomi-token-plan-sgp": ["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
  "github-copilot": ["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
};

/** Variables read before the named one: a set one wins over it (pi-ai's order). */
const PREFERRED_VARIABLES: Readonly<Record<string, readonly string[]>> = {
  anthropic: ["ANTHROPIC_OAUTH_TOKEN"],
};

/**
 * `provider`'s API key from `env`, as pi-ai's `getEnvApiKey` finds it in its process's environment;
 * undefined when no variable of the provider is set. Credentials that are not a variable's value
 * (Google Vertex's application-default credentials, Amazon Bedrock's profiles and roles) are not
 * looked for here: the worker, where pi-ai runs, falls back to `getEnvApiKey` for a session that
 * got no key (worker/session/credentials.ts).
 */
export function envApiKey(provider: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!Object.hasOwn(KEY_VARIABLES, provider)) return undefined;
  const order = [...(PREFERRED_VARIABLES[provider] ?? []), ...(KEY_VARIABLES[provider] ?? [])];
  const found = order.find((variable) => env[variable] !== undefined && env[variable] !== "");
  return found === undefined ? undefined : env[found];
}

/** The environment variable of `provider`'s key, or undefined for a provider pi-ai reads none for. */
export function keyVariable(provider: string): string | undefined {
  return Object.hasOwn(KEY_VARIABLES, provider) ? KEY_VARIABLES[provider]?.[0] : undefined;
}

/**
 * ERR_MISSING_API_KEY's message for `provider`, for a library caller and for a CLI user: every
 * place a key can come from, in the order they are tried, in each one's words.
 */
export function missingKeyMessages(provider: string): { message: string; cliMessage: string } {
  const variable = keyVariable(provider);
  const env = variable === undefined ? "" : `set ${variable}, `;
  const head = `No API key for provider "${provider}": ${env}`;
  return {
    message: `${head}add one to auth.json (\`lifeline auth add ${provider}\`), set "apiKey" for it in models.json, or pass apiKey to createSession.`,
    cliMessage: `${head}run \`lifeline auth add ${provider}\` (it keeps the key in $LIFELINE_DIR/auth.json), set "apiKey" for it in models.json, or pass --api-key.`,
  };
}
