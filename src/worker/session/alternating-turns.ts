/**
 * The one place lifeline merges turns: in the request payload of an API whose server refuses two
 * turns of the same role in a row. Everywhere else a session sends what pi 0.73.1 sends, adjacent
 * user messages as separate messages (a command run with `bash` and the prompt after it, queued
 * steering and follow-ups, the prompt after a failed reply that is not sent).
 *
 * Bedrock's Converse API answers such a request with a ValidationException ("A conversation must
 * alternate between user and assistant roles"), and Gemini's (Google AI and Vertex) with 400
 * INVALID_ARGUMENT. pi-ai's providers for them send what they are given, tool results included,
 * which they put in a user turn of their own; so the merge works on the payload each provider
 * built, through pi-ai's `onPayload` hook, where tool results and text are already turns.
 */
import type { Api } from "@mariozechner/pi-ai";

/** Where an API's payload keeps its turns, and where each turn keeps its parts. */
interface TurnLayout {
  readonly turns: string;
  readonly parts: string;
}

/** The APIs that require alternating roles; every other API gets its payload unchanged. */
const ALTERNATING_APIS: Readonly<Partial<Record<Api, TurnLayout>>> = {
  "bedrock-converse-stream": { turns: "messages", parts: "content" },
  "google-generative-ai": { turns: "contents", parts: "parts" },
  "google-vertex": { turns: "contents", parts: "parts" },
};

/**
 * The payload transform `api` needs: one that joins each run of same-role turns into one turn
 * (their parts in order) for an API that requires alternating roles; undefined for any other.
 * The transform returns a new payload and leaves the one it is given unchanged. A payload without
 * the turn list it expects is returned as it is (the provider's own error then says what is wrong).
 */
export function alternatingTurns(api: Api): ((payload: unknown) => unknown) | undefined {
  const layout = ALTERNATING_APIS[api];
  if (layout === undefined) return undefined;
  return (payload) => mergeTurns(payload, layout);
}

function mergeTurns(payload: unknown, { turns, parts }: TurnLayout): unknown {
  if (!isRecord(payload)) return payload;
  const list = payload[turns];
  if (!Array.isArray(list)) return payload;
  const merged: unknown[] = [];
  for (const turn of list) {
    const previous = merged[merged.length - 1];
    if (
      isRecord(turn) &&
      isRecord(previous) &&
      previous.role === turn.role &&
      Array.isArray(previous[parts]) &&
      Array.isArray(turn[parts])
    ) {
      merged[merged.length - 1] = { ...previous, [parts]: [...previous[parts], ...turn[parts]] };
    } else merged.push(turn);
  }
  return merged.length === list.length ? payload : { ...payload, [turns]: merged };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
