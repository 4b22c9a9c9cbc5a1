/**
 * Replays a property test's failure: fast-check prints `{ seed: …, path: … }` with every failed
 * property, and `FC_SEED=<seed> npx vitest run <file>` runs that file's properties from that seed
 * (`FC_PATH=<path>` too, to go straight to the shrunk counterexample). Without them, each run
 * draws a fresh seed, so every property must hold for any seed.
 */
import fc from "fast-check";

const seed = process.env.FC_SEED;
const path = process.env.FC_PATH;
if (seed !== undefined && seed !== "") {
  fc.configureGlobal({ seed: Number(seed), ...(path === undefined || path === "" ? {} : { path }) });
}
