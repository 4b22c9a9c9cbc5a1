/**
 * The host options a program can see are the documented ones: the test-only `connect` (an
 * in-process source of worker endpoints) and `sleep` (an injected retry sleep) live in
 * src/main/host/host-internals.ts, not in the types the package's main entry exports, and a host
 * refuses them as unknown options (STYLE 9: options are documented and checked at the boundary).
 */
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { createSessionHost } from "../../../src/main/host/session-host.js";

// In memory only: the compiler host below serves it, nothing is written.
const probeFile = join(import.meta.dirname, "__public-host-options-probe.ts");

/**
 * The property names of each options type a user of `lifeline` (src/main/index.ts) can reach:
 * `SessionHostOptions`, `createSessionHost`'s parameter and `SessionHost`'s constructor's.
 */
function publicOptionNames(): Record<string, string[]> {
  const probe = `import type { createSessionHost, SessionHost, SessionHostOptions } from "../../../src/main/index.js";
export type Declared = SessionHostOptions;
export type Created = NonNullable<Parameters<typeof createSessionHost>[0]>;
export type Constructed = NonNullable<ConstructorParameters<typeof SessionHost>[0]>;
`;
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    exactOptionalPropertyTypes: true,
    skipLibCheck: true,
    types: ["node"],
    noEmit: true,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (file, language, ...rest) =>
    file === probeFile ? ts.createSourceFile(file, probe, language) : getSourceFile(file, language, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (file) => file === probeFile || fileExists(file);
  const program = ts.createProgram([probeFile], options, host);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(probeFile);
  if (source === undefined) throw new Error("the probe did not compile");
  const names: Record<string, string[]> = {};
  for (const statement of source.statements) {
    if (!ts.isTypeAliasDeclaration(statement)) continue;
    const type = checker.getTypeAtLocation(statement.name);
    names[statement.name.text] = checker.getPropertiesOfType(type).map((property) => property.name);
  }
  return names;
}

describe("the public host options", () => {
  it("name neither connect nor sleep, in the type or in the parameters of createSessionHost and SessionHost", () => {
    const names = publicOptionNames();
    expect(Object.keys(names).sort()).toEqual(["Constructed", "Created", "Declared"]);
    for (const [alias, properties] of Object.entries(names)) {
      // A probe that resolved nothing would pass vacuously: the documented options are there.
      expect([alias, properties]).toEqual([alias, expect.arrayContaining(["threads", "workerEntry", "sessions"])]);
      expect([alias, properties.filter((name) => name === "connect" || name === "sleep")]).toEqual([alias, []]);
    }
  }, 60_000);

  it("refuse connect and sleep as unknown options (ERR_INVALID_OPTIONS)", () => {
    for (const field of ["connect", "sleep"]) {
      expect(() => createSessionHost({ [field]: () => undefined } as object)).toThrow(
        expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }),
      );
    }
  });
});
