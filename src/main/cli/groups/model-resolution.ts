/**
 * How the CLI turns `--provider` / `--model` into one model, as pi's CLI does (pi-coding-agent
 * 0.73.1, `resolveCliModel` in core/model-resolver.js; read, not copied): pure functions over the
 * list of known models, in the order pi lists them (pi-ai's built-in providers in their order,
 * then models.json's models; lifeline's demo models last).
 *
 * - `--provider P --model M`: M among P's models (a `P/` prefix on M is dropped).
 * - `--model P/M` where P is a known provider (any case): M among P's models; failing that, the
 *   whole text as an id of any provider (OpenRouter-style ids such as `openai/gpt-4o:extended`).
 * - `--model M` alone: the first model whose id is M (any case), in list order: when several
 *   providers have that id, the earliest provider wins (pi-ai's built-ins before models.json's).
 * - Then, within the candidates: an exact id or `provider/id`; else a model whose id or name
 *   contains M, preferring an alias (an id without a `-YYYYMMDD` date) that sorts highest, else
 *   the latest dated id.
 * - A `:<level>` suffix that is not part of a model id sets the thinking level
 *   (`anthropic/claude-sonnet-4-5:high`); an unknown suffix fails the match.
 */
import type { ThinkingLevel } from "../../../shared/thinking.js";
import { isThinkingLevel } from "../../../shared/thinking.js";

/** A model as the resolution sees it. */
export interface KnownModel {
  provider: string;
  id: string;
  name?: string;
}

/** What {@link resolveModelPattern} found: a model, and the level of a `:<level>` suffix. */
interface ResolvedModel {
  model: KnownModel;
  thinkingLevel?: ThinkingLevel;
}

/** The outcome: a model, or why none (the message names what was looked for). */
export type ModelResolution = ResolvedModel | { problem: string };

/**
 * Resolves the CLI's `--provider` / `--model` against `models` (see the file comment).
 * @param provider `--provider`, if given.
 * @param pattern `--model` (an id, `provider/id`, or part of an id or name; an optional `:<level>`).
 */
export function resolveModelPattern(
  models: readonly KnownModel[],
  provider: string | undefined,
  pattern: string,
): ModelResolution {
  const providers = new Map(models.map((model) => [model.provider.toLowerCase(), model.provider]));
  let chosen = provider === undefined ? undefined : providers.get(provider.toLowerCase());
  if (provider !== undefined && chosen === undefined) {
    return { problem: `Unknown provider "${provider}"` };
  }
  let search = pattern;
  let inferred = false;
  if (chosen === undefined) {
    const slash = pattern.indexOf("/");
    const prefix = slash < 0 ? undefined : providers.get(pattern.slice(0, slash).toLowerCase());
    if (prefix !== undefined) {
      chosen = prefix;
      search = pattern.slice(slash + 1);
      inferred = true;
    } else {
      const exact = firstWithId(models, pattern);
      if (exact !== undefined) return { model: exact };
    }
  } else if (pattern.toLowerCase().startsWith(`${chosen.toLowerCase()}/`)) {
    search = pattern.slice(chosen.length + 1);
  }
  const candidates = chosen === undefined ? models : models.filter((model) => model.provider === chosen);
  const found = withLevel(search, candidates);
  if (found !== undefined) return found;
  if (inferred) {
    const exact = firstWithId(models, pattern);
    if (exact !== undefined) return { model: exact };
    const anywhere = withLevel(pattern, models);
    if (anywhere !== undefined) return anywhere;
  }
  return { problem: `No model matches "${chosen === undefined ? pattern : `${chosen}/${search}`}"` };
}

/** The first model whose id, or `provider/id`, is `text` (any case). */
function firstWithId(models: readonly KnownModel[], text: string): KnownModel | undefined {
  const lower = text.toLowerCase();
  return models.find(
    (model) => model.id.toLowerCase() === lower || `${model.provider}/${model.id}`.toLowerCase() === lower,
  );
}

/** `pattern` matched whole, else with a `:<level>` suffix taken off (recursively, as pi). */
function withLevel(pattern: string, models: readonly KnownModel[]): ResolvedModel | undefined {
  const model = match(pattern, models);
  if (model !== undefined) return { model };
  const colon = pattern.lastIndexOf(":");
  if (colon < 0) return undefined;
  const suffix = pattern.slice(colon + 1);
  if (!isThinkingLevel(suffix)) return undefined;
  const inner = withLevel(pattern.slice(0, colon), models);
  return inner === undefined ? undefined : { model: inner.model, thinkingLevel: suffix };
}

/** An exact reference, else the best partial match of id or name. */
function match(pattern: string, models: readonly KnownModel[]): KnownModel | undefined {
  const exact = exactReference(pattern, models);
  if (exact !== undefined) return exact;
  const lower = pattern.toLowerCase();
  const partial = models.filter(
    (model) => model.id.toLowerCase().includes(lower) || (model.name?.toLowerCase().includes(lower) ?? false),
  );
  if (partial.length === 0) return undefined;
  const aliases = partial.filter((model) => !/-\d{8}$/.test(model.id) || model.id.endsWith("-latest"));
  const pool = aliases.length > 0 ? aliases : partial;
  return [...pool].sort((a, b) => b.id.localeCompare(a.id))[0];
}

/** `provider/id` or a bare id naming exactly one model (any case); an ambiguous one matches none. */
function exactReference(reference: string, models: readonly KnownModel[]): KnownModel | undefined {
  const lower = reference.trim().toLowerCase();
  if (lower === "") return undefined;
  const canonical = models.filter((model) => `${model.provider}/${model.id}`.toLowerCase() === lower);
  if (canonical.length > 0) return canonical.length === 1 ? canonical[0] : undefined;
  const slash = lower.indexOf("/");
  if (slash >= 0) {
    const [provider, id] = [lower.slice(0, slash).trim(), lower.slice(slash + 1).trim()];
    const scoped = models.filter((model) => model.provider.toLowerCase() === provider && model.id.toLowerCase() === id);
    if (scoped.length > 0) return scoped.length === 1 ? scoped[0] : undefined;
  }
  const byId = models.filter((model) => model.id.toLowerCase() === lower);
  return byId.length === 1 ? byId[0] : undefined;
}
