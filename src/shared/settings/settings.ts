/**
 * The settings schema (SPEC R6, R12, B1, B6): one place for keys, defaults and validation.
 *
 * Files use pi's `settings.json` layout. Keys lifeline does not know at the top level are
 * kept and ignored (a pi settings file is valid here); inside the `retry` group every key pi
 * documents is accepted and checked, and any other key is an error, because a typo there would
 * silently change retry behaviour. Millisecond values that feed a timer stay within Node's
 * timer range ({@link MAX_TIMER_MS}).
 */
import * as z from "zod";
import { InvalidSettingsError } from "../errors.js";
import { DEFAULT_THINKING_LEVEL, THINKING_LEVELS } from "../thinking.js";
import { MAX_TIMER_MESSAGE, MAX_TIMER_MS } from "../timer-ms.js";
import { isProxyUrl, PROXY_URL_RULE } from "./proxy-url.js";

export { mergeSettings, type SettingsInput } from "./settings-input.js";

/** Default of `retry.provider.idleTimeoutMs` (see docs: sized for reasoning models). */
const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

// zod compiles a fast path for each object schema with `new Function` on its first parse. lifeline
// parses options and settings a few times per session, never in a hot loop, and the compile is most
// of a first parse: without it, a host's start blocks its main thread for less (bench (s)). This
// module is loaded before any of lifeline's schemas is built, on both threads and in the CLI.
z.config({ jitless: true });

/**
 * The schemas, built on first use rather than at import: building zod schemas is most of what
 * importing this module would cost, and `import "lifeline"` loads it (docs/embedding.md, "What an
 * embedding app pays").
 */
function buildSchemas() {
  const nonNegativeInt = z.number().int().min(0);
  const timerMs = nonNegativeInt.max(MAX_TIMER_MS, MAX_TIMER_MESSAGE);
  const positiveTimerMs = z.number().int().min(1).max(MAX_TIMER_MS, MAX_TIMER_MESSAGE);

  const providerSchema = z.strictObject({
    /** SDK-internal retries per model request. @default 0 (SPEC B1: lifeline is the one retry authority) */
    maxRetries: nonNegativeInt.default(0),
    /** HTTP request timeout for providers that support one, in ms. @default the provider's own */
    timeoutMs: positiveTimerMs.optional(),
    /**
     * pi's cap on a server-requested delay inside the SDK's own retries; 0 disables it. Passed to
     * pi-ai as is. It matters only when `maxRetries` above is not 0. @default pi-ai's (60000)
     */
    maxRetryDelayMs: timerMs.optional(),
    /**
     * A model stream that delivers no bytes for this long is aborted in the worker and retried as a
     * transient failure (a stalled provider never hangs a session); 0 turns it off. Long enough for
     * reasoning models that stream nothing while they think. @default 300000
     */
    idleTimeoutMs: timerMs.default(DEFAULT_IDLE_TIMEOUT_MS),
  });

  /**
   * SPEC B8: the host-wide retry budget of a provider. A retry is allowed while the retries of the
   * last `windowMs` stay under `ratio` × the first attempts of that window plus
   * `minPerSecond` × the window in seconds. Anchor: Finagle's RetryBudget (20 % of requests plus a
   * floor of 10 retries per second, over 10 s), whose numbers are the defaults here.
   */
  const budgetSchema = z.strictObject({
    /** Retries allowed per first attempt in the window. @default 0.2 */
    ratio: z.number().min(0).max(1000).default(0.2),
    /** Retries allowed per second whatever the traffic (the floor). @default 10 */
    minPerSecond: z.number().min(0).max(1_000_000).default(10),
    /** The sliding window, in ms. @default 10000 */
    windowMs: z.number().int().min(1).max(3_600_000).default(10_000),
  });

  const retrySchema = z.strictObject({
    /** Auto-retry on or off. @default true */
    enabled: z.boolean().default(true),
    /** Retries per chain; the first request is not a retry. @default 3 */
    maxRetries: nonNegativeInt.default(3),
    /** Delay before retry n is `baseDelayMs * 2^(n-1)`. @default 2000 */
    baseDelayMs: timerMs.default(2000),
    /** B6: wait at least the server's retry hint. @default false */
    respectRetryAfter: z.boolean().default(false),
    /** B6: randomise delays. @default "none" */
    jitter: z.enum(["none", "full", "equal"]).default("none"),
    /** B6: cap on any delay; a server hint above it fails the chain at once. @default no cap */
    maxDelayMs: positiveTimerMs.optional(),
    /**
     * R4: models (`"provider/id"`) a retry moves to, in order, when every key of the failing
     * provider is blocked by usage or rate limits. The session stays on the model it moved to.
     * @default none
     */
    fallbackModels: z.array(z.string().regex(/^[^/\s]+\/\S+$/, { error: 'must be "provider/id"' })).optional(),
    provider: providerSchema.default({ maxRetries: 0, idleTimeoutMs: DEFAULT_IDLE_TIMEOUT_MS }),
    /**
     * B8: one retry budget per provider for all sessions of the host; `{}` takes every default
     * (Finagle's). `false` turns it off (pi has none). @default false
     */
    budget: z
      .union([z.literal(false), budgetSchema], {
        error: "must be false or an object { ratio?, minPerSecond?, windowMs? } ({} takes the defaults)",
      })
      .default(false),
    /**
     * B8: a 429 or 529 with a retry hint closes a gate for that provider and key, for every session
     * of the host, for the hint's duration; retries and new prompts wait at it. @default false
     */
    coordinate: z.boolean().default(false),
    /** B8: most model requests in flight per provider across the host's workers. @default no limit */
    maxConcurrentRequests: z.number().int().min(1).max(1_000_000).optional(),
  });

  /**
   * SPEC X7: a session whose runs keep killing their worker is given up after more than
   * `maxRestarts` restarts within `windowMs` (OTP-style intensity). Only restarts the session is
   * blamed for count: those of a crash that happened while it had a run in flight.
   */
  const supervisionSchema = z.strictObject({
    /** Restarts allowed within the window. @default 3 (a poison prompt: its first try and 3 retries) */
    maxRestarts: nonNegativeInt.max(1000).default(3),
    /** The sliding window of `maxRestarts`, in ms. @default 60000 */
    windowMs: positiveTimerMs.default(60_000),
  });

  /**
   * Compaction (pi's keys and defaults): summarize the older part of a transcript when the context
   * overflows, or before it would (the threshold: context tokens > window − `reserveTokens`).
   */
  const compactionSchema = z.strictObject({
    /** Compaction on a context overflow and at the threshold; a manual `compact()` works either way. @default true */
    enabled: z.boolean().default(true),
    /** Tokens kept free in the window, for the summary request and the next reply. @default 16384 */
    reserveTokens: nonNegativeInt.default(16_384),
    /** Roughly how many tokens of the newest messages are kept as they are. @default 20000 */
    keepRecentTokens: nonNegativeInt.default(20_000),
  });

  /** A Redis URL: `redis://` or `rediss://` (TLS), with a host; user, password and db index optional. */
  const redisUrl = z.string().refine(
    (value) => {
      try {
        const url = new URL(value);
        return (url.protocol === "redis:" || url.protocol === "rediss:") && url.hostname !== "";
      } catch {
        return false;
      }
    },
    { error: "must be a Redis URL, as redis://127.0.0.1:6379 or rediss://user:password@host:6380/0" },
  );

  /**
   * Fleet mode (docs/fleet.md): hosts that name the same Redis and fleet `name` share the B8 retry
   * budgets, provider gates and request permits, the sessions, and a queue of prompts. Absent, the
   * host is on its own and uses no Redis.
   */
  const fleetSchema = z.strictObject({
    /** The fleet's Redis (7.x, `maxmemory-policy noeviction`). */
    redis: redisUrl,
    /**
     * The fleet's name: every key it writes starts with `lifeline:<name>:`, so two fleets can share
     * one Redis without seeing each other. @default "default"
     */
    name: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, { error: "must be 1 to 64 letters, digits, '_', '.' or '-'" })
      .default("default"),
    /**
     * How long a host's claims outlive it: a request permit, a session's lock and a queued prompt's
     * job are leases of this length, renewed while the host is alive; a dead host's come back within
     * it. @default 10000
     */
    leaseMs: z.number().int().min(500).max(600_000).default(10_000),
    /**
     * How long a stored session may stay idle (neither written nor open anywhere) before Redis
     * deletes it, in ms; 0 keeps sessions until deleted. At least `leaseMs` (checked on joining).
     * @default 2592000000 (30 days)
     */
    sessionTtlMs: z
      .number()
      .int()
      .refine((ms) => ms === 0 || ms >= 1000, { error: "must be 0 (never) or at least 1000 ms" })
      .max(315_360_000_000)
      .default(2_592_000_000),
  });

  /** A forward proxy's URL (docs/network.md; shared/settings/proxy-url.ts says what is allowed). */
  const proxyUrl = z.string().refine(isProxyUrl, { error: `must be ${PROXY_URL_RULE}` });

  const settingsSchema = z.looseObject({
    /**
     * B7, the CLI: where session files go, directly (as pi's `sessionDir` setting and `--session-dir`).
     * @default `$LIFELINE_DIR/sessions/<encoded cwd>/`
     */
    sessionDir: z.string().min(1).optional(),
    /** B7, the CLI: when session file appends reach the disk (see docs/sessions.md). @default "batch" */
    sessions: z.strictObject({ fsync: z.enum(["never", "batch", "always"]).optional() }).optional(),
    // A group left out takes its DEFAULT_SETTINGS (a copy: a session may change its own).
    retry: retrySchema.default(() => structuredClone(DEFAULTS.retry)),
    supervision: supervisionSchema.default(() => ({ ...DEFAULTS.supervision })),
    /**
     * Longest wait for one extension handler's promise; past it the handler is abandoned, an
     * `extension_error` is emitted and the extension's next event goes on. @default 5000
     */
    extensionHandlerTimeoutMs: positiveTimerMs.default(5000),
    /**
     * pi's list of extension paths. Read by the CLI only (an embedding app passes the host option
     * `extensions`): the library never runs code named in a settings file.
     */
    extensions: z.array(z.string().min(1)).optional(),
    compaction: compactionSchema.default(() => ({ ...DEFAULTS.compaction })),
    fleet: fleetSchema.optional(),
    /**
     * pi's key: the thinking level of a new session (and of a stored one that records none), clamped
     * to what the model supports; also the level a session goes back to when it moves from a model
     * without reasoning to one with. A session's `setThinkingLevel()` changes it for that session
     * only (no file is written, B5). @default "medium" (pi's)
     */
    defaultThinkingLevel: z.enum(THINKING_LEVELS).default(DEFAULT_THINKING_LEVEL),
    /**
     * The forward proxy of every model request the host's workers make, over HTTPS_PROXY / HTTP_PROXY
     * (and their lower-case forms), for `http:` and `https:` targets alike. Host-wide: refused in a
     * session's `settings`. See docs/network.md for which providers honour it. @default the variables'
     */
    proxy: proxyUrl.optional(),
    /**
     * Hosts the proxy is not used for, over NO_PROXY / no_proxy: comma- or space-separated names,
     * `.example.com` or `*.example.com` for a domain and its subdomains, `host:port`, or `*` for all.
     * Host-wide. @default the variables'
     */
    noProxy: z.string().optional(),
    /**
     * A PEM file of CA certificates the workers' TLS trusts besides Node's bundled ones (and
     * NODE_EXTRA_CA_CERTS'), for direct and proxied connections and an https:// proxy itself; a
     * relative path is taken from the host's cwd. Host-wide. @default none
     */
    caFile: z.string().min(1).optional(),
  });

  /**
   * A layer's schema: a settings file, a host's or a session's `settings` are each one layer of the
   * merged settings, and a layer may hold part of a group that another layer completes: a file's
   * `fleet` group may name the fleet and leave `redis` to `--fleet` or another file. The merged
   * settings are checked whole by {@link parseSettings}.
   */
  const layerSchema = settingsSchema.extend({ fleet: fleetSchema.partial({ redis: true }).optional() });
  return {
    providerSchema,
    budgetSchema,
    retrySchema,
    supervisionSchema,
    compactionSchema,
    fleetSchema,
    settingsSchema,
    layerSchema,
  };
}

type Schemas = ReturnType<typeof buildSchemas>;
let built: Schemas | undefined;

function schemas(): Schemas {
  built ??= buildSchemas();
  return built;
}

/**
 * The settings every session of a host shares because one worker thread serves many sessions and
 * its network (the proxy, the trusted CAs) is the thread's (docs/network.md). A session's own
 * `settings` may not set them.
 */
export const HOST_WIDE_SETTINGS = ["proxy", "noProxy", "caFile"] as const;

/** Validated compaction settings, defaults applied. */
export type CompactionSettings = z.output<Schemas["compactionSchema"]>;

/** Validated fleet settings, defaults applied. */
export type FleetSettings = z.output<Schemas["fleetSchema"]>;

/** Validated supervision settings, defaults applied. */
export type SupervisionSettings = z.output<Schemas["supervisionSchema"]>;
/** Validated retry budget settings (B8), defaults applied. */
export type RetryBudgetSettings = z.output<Schemas["budgetSchema"]>;
/** Validated retry settings, defaults applied. */
export type RetrySettings = z.output<Schemas["retrySchema"]>;
/** Validated settings, defaults applied. */
export type Settings = z.output<Schemas["settingsSchema"]>;

/** The defaults, written out: the schema's group defaults and {@link DEFAULT_SETTINGS} are these. */
const DEFAULTS = {
  retry: {
    enabled: true,
    maxRetries: 3,
    baseDelayMs: 2000,
    respectRetryAfter: false,
    jitter: "none",
    provider: { maxRetries: 0, idleTimeoutMs: DEFAULT_IDLE_TIMEOUT_MS },
    budget: false,
    coordinate: false,
  },
  supervision: { maxRestarts: 3, windowMs: 60_000 },
  extensionHandlerTimeoutMs: 5000,
  compaction: { enabled: true, reserveTokens: 16_384, keepRecentTokens: 20_000 },
  defaultThinkingLevel: DEFAULT_THINKING_LEVEL,
} as const;

/**
 * The defaults of every key, as one object (SPEC R6): what `parseSettings({})` gives, written out so
 * that importing it builds no schema (test/main/config/settings.test.ts holds the two equal).
 */
export const DEFAULT_SETTINGS: Settings = structuredClone(DEFAULTS);

/**
 * Validates a merged settings object and applies defaults.
 * @param source names where the values came from, for the error message (a file path, "overrides").
 * @throws InvalidSettingsError naming the key, the value given and what is allowed.
 */
export function parseSettings(input: unknown, source: string): Settings {
  return check(schemas().settingsSchema, input, source);
}

/**
 * Validates one layer of the settings (a settings file, a `settings` option) as {@link parseSettings}
 * validates the merged settings, except that a group another layer may complete can be partial
 * (`fleet` without `redis`).
 * @throws InvalidSettingsError as parseSettings.
 */
export function parseSettingsLayer(input: unknown, source: string): void {
  check(schemas().layerSchema, input, source);
}

function check<S extends z.ZodType>(schema: S, input: unknown, source: string): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const key = issue.path.map(String).join(".") || "(root)";
    const value = valueAt(input, issue.path);
    const given = value === undefined ? "" : ` (got ${JSON.stringify(value)})`;
    return `${key}: ${describeIssue(issue)}${given}`;
  });
  return fail(`Invalid settings in ${source}: ${problems.join("; ")}. Fix or remove these keys.`);
}

function fail(message: string): never {
  throw new InvalidSettingsError(message);
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === "unrecognized_keys") {
    return `unknown key(s) ${issue.keys.join(", ")}; allowed: ${allowedKeys(issue.path)}`;
  }
  if (issue.code === "invalid_value") {
    return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
  }
  return issue.message;
}

/** The strict groups, by the key they sit under; any other strict object is `retry`. */
function strictGroups(): Readonly<Record<string, { shape: object }>> {
  const { providerSchema, budgetSchema, compactionSchema, supervisionSchema, fleetSchema } = schemas();
  return {
    provider: providerSchema,
    budget: budgetSchema,
    compaction: compactionSchema,
    supervision: supervisionSchema,
    fleet: fleetSchema,
  };
}

function allowedKeys(path: readonly PropertyKey[]): string {
  const group = strictGroups()[String(path[path.length - 1])] ?? schemas().retrySchema;
  return Object.keys(group.shape).join(", ");
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = input;
  for (const key of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}
