export * as Home from "./home"

// What a sandboxed command may reach under the user's home: the config files and toolchains developer tools read,
// the credential stores no command reads unless core.json grants them, the PATH programs and what they are
// installed from, and the cache variables that point tools at a cache of the Location's own. It works out paths
// only; ./sandbox turns them into grants, and nothing here decides permissions.

import { type Dirent, lstatSync, readdirSync, readFileSync, realpathSync } from "node:fs"
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path"
import { Credentials } from "../permission/credentials"

/**
 * Read-only under the home: configuration and toolchains that hold no secrets of their own (the credential files
 * some of them hold are in DENIED, carved out wherever they lie). Caches are read here but written elsewhere (CACHES).
 * Read-only even where a write grant holds them (a Location that is the home or holds it): what the user's own
 * git, cargo or pip reads, or runs from PATH, outside the sandbox is never changed by a command.
 */
export const READABLE: ReadonlyArray<string> = [
  // git
  ".gitconfig",
  ".config/git",
  ".gitignore",
  ".gitignore_global",
  ".gitattributes",
  // editors and formatters that read a user-wide file
  ".editorconfig",
  // Rust
  ".cargo",
  ".rustup",
  // JavaScript
  ".bun",
  ".deno",
  ".npm",
  ".nvm",
  ".volta",
  ".yarn",
  ".local/share/pnpm",
  // Go
  "go",
  ".config/go",
  // Python
  ".config/pip",
  ".pip",
  ".pyenv",
  ".config/uv",
  ".local/share/uv",
  ".local/pipx",
  ".local/lib",
  // Ruby, Java
  ".rbenv",
  ".sdkman",
  ".m2",
  ".gradle",
  // programs installed for the user, and caches
  ".local/bin",
  ".cache",
]

/** Secrets under the home: never read or written by a command unless core.json grants that very path. */
export const DENIED: ReadonlyArray<string> = Credentials.STORES

/**
 * Where tools write their caches: each variable names a directory under the Location's cache directory (cacheOf),
 * never the home's caches, which a command could otherwise fill with code the user later runs unsandboxed.
 */
export const CACHES: ReadonlyArray<readonly [variable: string, under: string]> = [
  ["XDG_CACHE_HOME", "."],
  ["GOCACHE", "go-build"],
  ["npm_config_cache", "npm"],
  ["PIP_CACHE_DIR", "pip"],
  ["BUN_INSTALL_CACHE_DIR", "bun"],
  ["YARN_CACHE_FOLDER", "yarn"],
]

/**
 * The cache directory of a Location under `data` (core's data directory), one per Location. Not in the temp
 * directory: every command may write there, and the name, worked out from the Location, would let one Location's
 * command fill another's cache with code that Location's commands then run. core's data directory is hidden from
 * every command; each call is granted its own Location's cache alone.
 */
export const cacheOf = (data: string, location: string): string =>
  join(data, "caches", new Bun.CryptoHasher("sha256").update(location).digest("hex").slice(0, 16))

/** The variables that send tools' caches to `cache`. */
export const cacheEnv = (cache: string): Record<string, string> =>
  Object.fromEntries(CACHES.map(([variable, under]) => [variable, join(cache, under)]))

/** `~` and `~/x` against the home, a relative path against the Location, an absolute one as it is. */
export const expand = (path: string, home: string, location: string): string =>
  path === "~" ? home : path.startsWith("~/") ? join(home, path.slice(2)) : isAbsolute(path) ? resolve(path) : resolve(location, path)

const within = (root: string, path: string): boolean =>
  path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)

/** How deep git's includes are followed (git itself stops at 10). */
const INCLUDES_MAX = 5

/**
 * A git config line's key and value (`key = value`, `key = "value"`, after an optional `[section]`), or undefined,
 * as `/^\s*(?:\[[^\]]*\]\s*)?([a-z0-9-]+)\s*=\s*"?([^"\n#;]+?)"?\s*$/i` took them: the value stops before `"`, `#`
 * or `;`, and only a closing `"` and spaces may follow it; only spaces after `=` give the last of them. Found by plain
 * searches, as that pattern tried every split of a line's spaces (cubic: minutes for 10,000).
 */
const configEntry = (line: string): readonly [string, string] | undefined => {
  const head = /^\s*(?:\[[^\]]*\]\s*)?([a-z0-9-]+)\s*=/i.exec(line)
  if (head === null) return undefined
  const rest = line.slice(head[0].length)
  const spaces = rest.length - rest.trimStart().length
  const after = rest.slice(spaces)
  // The value at the start of `text`: up to its trailing spaces, or up to a closing quote that only spaces follow.
  const valueOf = (text: string): string | undefined => {
    const stop = text.search(/["\n#;]/)
    if (stop === -1) return text === "" ? undefined : text.slice(0, Math.max(text.trimEnd().length, 1))
    return text[stop] === '"' && stop >= 1 && text.slice(stop + 1).trim() === "" ? text.slice(0, stop) : undefined
  }
  const value =
    (after.startsWith('"') ? valueOf(after.slice(1)) : undefined) ??
    valueOf(after) ??
    ((after === "" || after === '"') && spaces >= 1 ? rest[spaces - 1] : undefined)
  return value === undefined ? undefined : [head[1]!, value]
}

/**
 * The files the user's git config names for git to read, under the home: `core.excludesFile`,
 * `core.attributesFile`, and the files `[include]` and `[includeIf]` sections pull in (git gives up on a config whose
 * include it may not read), followed through their own includes. A relative path is taken against the including
 * file's directory, as git does. A secret among them stays carved out (DENIED): git then fails rather than leak it.
 */
const gitFiles = (home: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  const visit = (file: string, depth: number): void => {
    let text: string
    try {
      text = readFileSync(file, "utf8")
    } catch {
      return
    }
    let section = ""
    for (const line of text.split("\n")) {
      const header = /^\s*\[\s*([a-z0-9.-]+)/i.exec(line)
      if (header !== null) section = header[1]!.toLowerCase()
      const entry = configEntry(line)
      if (entry === undefined) continue
      const key = entry[0].toLowerCase()
      const named =
        (section === "core" && (key === "excludesfile" || key === "attributesfile")) ||
        ((section === "include" || section === "includeif") && key === "path")
      if (!named) continue
      const path = expand(entry[1].trim(), home, dirname(file))
      if (!within(home, path) || found.includes(path)) continue
      found.push(path)
      if (key === "path" && depth < INCLUDES_MAX) visit(path, depth + 1)
    }
  }
  for (const config of [join(home, ".gitconfig"), join(home, ".config/git/config")]) visit(config, 0)
  return found
}

/** What developer tools read under `home`: READABLE and the files the user's git config names (gitFiles). */
export const readable = (home: string): ReadonlyArray<string> => [...READABLE.map((path) => join(home, path)), ...gitFiles(home)]

/** The credential stores under `home` that exist (one that does not needs no carving). */
export const denied = (home: string): ReadonlyArray<string> =>
  [
    ...DENIED.map((path) => join(home, path)),
    // Each installed Node version's global npmrc.
    ...Credentials.VERSIONED.flatMap(({ versions, file }) => {
      try {
        return readdirSync(join(home, versions)).map((version) => join(home, versions, version, file))
      } catch {
        return []
      }
    }),
  ].filter((path) => lstatSync(path, { throwIfNoEntry: false }) !== undefined)

/**
 * Where a program installed as a symlink lives: the package holding its target (the directory under the nearest
 * `node_modules`, as npm and nvm link their bins), else the directory above a `bin/` holding it (a venv, a
 * toolchain's own tree), else the target's directory.
 */
const installOf = (target: string): string => {
  const parts = target.split(sep)
  const modules = parts.lastIndexOf("node_modules")
  if (modules !== -1 && modules + 1 < parts.length - 1) {
    const scoped = parts[modules + 1]!.startsWith("@") ? 2 : 1
    return parts.slice(0, modules + 1 + scoped).join(sep)
  }
  const directory = dirname(target)
  return basename(directory) === "bin" ? dirname(directory) : directory
}

/**
 * What PATH makes readable beyond the system directories: each PATH directory itself, and where a program in it
 * is a symlink leading elsewhere, the install that program comes from (installOf). Never a PATH directory's parent
 * as such: `~/.cargo/bin` grants `~/.cargo/bin`, and `~/.cargo` only through READABLE, with its credentials carved.
 * Directories under `skip` (the system's, readable whole) are not looked into, unless under `carved` (the home, where
 * it lies in one of them); nor, for links, those under `untrusted` (where a command may write: a link planted there
 * must not grant what it points at).
 */
export const programs = (
  path: string | undefined,
  skip: ReadonlyArray<string>,
  untrusted: ReadonlyArray<string>,
  carved?: string,
): ReadonlyArray<string> => {
  // The home, where it lies in a system directory, is carved out of it: what lies there is granted as found.
  const skipped = (directory: string) => skip.some((root) => within(root, directory)) && !(carved !== undefined && within(carved, directory))
  const found: Array<string> = []
  for (const entry of new Set((path ?? "").split(":"))) {
    if (!entry.startsWith("/")) continue
    let directory: string
    try {
      directory = realpathSync(entry)
    } catch {
      continue
    }
    if (skipped(directory)) continue
    found.push(directory)
    if (untrusted.some((root) => within(root, directory))) continue
    let entries: Array<Dirent>
    try {
      // The entries' types come with the listing: only links cost a look-up.
      entries = readdirSync(directory, { withFileTypes: true })
    } catch {
      continue
    }
    for (const entry of entries) {
      if (!entry.isSymbolicLink()) continue
      try {
        const target = realpathSync(join(directory, entry.name))
        if (!within(directory, target) && !skipped(target)) found.push(installOf(target))
      } catch {
        // A dangling link runs nothing.
      }
    }
  }
  return found
}
