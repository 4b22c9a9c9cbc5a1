/**
 * The compact copy of a message the worker sent, which is the one the session keeps (its
 * transcript mirror and history, X7) and hands to its listeners.
 *
 * A message that crossed the thread is rebuilt by structured clone: each object gets its
 * properties one at a time (those past the fourth in a separate property array), arrays that
 * were grown by `push` keep their spare capacity, and every string is a fresh copy, so each of a
 * session's messages carries its own `"assistant"`, `"openai-completions"`, model and provider
 * names. Kept for the session's whole life, that is about a third of what a short reply costs
 * the main heap (P4, docs/performance.md). The copy has the same keys in the same order, the
 * same values (`undefined` ones included) and the same prototypes; only its layout differs:
 * exact-length arrays, and the short strings of the fields that repeat across messages taken
 * from one table shared by the host's sessions.
 *
 * A message already copied gives back the same copy (a weak table keyed by the original), so the
 * identities one batch from the worker had (a user message's `message_start` and `message_end`
 * carry one object) are kept, and so are those inside a message: an object it reaches twice is
 * copied once. Only plain objects and arrays are copied; anything else is kept as it is, and a
 * message with a cycle (a tool's `details` may hold anything structured clone carries) is kept
 * whole.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core";

/** Fields whose values repeat across messages and sessions (roles, APIs, providers, models, stop reasons, part types). */
const SHARED_FIELDS = new Set(["role", "api", "provider", "model", "stopReason", "type"]);

/** Longest value taken from the shared table; longer ones are kept as they are. */
const MAX_SHARED_LENGTH = 64;

/** Most values the shared table holds (a host sees a few dozen); past it values are kept as they are. */
const MAX_SHARED_VALUES = 4096;

const sharedValues = new Map<string, string>();
const copies = new WeakMap<object, object>();

/** The compact copy of `message` (see the module comment); the same copy for the same message. */
export function compactMessage<M extends AgentMessage>(message: M): M {
  if (typeof message !== "object" || message === null) return message;
  const known = copies.get(message);
  if (known !== undefined) return known as M;
  let copy: M;
  try {
    copy = new Copier().value(message, undefined) as M;
  } catch (error) {
    if (error !== CYCLE) throw error;
    copy = message;
  }
  copies.set(message, copy);
  return copy;
}

/** Thrown inside a copy that meets a cycle; the message is then kept whole. */
const CYCLE = Symbol("cycle");

/** One message's copy: what it copied so far (shared parts stay shared), and the path it is on. */
class Copier {
  readonly #done = new Map<object, unknown>();
  readonly #path = new Set<object>();

  value(value: unknown, key: string | undefined): unknown {
    if (typeof value === "string") return key !== undefined && SHARED_FIELDS.has(key) ? shared(value) : value;
    if (typeof value !== "object" || value === null) return value;
    if (this.#done.has(value)) return this.#done.get(value);
    if (this.#path.has(value)) throw CYCLE;
    this.#path.add(value);
    const copy = this.#copy(value);
    this.#path.delete(value);
    this.#done.set(value, copy);
    return copy;
  }

  #copy(value: object): unknown {
    if (Array.isArray(value)) {
      // An array with properties besides its elements, holes, or another prototype is kept as it is.
      if (Object.getPrototypeOf(value) !== Array.prototype || Object.keys(value).length !== value.length) return value;
      return value.map((element) => this.value(element, undefined));
    }
    // Assigning an own `__proto__` key would set the copy's prototype instead: such an object stays.
    if (Object.getPrototypeOf(value) !== Object.prototype || Object.hasOwn(value, "__proto__")) return value;
    const copy: Record<string, unknown> = {};
    for (const name of Object.keys(value)) copy[name] = this.value((value as Record<string, unknown>)[name], name);
    return copy;
  }
}

function shared(value: string): string {
  if (value.length > MAX_SHARED_LENGTH) return value;
  const known = sharedValues.get(value);
  if (known !== undefined) return known;
  if (sharedValues.size < MAX_SHARED_VALUES) sharedValues.set(value, value);
  return value;
}
