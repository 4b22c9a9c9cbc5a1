/** `lifeline/fleet`: serving a fleet's queue of prompts, and its client (docs/fleet.md). */
export type { FleetClientOptions, PromptHandle, ResultOptions, SubmitOptions } from "./fleet-client.js";
export { FleetClient } from "./fleet-client.js";
export type { FleetEvent, JobTakenEvent, PromptJobData, PromptJobResult } from "./fleet-queue.js";
export { FleetServer, serveFleet } from "./serve-fleet.js";
export type { ServeOptions, ServeSessionOptions } from "./serve-options.js";
