/**
 * report.json `failures`: the run's failed model requests grouped by label (their failure kind,
 * as `totals.requests.failuresByKind` counts them), each with one example message, so a reader
 * sees what the server said without opening records.jsonl. No example may carry a key (X6).
 */
import { redactSecrets } from "../../../shared/failures/redact.js";
import type { RequestRecord } from "../metrics/load-metrics.js";

/** One group of report.json `failures`. */
export interface FailureGroup {
  /** The failure kind: `http_503`, `connection`, `stream_idle`, `stream_error`, `aborted`, … */
  label: string;
  /** Failed requests of that kind. */
  count: number;
  /** The first such request's error message, keys redacted. */
  example: string;
}

/**
 * Key shapes redacted even when the run does not know the key (one from models.json or a
 * `!command`): OpenAI/Anthropic `sk-…`, Google `AIza…`, and bearer tokens.
 */
const KEY_SHAPES = [/\bsk-[A-Za-z0-9_-]{16,}/g, /\bAIza[0-9A-Za-z_-]{30,}/g, /\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*/gi];

/** Longest example kept: a server may answer with a whole HTML page. */
const MAX_EXAMPLE = 500;

/**
 * Groups `requests`' failures by kind, most frequent first (ties by label). `secrets` are the
 * keys the run knows (its `apiKey`, the provider's environment key); the worker has already
 * redacted the session's own key (X6), and this applies the same redaction again, plus
 * {@link KEY_SHAPES}, to what the report quotes.
 */
export function groupFailures(requests: readonly RequestRecord[], secrets: readonly string[]): FailureGroup[] {
  const groups = new Map<string, FailureGroup>();
  for (const request of requests) {
    const failure = request.failure;
    if (failure === undefined) continue;
    const group = groups.get(failure.kind);
    if (group !== undefined) group.count++;
    else groups.set(failure.kind, { label: failure.kind, count: 1, example: redactExample(failure.message, secrets) });
  }
  return [...groups.values()].sort((a, b) => b.count - a.count || a.label.localeCompare(b.label));
}

function redactExample(message: string, secrets: readonly string[]): string {
  let text = redactSecrets(message, secrets);
  for (const shape of KEY_SHAPES) text = text.replace(shape, "[redacted]");
  return text.length > MAX_EXAMPLE ? `${text.slice(0, MAX_EXAMPLE)}…` : text;
}
