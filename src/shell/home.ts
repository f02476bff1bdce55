export * as Home from "./home"

// What a sandboxed command may reach under the user's home: the config files and toolchains developer tools read
// (../permission/toolchains), the credential stores no command reads unless core.json grants them, the PATH programs
// and what they are installed from, and the cache variables that point tools at a cache of the Location's own. It
// works out paths only; ./sandbox turns them into grants, and nothing here decides permissions.

import { lstatSync, readdirSync, realpathSync } from "node:fs"
import { isAbsolute, join, resolve, sep } from "node:path"
import { Credentials } from "../permission/credentials"
import { Toolchains } from "../permission/toolchains"

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
 * What PATH makes readable beyond the system directories: each PATH directory itself, and where a program in it
 * is a symlink leading elsewhere, the install that program comes from (installOf). Never a PATH directory's parent
 * as such: `~/.cargo/bin` grants `~/.cargo/bin`, and `~/.cargo` only through Toolchains.HOME, with its credentials carved.
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
    for (const target of Toolchains.linkTargets(directory)) {
      if (!within(directory, target) && !skipped(target)) found.push(Toolchains.installOf(target))
    }
  }
  return found
}
