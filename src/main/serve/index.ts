/** `lifeline/fleet`: serving a fleet's queue of prompts, and its client (docs/fleet.md). */
export type { FleetClientOptions, PromptHandle, ResultOptions, SubmitOptions } from "./fleet-client.js";
export { FleetClient } from "./fleet-client.js";
export type { FleetEvent, JobTakenEvent, PromptJobData, PromptJobResult } from "./fleet-queue.js";
export type { ServeSessionOptions } from "./prompt-processor.js";
export type { ServeOptions } from "./serve-fleet.js";
export { FleetServer, serveFleet } from "./serve-fleet.js";
