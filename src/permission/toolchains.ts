export * as Toolchains from "./toolchains"

// Where the user's own programs come from: the folders on their PATH, the toolchains' folders under the home (cargo's,
// rustup's, nvm's, pyenv's, go's...) and the configuration developer tools read there (git's, pip's, cargo's). What is
// there runs outside any sandbox the next time the user types a command (`git` found first in `~/.local/bin`, a
// `.pth` file in the user's site-packages, a `rustc-wrapper` in `~/.cargo/config.toml`), so it is code the user's
// own tools run unasked (DESIGN law 13): commands read it and never change it (../shell/sandbox), and a file tool's
// change there is asked of a person each time (`change`). A PATH folder inside the Location (a project's `.venv/bin`,
// `node_modules/.bin`) is the project's own, as the rest of the Location is. Pure reading of the file system.

import { readFileSync, realpathSync } from "node:fs"
import { dirname, isAbsolute, join, resolve, sep } from "node:path"

/**
 * The toolchains' folders and the configuration developer tools read under the home, relative to it: read by
 * commands (the credential files some of them hold are carved out, ./credentials), never changed by one (../shell
 * caches their writes elsewhere); a change by a file tool is the user's own to approve (`change`).
 */
export const HOME: ReadonlyArray<string> = [
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
  // programs installed for the user (both on PATH once they exist, by the login files of Debian, Ubuntu and Fedora),
  // and caches
  "bin",
  ".local/bin",
  ".cache",
]

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
 * file's directory, as git does. A secret among them stays carved out (./credentials): git then fails rather than leak
 * it.
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

/** What developer tools read under `home`: HOME and the files the user's git config names (gitFiles). */
export const readable = (home: string): ReadonlyArray<string> => [...HOME.map((path) => join(home, path)), ...gitFiles(home)]


/** `~` and `~/x` against the home, a relative path against `from`, an absolute one as it is. */
const expand = (path: string, home: string, from: string): string =>
  path === "~" ? home : path.startsWith("~/") ? join(home, path.slice(2)) : isAbsolute(path) ? resolve(path) : resolve(from, path)

const within = (root: string, path: string): boolean =>
  path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)

/** Where `path` really is, or the path itself when it does not exist (yet). */
const really = (path: string): string => {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

/** The user's PATH folders: the absolute entries of `path`, as given and where each really is. */
export const pathFolders = (path: string | undefined): ReadonlyArray<string> => {
  const entries = (path ?? "").split(":").filter((entry) => entry.startsWith("/"))
  return [...new Set(entries.flatMap((entry) => [resolve(entry), really(entry)]))]
}

/** How long the places worked out for one home and PATH are reused: each is a few dozen lookups on the disk. */
const PLACES_MS = 2_000

interface Places {
  readonly key: string
  readonly at: number
  /** The PATH folders, as given and where each really is. */
  readonly path: ReadonlyArray<string>
  /** The home's toolchain places and git's files, as given and where each really is. */
  readonly home: ReadonlyArray<string>
}

let cached: Places | undefined

const placesOf = (home: string, path: string | undefined): Places => {
  const key = `${home}\0${path ?? ""}`
  const now = performance.now()
  if (cached !== undefined && cached.key === key && now - cached.at < PLACES_MS) return cached
  const places = readable(home)
  cached = { key, at: now, path: pathFolders(path), home: [...new Set([...places, ...places.map(really)])] }
  return cached
}

/**
 * What a change to `real` (a real path) would plant among the user's programs, or undefined: a file in a PATH
 * folder outside `location` (the real Location), or in a toolchain's folder or configuration under `home` (HOME,
 * and the files the user's git config names), unless both the path and the Location lie in that folder (a Location
 * under `~/go` holds the project's own files), or core.json grants it for writing (`granted`: shell.allowWrite, a
 * person's). `path` is the PATH the user's commands get.
 */
export const change = (
  home: string,
  real: string,
  location: string,
  path: string | undefined,
  granted: ReadonlyArray<string> = [],
): string | undefined => {
  if (granted.some((grant) => within(grant, real) || within(really(grant), real))) return undefined
  const places = placesOf(home, path)
  // Where both the path and the Location lie in a folder, the path is the project's own.
  const own = (folder: string) => within(folder, location) && within(location, real)
  const folder = places.path.find((folder) => within(folder, real) && !within(location, folder) && !own(folder))
  if (folder !== undefined) {
    return `${real}, in ${folder}, a folder on the user's PATH: a program there runs outside any sandbox whenever the user types its name`
  }
  const place = places.home.find((place) => within(place, real) && !own(place))
  return place === undefined
    ? undefined
    : `${real}, in ${place}, where the user's own toolchains and developer tools find programs and settings they run outside any sandbox`
}
