// Types of scripts/build.mjs, for the tests that import it.

export interface BuildStep {
  name: string;
  run(outDir: string, root: string): unknown;
}

export interface BuildOptions {
  root?: string;
  steps?: BuildStep[];
  log?: (line: string) => void;
}

export const BUILD_STEPS: BuildStep[];
export const TEMP_PREFIXES: string[];
export function build(options?: BuildOptions): Promise<void>;
export function buildIfStale(options?: BuildOptions): Promise<boolean>;
export function prepareAction(npmCommand: string | undefined, distExists: boolean): "build" | "skip";
