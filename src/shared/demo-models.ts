/**
 * The built-in demo models' names, known on both threads: the worker registers them
 * (worker/demo-provider.ts), the CLI resolves `--model demo-fast` to them as to any other model.
 */

/** The provider name of the demo models. */
export const DEMO_PROVIDER = "demo";

/** The demo models' ids, in the order listings show them. */
export const DEMO_MODEL_IDS = ["demo-1", "demo-stream", "demo-fast"] as const;

/** One of {@link DEMO_MODEL_IDS}. */
export type DemoModelId = (typeof DEMO_MODEL_IDS)[number];
