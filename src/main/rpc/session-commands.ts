/**
 * The work behind pi's session commands in RPC mode that is more than a call on the session
 * (rpc-commands.ts holds the table; docs/rpc.md describes each command).
 */
import type { Api, Model } from "@mariozechner/pi-ai";
import type { SessionHost } from "../host/session-host.js";
import type { AgentSession } from "../session/agent-session.js";

/**
 * `cycle_model`: switches `session` to the model after its own in the list `get_available_models`
 * answers, wrapping around, as pi cycles its available models when no `--models` scope is given
 * (lifeline has no scope). A current model missing from the list counts as the first, as in pi.
 * Resolves with the new model, or undefined when there is at most one model (nothing changes).
 * @throws what `setModel` throws (a listed model without a key); the model is unchanged then.
 */
export async function nextModel(host: SessionHost, session: AgentSession): Promise<Model<Api> | undefined> {
  const models = await host.availableModels();
  if (models.length <= 1) return undefined;
  const current = session.model;
  const index = Math.max(
    0,
    models.findIndex((model) => model.provider === current.provider && model.id === current.id),
  );
  const next = models[(index + 1) % models.length] as Model<Api>;
  return session.setModel({ provider: next.provider, id: next.id });
}
