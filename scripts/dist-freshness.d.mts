// Types of scripts/dist-freshness.mjs, for the tests that import it.

export const SOURCES: string[];
export const STAMP: string;
export function readStamp(distDir: string): number | undefined;
export function distFreshness(root: string, sources?: string[]): { fresh: boolean; reason: string };
