// Types of scripts/host-schema.mjs, for the tests that import it.

export const SCHEMA_PATH: string;
export function hostProtocolSchema(): Promise<Record<string, unknown> & { definitions: Record<string, unknown> }>;
export function hostProtocolSchemaText(): Promise<string>;
