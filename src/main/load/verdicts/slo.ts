/**
 * Service-level objectives of a load run (`--slo "ttft<=500ms,itl<=50ms,e2e<=10s"`): which model
 * requests, prompts and sessions met every term, the share that did (SLO attainment) and how many
 * did per second of the run (goodput), as GuideLLM and inference-perf define them: a failed request
 * does not conform, and one cut by the run's end is left out. Pure functions over the run's records.
 */
import { LifelineError } from "../../../shared/errors.js";
import type { PromptRecord, RequestRecord } from "../metrics/load-metrics.js";

/** The latencies an SLO term may bound, each in ms (docs/load.md defines them). */
const SLO_METRICS = ["ttft", "itl", "e2e"] as const;
type SloMetric = (typeof SLO_METRICS)[number];

/** The units an SLO limit may carry, in ms. */
const SLO_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000 };

/** One term of an SLO: `metric operator limit`, such as `ttft<=500ms`. */
interface SloTerm {
  metric: SloMetric;
  operator: "<" | "<=";
  limitMs: number;
}

/** A parsed `--slo`: the text as given and its terms (one per metric at most). */
export interface Slo {
  spec: string;
  terms: readonly SloTerm[];
}

/** How many of a population conformed (report.json `slo.requests`, `slo.prompts`, `slo.sessions`). */
export interface SloAttainment {
  /** Members judged: finished ones; those cut by the run's end are left out. */
  total: number;
  /** Members that met every term (and succeeded). */
  conforming: number;
  /** conforming / total (6 decimals); null when total is 0. */
  attainment: number | null;
  /** conforming / the run's duration in seconds (3 decimals); 0 for a run of no duration. */
  goodputPerSecond: number;
}

/** report.json `slo`. */
export interface SloReport {
  spec: string;
  requests: SloAttainment;
  prompts: SloAttainment;
  /** Null for a run whose sessions send one prompt each (`--prompts 1`): they would repeat `prompts`. */
  sessions: SloAttainment | null;
}

/** Threshold metrics that read `slo`, and so need an SLO. */
const SLO_THRESHOLD_METRICS: ReadonlySet<string> = new Set([
  "slo_attainment",
  "goodput",
  "prompt_slo_attainment",
  "prompt_goodput",
]);

/**
 * `runLoad`'s `slo` option, parsed, checked against the run's threshold metrics: a threshold on
 * an SLO figure without an SLO would fail for want of data, so it is refused before the run.
 * @throws ERR_INVALID_OPTIONS for a bad SLO, or such a threshold without one.
 */
export function checkSloOption(spec: string | undefined, thresholdMetrics: readonly string[]): Slo | undefined {
  if (spec !== undefined) return parseSlo(spec);
  const needy = thresholdMetrics.find((metric) => SLO_THRESHOLD_METRICS.has(metric));
  if (needy !== undefined) {
    invalid(`the threshold on ${needy} needs an SLO: give --slo (slo), for example "ttft<=500ms,e2e<=10s".`);
  }
  return undefined;
}

const TERM = /^\s*([a-z][a-z0-9_]*)\s*(<=|<)\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-z]+)\s*$/i;

/**
 * Parses `--slo`: terms separated by commas, each `<metric><= or <><number><unit>`, spaces
 * allowed, each metric at most once. Called by the flags and by `runLoad`'s option check.
 * @throws ERR_INVALID_OPTIONS naming the bad term and what is allowed.
 */
export function parseSlo(spec: string): Slo {
  const allowed = `each term is <metric><= or <><number><unit>, metrics ${SLO_METRICS.join(", ")}, units ${Object.keys(SLO_UNITS).join(", ")}; for example "ttft<=500ms,itl<=50ms,e2e<=10s"`;
  const texts = spec
    .split(",")
    .map((text) => text.trim())
    .filter((text) => text !== "");
  if (texts.length === 0) invalid(`--slo "${spec}" names no term; ${allowed}.`);
  const terms: SloTerm[] = [];
  for (const text of texts) {
    const match = TERM.exec(text);
    const metric = match?.[1]?.toLowerCase();
    const unit = match?.[4]?.toLowerCase();
    if (match === null || metric === undefined || unit === undefined) {
      invalid(`--slo term "${text}" is not a term; ${allowed}.`);
    }
    if (!(SLO_METRICS as readonly string[]).includes(metric)) {
      invalid(`--slo term "${text}" names an unknown metric "${metric}"; ${allowed}.`);
    }
    const scale = SLO_UNITS[unit];
    if (scale === undefined) invalid(`--slo term "${text}" has an unknown unit "${unit}"; ${allowed}.`);
    if (terms.some((term) => term.metric === metric)) invalid(`--slo term "${text}" repeats the metric "${metric}".`);
    terms.push({
      metric: metric as SloMetric,
      operator: match[2] as SloTerm["operator"],
      limitMs: Number(match[3]) * scale,
    });
  }
  return { spec: spec.trim(), terms };
}

/**
 * Judges a run's records against `slo`; `durationMs` is the run's (the goodput denominator).
 * `multiTurn` says the sessions send more than one prompt each (else `sessions` is null).
 *
 * - A request conforms when it succeeded and its TTFT, ITL and e2e meet the terms; an aborted
 *   request (cut by the run's end) is left out.
 * - A prompt conforms when it succeeded and, retries included, meets the terms: TTFT from
 *   `prompt()` to the first token of its first successful request, e2e its whole latency, and
 *   ITL every successful request's. A cancelled prompt is left out.
 * - A session conforms when every prompt of it that was judged conforms; a session none of whose
 *   prompts was judged is left out.
 *
 * A term bounds only a figure the request has: a reply without a streamed token has no TTFT, one
 * of fewer than 2 output tokens no ITL (load-metrics' definitions); such a term holds.
 */
export function evaluateSlo(
  slo: Slo,
  requests: readonly RequestRecord[],
  prompts: readonly PromptRecord[],
  durationMs: number,
  multiTurn: boolean,
): SloReport {
  const succeeded = new Map<string, RequestRecord[]>();
  let requestTotal = 0;
  let requestConforming = 0;
  for (const request of requests) {
    if (request.failure?.kind === "aborted") continue;
    requestTotal++;
    if (request.failure !== undefined) continue;
    if (meets(slo, { ttft: request.ttftMs, itl: interTokenLatency(request), e2e: request.e2eMs })) requestConforming++;
    const key = promptKey(request.session, request.prompt);
    const list = succeeded.get(key);
    if (list === undefined) succeeded.set(key, [request]);
    else list.push(request);
  }
  const bySession = new Map<number, boolean>();
  let promptTotal = 0;
  let promptConforming = 0;
  for (const prompt of prompts) {
    if (prompt.outcome === "cancelled") continue;
    promptTotal++;
    const ok =
      prompt.outcome === "succeeded" &&
      promptMeets(slo, prompt, succeeded.get(promptKey(prompt.session, prompt.prompt)) ?? []);
    if (ok) promptConforming++;
    bySession.set(prompt.session, (bySession.get(prompt.session) ?? true) && ok);
  }
  const sessionConforming = [...bySession.values()].filter(Boolean).length;
  return {
    spec: slo.spec,
    requests: attainment(requestTotal, requestConforming, durationMs),
    prompts: attainment(promptTotal, promptConforming, durationMs),
    sessions: multiTurn ? attainment(bySession.size, sessionConforming, durationMs) : null,
  };
}

/** A prompt's figures, retries included, from its successful requests (in order of start). */
function promptMeets(slo: Slo, prompt: PromptRecord, ok: readonly RequestRecord[]): boolean {
  const first = ok[0];
  const ttft = first === undefined || first.ttftMs === null ? null : first.startMs + first.ttftMs - prompt.startMs;
  const itls = ok.flatMap((request) => {
    const itl = interTokenLatency(request);
    return itl === null ? [] : [itl];
  });
  return meets(slo, { ttft, itl: itls.length === 0 ? null : Math.max(...itls), e2e: prompt.latencyMs });
}

function meets(slo: Slo, figures: Readonly<Record<SloMetric, number | null>>): boolean {
  return slo.terms.every((term) => {
    const value = figures[term.metric];
    if (value === null) return true;
    return term.operator === "<" ? value < term.limitMs : value <= term.limitMs;
  });
}

/** load-metrics' ITL: (e2e − TTFT) / (output tokens − 1), for requests of at least 2 tokens. */
function interTokenLatency(request: RequestRecord): number | null {
  if (request.ttftMs === null || request.outputTokens < 2) return null;
  return (request.e2eMs - request.ttftMs) / (request.outputTokens - 1);
}

/** Attainment and goodput of `conforming` of `total` over `durationMs` (also for merged reports). */
export function attainment(total: number, conforming: number, durationMs: number): SloAttainment {
  return {
    total,
    conforming,
    attainment: total === 0 ? null : Math.round((conforming / total) * 1e6) / 1e6,
    goodputPerSecond: durationMs > 0 ? Math.round((conforming * 1e6) / durationMs) / 1000 : 0,
  };
}

function promptKey(session: number, prompt: number): string {
  return `${session}:${prompt}`;
}

function invalid(message: string): never {
  throw new LifelineError("ERR_INVALID_OPTIONS", message);
}
