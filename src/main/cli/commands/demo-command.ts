/**
 * `lifeline demo`, behind `npm start`: one prompt on the built-in demo model, which fails twice
 * with transient errors, retries and answers; no key, no network, no session file. It takes the
 * host's flags (a worker script, extensions, a fleet), not the model's or the session's.
 */
import type { CliContext } from "../cli-context.js";
import { command } from "../command-tree.js";
import { sessionHostFlags, sessionHostOptions } from "../groups/host-flags.js";

const DEMO_PROMPT = "Say hello to lifeline.";
const DEMO_MODEL = "demo/demo-1";

/** `lifeline demo`. */
export const demoCommand = command<CliContext, typeof sessionHostFlags>({
  name: "demo",
  description: "run the demo job: one session on the built-in demo model that fails, retries, recovers and answers",
  flags: sessionHostFlags,
  run: async ({ flags, context }) => {
    return context.runtime.print({
      messages: [DEMO_PROMPT],
      model: DEMO_MODEL,
      flags: {},
      host: { ...(await sessionHostOptions(flags, context)), sessions: false },
      banner:
        `lifeline demo: prompt "${DEMO_PROMPT}" on ${DEMO_MODEL} (a built-in model in a worker thread; no key, no network).\n` +
        "The model fails twice with transient errors; the retry controller on the main thread backs off and retries.",
    });
  },
});
