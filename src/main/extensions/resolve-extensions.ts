/**
 * Extension paths as pi resolves them, to the files jiti imports. A path is taken from `cwd`
 * (`~/` is the home directory). A file is itself, whatever its extension. A directory is, in
 * this order:
 * 1. the entries of its `package.json` `pi.extensions` array (those that exist), if any;
 * 2. its `index.ts`, else its `index.js`;
 * 3. else every `*.ts` and `*.js` file directly in it, and each subdirectory's entries by 1-2
 *    (one level; names starting with "." and `node_modules` skipped), in name order.
 * A file reached twice is loaded once, where it first appeared.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { ExtensionLoadError } from "../../shared/errors.js";

/** An extension file: `file` is absolute; `path` names it as the user did (for messages). */
export interface ResolvedExtension {
  file: string;
  path: string;
}

/**
 * The extension files `paths` name, in order, each once (see the module comment). Called by
 * `createSessionHost` and by the CLI before it starts a host, so a bad path is reported at once.
 * @throws ExtensionLoadError (ERR_EXTENSION_LOAD) for a path that does not exist or a directory
 *   that holds no extension; the message names the path, where it was looked for, and what to do.
 */
export function resolveExtensions(paths: readonly string[], cwd: string): ResolvedExtension[] {
  const out: ResolvedExtension[] = [];
  const seen = new Set<string>();
  for (const path of paths) {
    for (const file of entriesOf(path, cwd)) {
      if (seen.has(file)) continue;
      seen.add(file);
      out.push({ file, path: file === resolvePath(path, cwd) ? path : `${path} (${file})` });
    }
  }
  return out;
}

function entriesOf(path: string, cwd: string): string[] {
  const absolute = resolvePath(path, cwd);
  let isDirectory: boolean;
  try {
    isDirectory = statSync(absolute).isDirectory();
  } catch {
    throw new ExtensionLoadError(
      path,
      `Extension ${path} does not exist (looked for ${absolute}; a relative path is taken from ${cwd}). Fix the path given to --extension/-e, the "extensions" setting or the host's extensions option.`,
    );
  }
  if (!isDirectory) return [absolute];
  const entries = directoryEntries(absolute) ?? discover(absolute);
  if (entries.length === 0) {
    throw new ExtensionLoadError(
      path,
      `Extension directory ${path} (${absolute}) holds no extension: give it an index.ts or index.js, a package.json with "pi": { "extensions": [...] }, or .ts/.js files.`,
    );
  }
  return entries;
}

/** Rules 1 and 2: the manifest's entries, or the index file; undefined when neither applies. */
function directoryEntries(dir: string): string[] | undefined {
  const manifest = piManifestEntries(dir);
  if (manifest !== undefined) return manifest;
  for (const index of ["index.ts", "index.js"]) {
    const file = join(dir, index);
    if (existsSync(file)) return [file];
  }
  return undefined;
}

function piManifestEntries(dir: string): string[] | undefined {
  let pkg: unknown;
  try {
    pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  } catch {
    return undefined;
  }
  const list = (pkg as { pi?: { extensions?: unknown } } | null)?.pi?.extensions;
  if (!Array.isArray(list)) return undefined;
  const files = list
    .filter((entry): entry is string => typeof entry === "string")
    .map((entry) => resolve(dir, entry))
    .filter((file) => existsSync(file));
  return files.length > 0 ? files : undefined;
}

/** Rule 3. */
function discover(dir: string): string[] {
  const found: string[] = [];
  const names = readdirSync(dir).sort();
  for (const name of names) {
    if (name.startsWith(".") || name === "node_modules") continue;
    const full = join(dir, name);
    let stats: ReturnType<typeof statSync>;
    try {
      stats = statSync(full);
    } catch {
      continue;
    }
    if (stats.isFile() && (name.endsWith(".ts") || name.endsWith(".js"))) found.push(full);
    else if (stats.isDirectory()) found.push(...(directoryEntries(full) ?? []));
  }
  return found;
}

function resolvePath(path: string, cwd: string): string {
  const expanded = path === "~" ? homedir() : path.startsWith("~/") ? join(homedir(), path.slice(2)) : path;
  return isAbsolute(expanded) ? expanded : resolve(cwd, expanded);
}
