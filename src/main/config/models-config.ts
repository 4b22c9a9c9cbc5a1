/**
 * `models.json` in pi's format: custom providers (a local server, a proxy, the mock server) and
 * overrides of built-in providers, read from the user directory (`LIFELINE_DIR`, default
 * `~/.lifeline`). The file is JSONC, as in pi: comments and trailing commas are accepted.
 *
 *   { "providers": { "mock": { "baseUrl": "http://127.0.0.1:8080/v1", "api": "openai-completions",
 *       "apiKey": "MOCK_KEY", "models": [{ "id": "mock-1" }] } } }
 *
 * A provider with `models` defines new models; one without `models` must name a built-in provider
 * (`openai`, `anthropic`, …) and changes its `baseUrl`, `headers` or `compat`.
 *
 * Values of `apiKey` and `headers` are resolved as pi resolves them: `"!cmd"` runs a shell command
 * and takes its trimmed stdout, a name of a set environment variable takes its value, anything else
 * is the literal value. Resolution happens on the main thread when a session is created, so the
 * key reaches only the worker that serves that session.
 */
import { exec } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Api, Model } from "@mariozechner/pi-ai";
import * as z from "zod";
import { LifelineError } from "../../shared/errors.js";
import { BUILT_IN_PROVIDERS, envApiKey } from "../../shared/settings/provider-keys.js";
import { THINKING_LEVELS } from "../../shared/thinking.js";
import type { CatalogueQuery, ModelChange, ModelRef, ProviderOverrides } from "../../shared/wire/protocol.js";
import { parseJsonText } from "./json-text.js";

/** APIs a custom provider may use: pi's `models.json` set. */
const CUSTOM_PROVIDER_APIS = [
  "openai-completions",
  "openai-responses",
  "anthropic-messages",
  "google-generative-ai",
] as const;

/** Providers the worker serves without pi-ai's catalogue (the demo models). */
const KEYLESS_PROVIDERS = new Set(["demo"]);

const COMMAND_TIMEOUT_MS = 10_000;

/** The schemas of the file, built with the first file read rather than at import. */
function buildSchemas() {
  const costSchema = z.strictObject({
    input: z.number().min(0),
    output: z.number().min(0),
    cacheRead: z.number().min(0).default(0),
    cacheWrite: z.number().min(0).default(0),
  });

  const apiSchema = z.enum(CUSTOM_PROVIDER_APIS);

  const modelSchema = z.strictObject({
    id: z.string().min(1),
    name: z.string().min(1).optional(),
    api: apiSchema.optional(),
    reasoning: z.boolean().optional(),
    /** pi's: the provider's value for each thinking level; null marks a level the model lacks (xhigh needs one). */
    thinkingLevelMap: z.partialRecord(z.enum(THINKING_LEVELS), z.string().min(1).nullable()).optional(),
    input: z
      .array(z.enum(["text", "image"]))
      .min(1)
      .optional(),
    contextWindow: z.number().int().positive().optional(),
    maxTokens: z.number().int().positive().optional(),
    cost: costSchema.optional(),
    headers: z.record(z.string(), z.string()).optional(),
    compat: z.record(z.string(), z.unknown()).optional(),
  });

  const providerSchema = z.strictObject({
    baseUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) URL, like http://127.0.0.1:8080/v1" }).optional(),
    api: apiSchema.optional(),
    apiKey: z.string().min(1).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    authHeader: z.boolean().optional(),
    compat: z.record(z.string(), z.unknown()).optional(),
    models: z.array(modelSchema).optional(),
  });

  const fileSchema = z.strictObject({ providers: z.record(z.string().min(1), providerSchema).default({}) });
  return { fileSchema, providerSchema, modelSchema };
}

type Schemas = ReturnType<typeof buildSchemas>;
let built: Schemas | undefined;

type ProviderConfig = z.infer<Schemas["providerSchema"]>;
type ModelConfig = z.infer<Schemas["modelSchema"]>;

/** A validated `models.json`; empty when the file does not exist. */
export interface ModelsConfig {
  /** The file it came from, for error messages. */
  readonly path: string;
  readonly providers: Readonly<Record<string, ProviderConfig>>;
}

/** Path of the models file in a user directory. */
export function modelsPath(lifelineDir: string): string {
  return join(lifelineDir, "models.json");
}

/**
 * Reads and validates `models.json` (absent is fine: no custom models).
 * @throws LifelineError ERR_INVALID_MODELS naming the file, the line and column or the field, and
 *   what is allowed.
 */
export async function loadModelsConfig(path: string): Promise<ModelsConfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { path, providers: {} };
    throw invalid(path, `cannot be read: ${(error as Error).message}`, error);
  }
  return parseModelsConfig(text, path);
}

/**
 * Validates the text of a models file. Exported for tests and tools.
 * @throws LifelineError ERR_INVALID_MODELS.
 */
export function parseModelsConfig(text: string, path: string): ModelsConfig {
  const { value, problem } = parseJsonText(text, { jsonc: true });
  if (problem !== undefined) throw invalid(path, `is not valid JSON at ${problem}`);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw invalid(path, 'must hold an object like {"providers": {"name": {…}}}');
  }
  built ??= buildSchemas();
  const result = built.fileSchema.safeParse(value);
  if (!result.success) {
    const problems = result.error.issues.map(
      (issue) => `${issue.path.map(String).join(".") || "(root)"}: ${describe(issue)}`,
    );
    throw invalid(path, `has invalid fields: ${problems.join("; ")}`);
  }
  const builtIn = new Set<string>(BUILT_IN_PROVIDERS);
  for (const [name, provider] of Object.entries(result.data.providers)) {
    const where = `providers.${name}`;
    if (provider.models === undefined || provider.models.length === 0) {
      if (!builtIn.has(name)) {
        throw invalid(
          path,
          `${where} has no "models" and is not a built-in provider: add "models": [{"id": "…"}] to define one, or use a built-in name (${[...builtIn].slice(0, 8).join(", ")}, …) to override its baseUrl or headers`,
        );
      }
      continue;
    }
    if (provider.baseUrl === undefined) {
      throw invalid(
        path,
        `${where}.baseUrl is missing: set the URL of the API, for example "http://127.0.0.1:8080/v1"`,
      );
    }
    provider.models.forEach((model, index) => {
      if ((model.api ?? provider.api) === undefined) {
        throw invalid(
          path,
          `${where}.api is missing (needed by models[${index}] "${model.id}"): use one of ${CUSTOM_PROVIDER_APIS.join(", ")}`,
        );
      }
    });
  }
  return { path, providers: result.data.providers };
}

/**
 * Turns a model reference into what the worker gets (a session's model, key and auth header, or a
 * model switch: the same fields), using `config` and the environment.
 * - A custom provider's model becomes a full pi-ai `Model`.
 * - A built-in provider's model stays a reference, with the file's overrides attached.
 * - A `Model` object passes through.
 * The key is `apiKey` (the session's, if given), else the file's, else the provider's environment
 * variable.
 * @throws LifelineError ERR_UNKNOWN_MODEL (listing the provider's models), ERR_MISSING_API_KEY, or
 *   ERR_INVALID_MODELS when a `!command` fails.
 */
export async function resolveModelRef(
  ref: ModelRef,
  config: ModelsConfig,
  apiKey: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ModelChange> {
  if ("api" in ref && typeof ref.api === "string") return withKey({ model: ref }, apiKey);
  const provider = config.providers[ref.provider];
  if (provider === undefined) {
    const builtIn = BUILT_IN_PROVIDERS;
    if (!builtIn.includes(ref.provider) && !KEYLESS_PROVIDERS.has(ref.provider)) {
      const known = ["demo", ...Object.keys(config.providers), ...builtIn];
      const head = `Unknown provider "${ref.provider}". Use one of: ${known.join(", ")}; define it in ${config.path}`;
      throw new LifelineError("ERR_UNKNOWN_MODEL", `${head}; or pass a pi-ai Model object.`, {
        cliMessage: `${head}.`,
      });
    }
    // The worker resolves catalogue models and checks the key after the model, so an unknown
    // id is reported as such rather than as a missing key.
    return withKey({ model: { provider: ref.provider, id: ref.id } }, apiKey ?? envApiKey(ref.provider, env));
  }
  const key = apiKey ?? (await resolveValue(provider.apiKey, `providers.${ref.provider}.apiKey`, config.path, env));
  const headers = await resolveHeaders(provider.headers, `providers.${ref.provider}.headers`, config.path, env);
  const authHeader = provider.authHeader === true ? { authHeader: true } : {};
  if (provider.models === undefined || provider.models.length === 0) {
    const overrides: ProviderOverrides = {};
    if (provider.baseUrl !== undefined) overrides.baseUrl = provider.baseUrl;
    if (headers !== undefined) overrides.headers = headers;
    if (provider.compat !== undefined) overrides.compat = provider.compat;
    const builtInKey = key ?? envApiKey(ref.provider, env);
    return withKey({ ...authHeader, model: { provider: ref.provider, id: ref.id, overrides } }, builtInKey);
  }
  const model = provider.models.find((candidate) => candidate.id === ref.id);
  if (model === undefined) {
    const ids = provider.models.map((candidate) => candidate.id).join(", ");
    throw new LifelineError(
      "ERR_UNKNOWN_MODEL",
      `Unknown model "${ref.id}" for provider "${ref.provider}" (defined in ${config.path}). Available: ${ids}.`,
    );
  }
  requireKey(ref.provider, key, config.path);
  const modelHeaders = await resolveHeaders(
    model.headers,
    `providers.${ref.provider}.models.${model.id}.headers`,
    config.path,
    env,
  );
  return withKey(
    { ...authHeader, model: toModel(ref.provider, provider, model, { ...headers, ...modelHeaders }) },
    key,
  );
}

/**
 * Models usable without further configuration, the part `config` gives: every model it defines,
 * and what the worker needs to list pi-ai's catalogue ({@link catalogueQuery}). Keys are not
 * resolved here (a `!command` is not run for a listing), and headers are left out: they may hold
 * credentials.
 */
export function listConfiguredModels(config: ModelsConfig): Model<Api>[] {
  const listed: Model<Api>[] = [];
  for (const [name, provider] of Object.entries(config.providers)) {
    for (const model of provider.models ?? []) listed.push(toModel(name, provider, model, {}));
  }
  return listed;
}

/**
 * Which of pi-ai's providers the worker lists the catalogue models of: each with a key in the
 * environment or in `config` (the worker also counts the credentials only pi-ai can see, such as
 * Bedrock's profiles), except one `config` redefines with models of its own, with the file's
 * `baseUrl` override applied.
 */
export function catalogueQuery(config: ModelsConfig, env: NodeJS.ProcessEnv = process.env): CatalogueQuery {
  const query: CatalogueQuery = { keyed: [], skip: [], baseUrls: {} };
  for (const name of BUILT_IN_PROVIDERS) {
    const override = config.providers[name];
    if (override?.models !== undefined && override.models.length > 0) {
      query.skip.push(name);
      continue;
    }
    if (override?.baseUrl !== undefined) query.baseUrls[name] = override.baseUrl;
    if (override?.apiKey !== undefined || envApiKey(name, env) !== undefined) query.keyed.push(name);
  }
  return query;
}

function toModel(
  providerName: string,
  provider: ProviderConfig,
  model: ModelConfig,
  headers: Record<string, string>,
): Model<Api> {
  const compat = { ...provider.compat, ...model.compat };
  const built: Model<Api> = {
    id: model.id,
    name: model.name ?? model.id,
    // parseModelsConfig guarantees one of the two.
    api: (model.api ?? provider.api) as Api,
    provider: providerName,
    baseUrl: provider.baseUrl ?? "",
    reasoning: model.reasoning ?? false,
    input: model.input ?? ["text"],
    cost: model.cost ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: model.contextWindow ?? 128_000,
    maxTokens: model.maxTokens ?? 16_384,
  };
  if (model.thinkingLevelMap !== undefined) built.thinkingLevelMap = model.thinkingLevelMap;
  if (Object.keys(headers).length > 0) built.headers = headers;
  if (Object.keys(compat).length > 0) (built as { compat?: unknown }).compat = compat;
  return built;
}

function withKey(resolved: ModelChange, key: string | undefined): ModelChange {
  if (key !== undefined) resolved.apiKey = key;
  return resolved;
}

function requireKey(provider: string, key: string | undefined, path: string): void {
  if (key !== undefined && key !== "") return;
  const head = `No API key for provider "${provider}": set "apiKey" for it in ${path} (a key, an environment variable name or "!command"), add one to auth.json (\`lifeline auth add ${provider}\`)`;
  throw new LifelineError("ERR_MISSING_API_KEY", `${head}, or pass apiKey to createSession.`, {
    cliMessage: `${head}, or pass --api-key.`,
  });
}

async function resolveHeaders(
  headers: Record<string, string> | undefined,
  where: string,
  path: string,
  env: NodeJS.ProcessEnv,
): Promise<Record<string, string> | undefined> {
  if (headers === undefined) return undefined;
  const entries = await Promise.all(
    Object.entries(headers).map(async ([name, value]) => [
      name,
      await resolveValue(value, `${where}.${name}`, path, env),
    ]),
  );
  return Object.fromEntries(entries);
}

async function resolveValue(
  value: string | undefined,
  where: string,
  path: string,
  env: NodeJS.ProcessEnv,
): Promise<string | undefined> {
  if (value === undefined) return undefined;
  if (value.startsWith("!")) return runCommand(value.slice(1), where, path);
  const fromEnv = env[value];
  return fromEnv !== undefined && fromEnv !== "" ? fromEnv : value;
}

function runCommand(command: string, where: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    exec(command, { timeout: COMMAND_TIMEOUT_MS, windowsHide: true }, (error, stdout) => {
      const value = String(stdout).trim();
      // The command's output is a secret: never quote it, and quote the command only.
      if (error !== null)
        reject(invalid(path, `${where}: the command "${command}" failed (${error.message.split("\n")[0]})`));
      else if (value === "") reject(invalid(path, `${where}: the command "${command}" printed nothing`));
      else resolve(value);
    });
  });
}

function invalid(path: string, problem: string, cause?: unknown): LifelineError {
  return new LifelineError("ERR_INVALID_MODELS", `Models file ${path} ${problem}. Fix the file or remove it.`, {
    cause,
  });
}

function describe(issue: z.core.$ZodIssue): string {
  if (issue.code === "unrecognized_keys") return `unknown key(s) ${issue.keys.join(", ")}`;
  if (issue.code === "invalid_value") return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
  return issue.message;
}
