/**
 * The environment variable each of pi-ai's providers reads its API key from, as pi-ai 0.73.1 has
 * them (its own table is private): what an error names when a key is missing. A test
 * (test/shared/provider-keys.test.ts) checks every entry against pi-ai's `getEnvApiKey`.
 */
const KEY_VARIABLES: Readonly<Record<string, string>> = {
  anthropic: "ANTHROPIC_API_KEY",
  openai: "OPENAI_API_KEY",
  "azure-openai-responses": "AZURE_OPENAI_API_KEY",
  deepseek: "DEEPSEEK_API_KEY",
  google: "GEMINI_API_KEY",
  "google-vertex": "GOOGLE_CLOUD_API_KEY",
  groq: "GROQ_API_KEY",
  cerebras: "CEREBRAS_API_KEY",
  xai: "XAI_API_KEY",
  openrouter: "OPENROUTER_API_KEY",
  "vercel-ai-gateway": "AI_GATEWAY_API_KEY",
  zai: "ZAI_API_KEY",
  mistral: "MISTRAL_API_KEY",
  minimax: "MINIMAX_API_KEY",
  "minimax-cn": "MINIMAX_CN_API_KEY",
  moonshotai: "MOONSHOT_API_KEY",
  "moonshotai-cn": "MOONSHOT_API_KEY",
  huggingface: "HF_TOKEN",
  fireworks: "FIREWORKS_API_KEY",
  opencode: "OPENCODE_API_KEY",
  "opencode-go": "OPENCODE_API_KEY",
  "kimi-coding": "KIMI_API_KEY",
  "cloudflare-workers-ai": "CLOUDFLARE_API_KEY",
  "cloudflare-ai-gateway": "CLOUDFLARE_API_KEY",
  xiaomi: "XIAOMI_API_KEY",
  "xiaomi-token-plan-cn": "XIAOMI_TOKEN_PLAN_CN_API_KEY",
  "xiaomi-token-plan-ams": "XIAOMI_TOKEN_PLAN_AMS_API_KEY",
  "xiaomi-token-plan-sgp": "XIAOMI_TOKEN_PLAN_SGP_API_KEY",
  "github-copilot": "COPILOT_GITHUB_TOKEN",
};

/** The environment variable of `provider`'s key, or undefined for a provider pi-ai reads none for. */
export function keyVariable(provider: string): string | undefined {
  return Object.hasOwn(KEY_VARIABLES, provider) ? KEY_VARIABLES[provider] : undefined;
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
