export * as Protected from "./protected"

// What configures core, and so may change only with a person's approval asked each time (DESIGN §2 law 13): a
// Location's core.json, tools/, plugins/, .core/ and the other folders core loads skills from (instructions every
// later session is shown), everything under $CORE_HOME and $CORE_DATA_DIR, the code the
// tool and plugin files import (./closure), and what the user's own git runs (./git); and what no tool reads:
// $CORE_DATA_DIR (the settlement store, saved approvals) except the managed outputs. Paths are matched by where
// they really are: by name without regard to case, and by file identity (a bind mount, a case-folding file system,
// a hard link). Pure policy over the file system's answers; it never asks anyone.

import { lstatSync, readdirSync, realpathSync, statSync } from "node:fs"
import { homedir } from "node:os"
import { basename, dirname, join, relative, resolve, sep } from "node:path"
import { Boundary } from "./boundary"
import { Closure } from "./closure"
import { Git } from "./git"
import { SidecarPorts } from "./sidecar-ports"

/** The folders of a Location core loads skills from, in order of precedence (../location/skills reads them). */
export const SKILL_FOLDERS = [".core/skills", ".opencode/skills", ".opencode/skill", ".claude/skills"] as const

/** The entries of a Location that configure core (a nested one moves with a folder above it renamed). */
export const LOCATION_ENTRIES = ["core.json", "tools", "plugins", ".core", ".opencode/skills", ".opencode/skill", ".claude/skills"] as const

/** Files looked at when searching protected directories for a hard link's other names. */
export const MAX_SCANNED = 5_000

export interface Roots {
  /** The Location's real directory. */
  readonly location: string
  /** `$CORE_HOME`. */
  readonly home: string
  /** `$CORE_DATA_DIR`. */
  readonly dataDir: string
  /** Directories under the data dir that tools may read (the managed outputs). */
  readonly readable: ReadonlyArray<string>
  /**
   * The other Locations this core serves now (real directories): their configuration is core's as much as this
   * one's, and a change to theirs is loaded as soon as it is written.
   */
  readonly others?: () => ReadonlyArray<string>
  /** `home`, `dataDir` and `readable` where they really are, and who they are, when the roots were made. */
  readonly fixed: {
    readonly home: ReadonlyArray<Place>
    readonly data: ReadonlyArray<Place>
    readonly readable: ReadonlyArray<string>
    readonly readableIdentities: ReadonlyArray<Identity | undefined>
  }
}

/** `$CORE_HOME` and `$CORE_DATA_DIR` as core resolves them from an environment (their defaults included). */
export const directoriesOf = (env: Record<string, string | undefined> = process.env) => ({
  home: resolve(env.CORE_HOME || join(homedir(), ".config/core")),
  dataDir: resolve(env.CORE_DATA_DIR || join(homedir(), ".local/share/core")),
})

/** One protected place: where it is (as written, or really), what a person is told it is, and who it is. */
export interface Place {
  readonly path: string
  readonly what: string
  readonly identity: Identity | undefined
}

export interface Identity {
  readonly dev: number
  readonly ino: number
  /** When the file was made (0 where the file system does not say): an inode number used again is another file. */
  readonly born?: number
}

/** lstat without an exception for a missing path (or one under a file): exceptions cost more than the lookup. */
const lstatFree = (path: string) => {
  try {
    return lstatSync(path, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

const identityOf = (path: string, follow = true): Identity | undefined => {
  try {
    const stats = follow ? statSync(path, { throwIfNoEntry: false }) : lstatSync(path, { throwIfNoEntry: false })
    return stats === undefined ? undefined : { dev: stats.dev, ino: stats.ino, born: stats.birthtimeMs }
  } catch {
    return undefined
  }
}

/**
 * Protected places as they were last seen, by who they are (what each is, by its identity): a command may rename
 * a folder holding one away while it runs and back before it ends, and a file tool writing the file under the
 * folder's new name meanwhile would change the code core loads. Who a file is survives a rename; a place seen
 * once stays protected under any name for the life of the process (the most recent MAX_SEEN).
 */
const seen = new Map<string, string>()
const MAX_SEEN = 100_000

const keyOf = (identity: Identity) => `${identity.dev}:${identity.ino}:${identity.born ?? 0}`

const remember = (places: ReadonlyArray<Place>) => {
  for (const place of places) {
    if (place.identity === undefined) continue
    const key = keyOf(place.identity)
    if (seen.get(key) === place.what) continue
    seen.delete(key)
    seen.set(key, place.what)
    if (seen.size > MAX_SEEN) seen.delete(seen.keys().next().value!)
  }
}

/** The protected place seen earlier that `real` is, or lies in, under whatever name it has now. */
const seenAs = (real: string): string | undefined => {
  if (seen.size === 0) return undefined
  for (let current = real; ; current = dirname(current)) {
    const stats = lstatFree(current)
    if (stats !== undefined) {
      const what = seen.get(keyOf({ dev: stats.dev, ino: stats.ino, born: stats.birthtimeMs }))
      if (what !== undefined) return current === real ? `${what}, under another name` : `${what}, under another name (${current})`
    }
    if (dirname(current) === current) return undefined
  }
}

const same = (left: Identity | undefined, right: Identity | undefined) =>
  left !== undefined && right !== undefined && left.dev === right.dev && left.ino === right.ino

/** The nearest existing ancestor's real path, with the missing tail joined on. */
const realOf = (path: string): string => {
  let current = path
  const tail: Array<string> = []
  while (lstatFree(current) === undefined) {
    const parent = dirname(current)
    if (parent === current) return path
    tail.push(basename(current))
    current = parent
  }
  try {
    return join(realpathSync(current), ...tail.reverse())
  } catch {
    return path
  }
}

/** A directory as written and where it really is (both, when they differ). */
const placesOf = (path: string, what: string): ReadonlyArray<Place> => {
  const real = realOf(path)
  const identity = identityOf(real)
  return real === path ? [{ path, what, identity }] : [{ path, what, identity }, { path: real, what, identity }]
}

/** The folder of the user's sidecars' ports (SidecarPorts): taking one out would let commands reach that sidecar. */
const sidecarPlaces = (): ReadonlyArray<Place> => {
  const folder = SidecarPorts.folder()
  return folder === undefined ? [] : placesOf(folder, `${folder} (the ports of the user's core sidecars, which no command may reach)`)
}

/**
 * The protected places of a Location. `$CORE_HOME` and `$CORE_DATA_DIR` are resolved once, here: moving either
 * later is itself a change to them (or to a directory holding them), which is protected.
 */
export const roots = (input: Omit<Roots, "fixed">): Roots => ({
  ...input,
  fixed: {
    home: placesOf(input.home, `$CORE_HOME (${input.home}: core's configuration and code for every Location)`),
    data: [
      ...placesOf(input.dataDir, `$CORE_DATA_DIR (${input.dataDir}: core's settlement store and saved approvals)`),
      ...sidecarPlaces(),
    ],
    readable: input.readable.flatMap((root) => [root, realOf(root)]),
    readableIdentities: input.readable.map((root) => identityOf(root)),
  },
})

/**
 * Where the skills of a skill folder lead when they are links: a skill's directory linked from elsewhere (a shared
 * folder of the Location), or its SKILL.md. Skills load through them, so what they lead to is the skill.
 */
const linkedSkills = (folder: string, shown: string, which: string): Array<Place> => {
  let entries
  try {
    entries = readdirSync(folder, { withFileTypes: true })
  } catch {
    return []
  }
  const found: Array<Place> = []
  const add = (link: string, name: string) => {
    const real = realOf(link)
    found.push({ path: real, what: `${real}, where the skill ${shown}/${name} of ${which} leads (skills core shows every session)`, identity: identityOf(real) })
  }
  for (const entry of entries) {
    const path = join(folder, entry.name)
    if (entry.isSymbolicLink()) add(path, entry.name)
    else if (entry.isDirectory() && lstatFree(join(path, "SKILL.md"))?.isSymbolicLink() === true) add(join(path, "SKILL.md"), `${entry.name}/SKILL.md`)
  }
  return found
}

/** A Location's protected entries, looked up now: one may have become a symlink leading elsewhere. */
const locationPlaces = (location: string, which = "the Location"): Array<Place> =>
  LOCATION_ENTRIES.flatMap((entry) => {
    const path = join(location, entry)
    const what = (SKILL_FOLDERS as ReadonlyArray<string>).includes(entry)
      ? `${entry}/ of ${which} (skills core shows every session)`
      : `${entry}${entry === "core.json" ? "" : "/"} of ${which} (core's configuration and code)`
    const stats = lstatFree(path)
    if (stats === undefined) return [{ path, what, identity: undefined }]
    if (!stats.isSymbolicLink()) return [{ path, what, identity: { dev: stats.dev, ino: stats.ino } }]
    const real = realOf(path)
    const identity = identityOf(real)
    return [{ path, what, identity }, { path: real, what, identity }]
  })

/** The other Locations served now, but this one. */
const othersOf = (roots: Roots): ReadonlyArray<string> =>
  roots.others === undefined ? [] : roots.others().filter((other) => other !== roots.location)

/**
 * Code core loads (`import`: a tool or plugin file imports it), a skill core shows that lies outside the skill
 * folders (`skill`: where a linked skill leads), or what the user's git runs (`git`).
 */
export interface Code extends Place {
  readonly kind: "import" | "skill" | "git"
  /** Put back once a command has ended rather than held read-only while it runs (Git.Place `restored`). */
  readonly restored?: true
}

/** How a path is shown to a person: from the Location when inside it. */
const shown = (location: string, path: string): string => {
  const inside = relative(location, path)
  return inside === "" || inside.startsWith("..") ? path : inside
}

/**
 * What core loads, or the user's git runs, from outside the sandbox beyond the Locations' entries: the import
 * closure of the tool and plugin files of `locations` and `home`, where the linked skills of each Location lead,
 * and the git places of each Location. Looked up now (each file's imports are remembered while it stays the same).
 */
export const code = (locations: ReadonlyArray<string>, home: string): Array<Code> => {
  const location = locations[0] ?? home
  const closure = Closure.of([...locations, home].flatMap(Closure.rootsOf))
  const imported: Array<Code> = closure.reached.map(({ path, by, identity }) => ({
    path,
    what: `${shown(location, path)}, code that ${shown(location, by)} imports (core runs it, outside the sandbox)`,
    identity,
    kind: "import" as const,
  }))
  // Past what can be followed file by file, what the rest of the closure is cannot be told: the Locations are
  // protected whole rather than leave it the model's, by path alone (not remembered by identity: once the closure
  // is followed whole again, the Location is the model's again).
  if (!closure.complete) {
    for (const each of locations) {
      imported.push({
        path: each,
        what:
          closure.unread === undefined
            ? `${each}, whose tool and plugin files import more than ${Closure.MAX_FOLLOWED} files and packages: core ` +
              "cannot tell them apart, so it protects the whole Location (import fewer, or a person makes the change)"
            : `${each}, whose tool and plugin files import ${shown(location, closure.unread)}, larger than ` +
              `${Closure.MAX_READ_BYTES / 1_048_576} MiB: core does not read what it imports, so it protects the whole ` +
              "Location (a person makes the change)",
        identity: undefined,
        kind: "import",
      })
    }
  }
  const skills = locations.flatMap((each) =>
    SKILL_FOLDERS.flatMap((folder) => linkedSkills(join(each, folder), folder, each === location ? "the Location" : `the Location ${each}`)),
  )
  const git = locations.flatMap((each) =>
    Git.places(each).map((place) => ({ ...place, identity: identityOf(place.path, false), kind: "git" as const })),
  )
  return [...imported, ...skills.map((place) => ({ ...place, kind: "skill" as const })), ...git]
}

/** Whether `path` is `root` or under it, ignoring case (a case-folding file system makes them one). */
const within = (root: string, path: string): boolean => {
  const base = root.toLowerCase()
  const target = path.toLowerCase()
  return target === base || target.startsWith(base.endsWith(sep) ? base : base + sep)
}

/** Whether a file with other names (hard links) has one of them under `directory`, looking at MAX_SCANNED entries. */
const linkedUnder = (directory: string, identity: Identity, budget: { left: number }): boolean => {
  let entries
  try {
    entries = readdirSync(directory, { withFileTypes: true })
  } catch {
    return false
  }
  for (const entry of entries) {
    if (--budget.left < 0) return true
    const path = join(directory, entry.name)
    if (entry.isDirectory()) {
      if (linkedUnder(path, identity, budget)) return true
    } else if (entry.isFile() && same(identityOf(path, false), identity)) return true
  }
  return false
}

/**
 * The missing protected place that `real` would make, where a folder above the place is a link: a command may make
 * `lib` a link to `lib2` (the link is no protected place, and nothing is written through it), and then a file tool
 * writing `lib/fmt.ts` or `lib2/fmt.ts` writes the missing `lib/fmt.ts` a tool file imports. An existing place is
 * known by its identity under any name (`seenAs`); a missing one has none, so where it would be made is looked up,
 * once per folder it would be made in.
 */
const madeThrough = (
  location: string,
  configuration: ReadonlyArray<Place>,
  code: ReadonlyArray<Place>,
  real: string,
  encloses: boolean,
  enclosesCode: boolean,
): string | undefined => {
  // Each folder's real path from its parent's: one lstat per folder, a whole walk only for a link.
  const folders = new Map<string, string | null>()
  const realFolder = (folder: string): string | undefined => {
    const known = folders.get(folder)
    if (known !== undefined) return known ?? undefined
    const parent = dirname(folder)
    const above = parent === folder ? "" : realFolder(parent)
    let found: string | undefined = folder
    if (above === undefined) found = undefined
    else if (above !== "") {
      const at = join(above, basename(folder))
      found = lstatFree(at)?.isSymbolicLink() === true ? Boundary.realOf(at) : at
    }
    folders.set(folder, found ?? null)
    return found
  }
  /** Where a missing place would be made, when that is not where it is written. */
  const madeAt = (place: Place): string | undefined => {
    if (place.identity !== undefined) return undefined
    const folder = dirname(place.path)
    const found = realFolder(folder)
    return found === undefined || found === folder ? undefined : join(found, basename(place.path))
  }
  const made = (place: Place, at: string) => `${place.what}, where it would be made (${shown(location, at)})`
  for (const place of configuration) {
    const at = madeAt(place)
    if (at === undefined) continue
    if (within(at, real)) return made(place, at)
    if (encloses && within(real, at)) return `${real}, which holds ${made(place, at)}`
  }
  // Code counts as itself only, unless `enclosesCode`: `real` is where one would be made, or under it, only if it
  // has that name in it.
  const names = new Set(real.toLowerCase().split(sep))
  for (const place of code) {
    if (!enclosesCode && !names.has(basename(place.path).toLowerCase())) continue
    const at = madeAt(place)
    if (at === undefined) continue
    if (within(at, real)) return made(place, at)
    if (enclosesCode && within(real, at)) return `${shown(location, real)}, which holds ${made(place, at)}`
  }
  return undefined
}

/** Core's configuration (the Locations' own, `$CORE_HOME`, `$CORE_DATA_DIR`) and the code core or git runs elsewhere. */
const protectedOf = (roots: Roots): { readonly configuration: ReadonlyArray<Place>; readonly elsewhere: ReadonlyArray<Place> } => ({
  configuration: [
    ...locationPlaces(roots.location),
    ...othersOf(roots).flatMap((other) => locationPlaces(other, `the Location ${other}, which core also serves`)),
    ...roots.fixed.home,
    ...roots.fixed.data,
  ],
  elsewhere: code([roots.location, ...othersOf(roots)], roots.home),
})

/**
 * What protected place a change to `real` (a real path, symlinks followed) would change, or undefined when it
 * changes none. `encloses` also counts a directory that holds a protected place (a shell command given the
 * Location itself may copy onto its core.json or delete its tools/). Matched by path (ignoring case), by the
 * identity of the file and of its directory (a bind mount of a protected directory), and for a file with other
 * names, by looking for one of them among the protected files.
 */
export const change = (
  roots: Roots,
  real: string,
  options: {
    readonly encloses?: boolean
    /**
     * Also counts a directory holding code core loads or git runs: a command no read-only mount keeps from that
     * code (the OS sandbox off) may replace the folder holding it (`mv made lib`), or make it a link (`ln -s made lib`).
     */
    readonly enclosesCode?: boolean
  } = {},
): string | undefined => {
  const { configuration, elsewhere } = protectedOf(roots)
  for (const place of configuration) {
    if (within(place.path, real)) return place.what
    if (options.encloses === true && within(real, place.path)) return `${real}, which holds ${place.what}`
  }
  // Code core or git runs counts as itself only, not through a directory holding it: a command given one (`rm -r
  // lib`) meets its read-only mount, and what it leaves there is undone (Guard).
  for (const place of elsewhere) {
    if (within(place.path, real)) return place.what
    if (options.enclosesCode === true && within(real, place.path)) return `${shown(roots.location, real)}, which holds ${place.what}`
  }
  const made = madeThrough(roots.location, configuration, elsewhere, real, options.encloses === true, options.enclosesCode === true)
  if (made !== undefined) return made
  const git = Git.named(real) ?? Git.bare(real)
  if (git !== undefined) return git
  const protectedPlaces = [...configuration, ...elsewhere]
  remember(protectedPlaces)
  const moved = seenAs(real)
  if (moved !== undefined) return moved
  const stats = lstatFree(real)
  const own = stats === undefined ? undefined : { dev: stats.dev, ino: stats.ino }
  const parent = identityOf(dirname(real))
  for (const place of protectedPlaces) {
    if (same(parent, place.identity) || same(own, place.identity)) return place.what
  }
  // A file with other names: one of them may be a protected file.
  if (stats !== undefined && own !== undefined && stats.isFile() && stats.nlink > 1) {
    const budget = { left: MAX_SCANNED }
    for (const place of protectedPlaces) {
      const kind = lstatFree(place.path)
      if (kind === undefined) continue
      const linked = kind.isFile()
        ? same({ dev: kind.dev, ino: kind.ino }, own)
        : kind.isDirectory() && linkedUnder(place.path, own, budget)
      if (linked) return `${place.what}, through a hard link`
    }
  }
  return undefined
}

/** Past this many entries a glob names, a change through it is judged by its folder as a whole (`change`'s `encloses`). */
export const MAX_GLOBBED = 1_000

/**
 * A shell glob's last component (`*.txt`, `?.o`, `[ab]*`) as a test of an entry's name, or undefined for one it does
 * not read exactly (an escape, a brace, an extended glob, a POSIX class). Wider than the shell's: any character may
 * start a name (`dotglob`), and case is ignored, as protected places are matched.
 */
export const globMatcher = (pattern: string): ((name: string) => boolean) | undefined => {
  if (/[\\{}()]|\[[:=.]/.test(pattern) || /^[!@+]/.test(pattern)) return undefined
  let source = ""
  for (let index = 0; index < pattern.length; index++) {
    const char = pattern[index]!
    if (char === "*") source += ".*"
    else if (char === "?") source += "."
    else if (char === "[") {
      // A class ends at the first ] after its first character (which may be a ] itself, or follow ! or ^).
      const start = index + 1 + (pattern[index + 1] === "!" || pattern[index + 1] === "^" ? 1 : 0)
      const end = pattern.indexOf("]", start + 1)
      if (end === -1) source += "\\["
      else {
        const negated = start > index + 1
        const members = pattern.slice(start, end).replace(/[\]\\^]/g, "\\$&")
        source += `[${negated ? "^" : ""}${members}]`
        index = end
      }
    } else source += char.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")
  }
  let test: RegExp
  try {
    test = new RegExp(`^${source}$`, "is")
  } catch {
    // A class the shell reads and this does not (a range backwards, `[z-a]`): the folder as a whole.
    return undefined
  }
  return (name) => test.test(name)
}

/**
 * What protected place a change to the entries of `directory` (a real path) whose names match `pattern` (a shell
 * glob's last component, as in `sed -i … *.txt`) would change, or undefined when it changes none: the folder itself
 * as `change` judges it without `encloses`, then each entry the glob would name now, where it really is. A glob names
 * only what exists when the command runs; what the same line makes first is checked where it is made. A pattern
 * `globMatcher` does not read, a folder that cannot be listed, and one where the glob names more than MAX_GLOBBED
 * entries are judged by the folder as a whole, holding what it holds.
 */
export const changeMatching = (
  roots: Roots,
  directory: string,
  pattern: string,
  options: Parameters<typeof change>[2] = {},
): string | undefined => {
  const matches = globMatcher(pattern)
  let names: Array<string> | undefined
  try {
    // `.` and `..` too, which a listing leaves out and bash matches (`.*` where globskipdots is off, as before 5.2).
    names = matches === undefined ? undefined : [".", "..", ...readdirSync(directory)].filter(matches)
  } catch {
    names = undefined
  }
  if (names === undefined || names.length > MAX_GLOBBED) return change(roots, directory, options)
  const itself = change(roots, directory)
  if (itself !== undefined) return itself
  // A file of one name that is no protected place by name or by who it is needs no more look (`change` finds
  // nothing else of it: the folders above it are `directory`'s); anything else is looked at whole.
  const places = Object.values(protectedOf(roots)).flat()
  remember(places)
  const named = new Set(places.filter((place) => within(directory, place.path) && place.path !== directory).map((place) => relative(directory, place.path).split(sep)[0]!.toLowerCase()))
  const who = new Set(places.flatMap((place) => (place.identity === undefined ? [] : [`${place.identity.dev}:${place.identity.ino}`])))
  for (const name of names) {
    const path = join(directory, name)
    const stats = lstatFree(path)
    const plain =
      stats !== undefined &&
      stats.isFile() &&
      stats.nlink === 1 &&
      !named.has(name.toLowerCase()) &&
      !name.toLowerCase().startsWith(".git") &&
      !who.has(`${stats.dev}:${stats.ino}`) &&
      !seen.has(keyOf({ dev: stats.dev, ino: stats.ino, born: stats.birthtimeMs }))
    if (plain) continue
    const found = change(roots, realOf(path), options)
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * Whether reading `real` would read `$CORE_HOME` (the application's core.json, which may hold an MCP server's
 * tokens, and its tools), which commands never read either; a Location in it reads its own files, and no more.
 */
export const homeSecret = (roots: Roots, real: string): boolean =>
  roots.fixed.home.some((place) => within(place.path, real)) && !within(roots.location, real)

/**
 * Whether `real` lies in this core's own `$CORE_HOME` or data directory, which their own rules keep (homeSecret,
 * secret, change) rather than the credential stores' (where they are the defaults, `~/.config/core` and
 * `~/.local/share/core` are stores too): a session reads its own managed outputs, and a Location inside `$CORE_HOME`
 * its own files.
 */
export const ownDirectory = (roots: Roots, real: string): boolean =>
  roots.fixed.home.some((place) => within(place.path, real)) || roots.fixed.data.some((place) => within(place.path, real))

/** Whether reading `real` would read core's data directory outside the managed outputs. */
export const secret = (roots: Roots, real: string): boolean => {
  const { data, readable, readableIdentities } = roots.fixed
  if (readable.some((root) => within(root, real))) return false
  if (data.some((place) => within(place.path, real))) return true
  const dataIdentity = data[0]?.identity
  if (dataIdentity === undefined) return false
  // The data directory reached by another name (a bind mount): the file's own directory is compared.
  const parent = identityOf(dirname(real))
  if (readableIdentities.some((identity) => same(identity, parent))) return false
  if (same(parent, dataIdentity)) return true
  // Another name for one of the store's files.
  const stats = lstatFree(real)
  if (stats === undefined || !stats.isFile() || stats.nlink <= 1) return false
  const identity = { dev: stats.dev, ino: stats.ino }
  try {
    return readdirSync(roots.dataDir).some((name) => same(identityOf(join(roots.dataDir, name), false), identity))
  } catch {
    return false
  }
}

/**
 * Whether a command reading `real` would read core's data directory: `secret`, and the managed outputs too, which
 * tools read in their session but no command does (the sandbox hides the whole directory).
 */
export const secretToCommands = (roots: Roots, real: string): boolean =>
  secret(roots, real) || roots.fixed.data.some((place) => within(place.path, real))

/**
 * Commands that change none of the paths they are given. `cd` and the like change none either, but they move where
 * later relative paths lead: see `CommandChecks.directoryChange` (src/shell).
 */
const READ_ONLY = new Set([
  "cat", "head", "tail", "less", "more", "stat", "file", "du", "wc", "diff", "ls", "grep", "cd", "pushd", "popd",
  "echo", "printf", "test", "[", "[[", "true", "false", "type", "which", "realpath", "readlink", "basename", "dirname",
  "read", "jq", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum",
  "cut", "nl", "tac", "rev", "fold", "column", "expand", "unexpand", "od", "hexdump", "strings", "comm", "paste", "join",
  "cmp", "base64", "base32",
])
/**
 * `sort` writes where an option says (`-o FILE`, `-T DIR` for its temporary files; in a group of short options, or a
 * long option by any abbreviation getopt takes: `--out`, `--t`): with none of them, it only reads.
 */
const SORT_WRITES = /^(-[A-Za-z]*[oT]|--[ot])/

/** A program named by the system's own path (`/bin/cat`, `/usr/bin/env`): the one a bare name runs, PATH unchanged. */
export const SYSTEM_PROGRAM = /^\/(usr\/)?bin\/[^/]+$/

/** The names awk is run by (the shell's reader of its programs, ../shell/awk, sits on a floor above). */
const AWKS: ReadonlySet<string> = new Set(["awk", "gawk", "mawk", "nawk"])

/**
 * awk given only `-F SEP` and `-v NAME=VALUE` before its program reads the files it names; one told to read its
 * program from a file (`-f`), or given any other option (gawk's `-o`, `-p` and `-d` write files), may write them. What
 * a program written out writes or runs (`print > "f"`, `system(…)`) is asked by the bash checks, as sed's `w` is.
 */
const awkReadsOnly = (words: ReadonlyArray<string>): boolean => {
  for (let index = 0; index < words.length; index++) {
    const word = words[index]!
    if (word === "--" || !word.startsWith("-") || word === "-") return true
    if (word === "-F" || word === "-v") index++
    else if (!/^-[Fv]./s.test(word)) return false
  }
  return true
}

/**
 * `uniq` writes its second operand (`uniq IN OUT`, `uniq - OUT`): with one at most, it only reads. Every word after
 * the first operand counts as one, as it is when POSIXLY_CORRECT is set (`uniq IN -w/../OUT`), and so does an
 * option's value (`-f 1`): both only ever err towards a change.
 */
const uniqReadsOnly = (words: ReadonlyArray<string>): boolean => {
  let operands = 0
  for (const word of words) {
    if (word === "--") return false
    if (operands > 0 || word === "-" || !word.startsWith("-")) operands++
  }
  return operands <= 1
}
/** `git` subcommands that change no file. */
const GIT_READ_ONLY = new Set(["status", "diff", "log", "show", "blame", "ls-files", "grep", "rev-parse"])
/** Options git takes before its subcommand that leave it reading the repository here as configured. */
const GIT_NEUTRAL = new Set(["--no-pager", "-P"])
/**
 * Whether a word of a read-only git subcommand writes or runs something: `--output=FILE` (diff, log, show), `-O`
 * or `--open-files-in-pager` (grep runs its value), each by any start of its long name git takes (`--outp`), or
 * short options grouped (`-hO'…'`). An order file (`diff -O`) only reads, and is caught too: it errs towards a change.
 */
const gitWrites = (word: string): boolean => {
  const name = word.split("=", 1)[0]!
  return (name.length >= 4 && ("--output".startsWith(name) || "--open-files-in-pager".startsWith(name))) || /^-[A-Za-z]*O/.test(word)
}
/** Options of `find` that change files, or run a command in each file's folder (where the paths it names lead there). */
const FIND_ACTIONS = /^-(delete|execdir|okdir|fprint|fprint0|fprintf|fls)$/
/** Options of `find` that run the command after them (up to `;`, or `{} +`) with each file's path in place of `{}`. */
const FIND_RUNS = /^-(exec|ok)$/

/** Whether `find` given these words only reads: no action that changes a file, and every command it runs only reads. */
const findReadsOnly = (words: ReadonlyArray<string>): boolean => {
  for (let index = 0; index < words.length; index++) {
    if (FIND_ACTIONS.test(words[index]!)) return false
    if (!FIND_RUNS.test(words[index]!)) continue
    let end = index + 1
    while (end < words.length && words[end] !== ";" && !(words[end] === "+" && words[end - 1] === "{}")) end++
    // A path in place of each {}: any file, read as known only when it runs.
    const command = words.slice(index + 1, end).map((word) => (word.includes("{}") ? undefined : word))
    if (end === words.length || command.length === 0 || !readsOnly(command)) return false
    index = end
  }
  return true
}

/**
 * Whether a simple command only reads the paths it names, given its words' values (the name first, then its
 * arguments, without its redirections, which are checked for themselves), a value undefined where it is known only
 * when the command runs (an expansion, a pattern). Anything not known to be read-only is taken as one that may
 * change them; so is a command whose options matter when one of them is not known (`sort -$X`, `find . $ACTION`).
 */
export const readsOnly = (words: ReadonlyArray<string | undefined>): boolean => {
  const name = words[0]
  if (name === undefined) return false
  // A program named by a path runs whatever file is there (`bin/cat`): only the system's own are known.
  if (name.includes("/") && !SYSTEM_PROGRAM.test(name)) return false
  const base = name.slice(name.lastIndexOf("/") + 1)
  const rest = words.slice(1)
  if (!READ_ONLY.has(base) && rest.some((word) => word === undefined)) return false
  const known = rest as ReadonlyArray<string>
  if (base === "find") return findReadsOnly(known)
  // sed changes files only in place (-i); a script that writes (`w`) or runs (`e`) is asked by the bash checks.
  if (base === "sed") return !known.some((word) => /^(-[A-Za-z]*i|--in-place)/.test(word))
  // Any other option before the subcommand may make git read a repository or configuration the line chose
  // (`git --git-dir=g status` runs g/config's core.fsmonitor).
  if (base === "git") {
    const at = known.findIndex((word) => !GIT_NEUTRAL.has(word))
    return at !== -1 && GIT_READ_ONLY.has(known[at]!) && !known.slice(at + 1).some(gitWrites)
  }
  // An option's value counts as an operand here, which only ever errs towards a change.
  if (base === "sort") return !known.some((word) => SORT_WRITES.test(word))
  // file -C writes NAME.mgc for each magic file it compiles, which a word known only when it runs may ask for
  // (`xargs file` given `-C`). (less logs its input only to a terminal, which commands do not have.)
  if (base === "file") return !rest.some((word) => word === undefined || /^(-[A-Za-z]*C|--c)/.test(word))
  if (base === "uniq") return uniqReadsOnly(known)
  if (AWKS.has(base)) return awkReadsOnly(known)
  return READ_ONLY.has(base)
}

/**
 * Whether an absolute path names a protected place by its text (no lookup of where it leads): the cheap test for a
 * word of a command that is not a known file operand (`git checkout core.json`). The import closure and git's
 * places are looked up to know their names.
 */
export const named = (roots: Roots, absolute: string): boolean =>
  [roots.location, ...othersOf(roots)].some((location) =>
    LOCATION_ENTRIES.some((entry) => within(join(location, entry), absolute)),
  ) ||
  [...roots.fixed.home, ...roots.fixed.data].some((place) => within(place.path, absolute)) ||
  code([roots.location, ...othersOf(roots)], roots.home).some((place) => within(place.path, absolute))

/** What a shell command changes when its target is known only when it runs: it may be a protected place. */
export const UNKNOWN_TARGET =
  "a path known only when the command runs, which may be core's own configuration (write the path out literally " +
  "to have it checked as itself)"

/**
 * What a shell command changes when it names a relative path after a `cd` whose directory the text does not say
 * (`cd $D`, `cd -`): it cannot tell where the path leads.
 */
export const AFTER_CD =
  "a relative path after a cd to a directory the command does not name literally, which may lead into core's own " +
  "configuration (name the directory literally, give the path from the Location or absolute, or run the command " +
  "there with bash's workdir, to have it checked as itself)"


/** Whether a shell word's value names a place independent of the working directory (`/x`, `~/x`). */
export const anchored = (value: string | undefined): boolean =>
  value !== undefined && (value.startsWith("/") || value === "~" || value.startsWith("~/"))

