export * as Git from "./git"

// What the user's own git runs unasked, found from a Location: the hooks, the config (core.hooksPath,
// core.fsmonitor, filters, pagers...) and info/attributes of the repository the Location is in, of its submodules
// and of its worktrees. `.git` may be a directory, a file pointing at the git directory (a worktree, a submodule),
// or absent where the Location is itself a bare repository. Pure reading of the file system.

import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync, realpathSync, statSync, type Stats } from "node:fs"
import { homedir } from "node:os"
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path"
import { FileText } from "./file-text"

/** The most nested git directories (submodules, worktrees) looked at under one repository. */
export const MAX_NESTED = 200

/** One place git runs code from, and what a person is told it is. */
export interface Place {
  readonly path: string
  readonly what: string
  /**
   * Put back as it was once a command has ended, rather than held read-only while it runs: a worktree's
   * `commondir`, which `git worktree remove` deletes with its folder.
   */
  readonly restored?: true
}

const lstat = (path: string): Stats | undefined => {
  try {
    return lstatSync(path, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

/** The largest git file read (a config, a `.git` file, `commondir`). */
const MAX_READ_BYTES = 1024 * 1024

/**
 * The text of the regular file at `path` (through links), up to MAX_READ_BYTES; undefined for anything else. A
 * command may leave a FIFO where git keeps a file: opened without waiting for a writer, and never read, it cannot
 * stop core (FileText).
 */
export const read = (path: string): string | undefined => {
  const text = FileText.read(path, MAX_READ_BYTES)
  return text === FileText.LARGE ? undefined : text
}

/**
 * `text` as git keeps a path read from a file: up to its first NUL (git reads it as a C string), less the line
 * feeds and carriage returns that end it; nothing else (spaces are the path's). By a loop: a pattern anchored at the
 * end tries every start in a long run of line feeds.
 */
const gitPath = (text: string): string => {
  const nul = text.indexOf("\0")
  let end = nul === -1 ? text.length : nul
  while (end > 0 && (text[end - 1] === "\n" || text[end - 1] === "\r")) end--
  return text.slice(0, end)
}

/**
 * What a `.git` file names, as git reads it (`read_gitfile_gently`): the text after `gitdir: ` at its very start,
 * as `gitPath` keeps it; undefined where git finds none (then git refuses the file, and runs nothing there).
 */
const gitdirOf = (text: string): string | undefined => {
  if (!text.startsWith("gitdir: ")) return undefined
  const path = gitPath(text.slice("gitdir: ".length))
  return path === "" ? undefined : path
}

/** The git directory a `.git` file points at (`gitdir: PATH`), or undefined. */
const pointedBy = (file: string): string | undefined => {
  const named = gitdirOf(read(file) ?? "")
  if (named === undefined) return undefined
  return isAbsolute(named) ? named : resolve(dirname(file), named)
}

/**
 * The common directory a git directory's `commondir` names (where its objects, config and hooks are), read as git
 * reads it (`gitPath`; empty names the directory itself), else the directory itself; undefined where there is a
 * `commondir` core cannot read (larger than it reads, not a file), whose common directory is then unknown.
 */
export const commonOf = (directory: string): string | undefined => {
  const path = join(directory, "commondir")
  if (lstat(path) === undefined) return directory
  const text = read(path)
  if (text === undefined) return undefined
  const common = gitPath(text)
  return common === "" ? directory : resolve(directory, common)
}

/**
 * Whether `directory` may be a git directory (bare repository or `.git`) to git, which takes one by a `HEAD` and an
 * `objects` and `refs` it may enter (`is_git_directory`: whatever they are, an executable file too) in the common
 * directory its `commondir` names. Taken wider, never narrower, since what git takes for one runs its hooks and
 * config: a `HEAD` file or link (its content not read), anything at `objects`, and a `commondir` core cannot read.
 */
export const isGitDirectory = (directory: string): boolean => {
  const head = lstat(join(directory, "HEAD"))
  if (head === undefined || !(head.isFile() || head.isSymbolicLink())) return false
  const common = commonOf(directory)
  return common === undefined || lstat(join(common, "objects")) !== undefined
}

/**
 * The repository a Location is in, as git finds it: from the Location up, in each directory its `.git` entry
 * first, then the directory itself as a bare repository. Its `.git` entry (when one), git directory and common
 * directory. (A `HEAD` and an `objects/` a command put beside a `.git` do not make the Location a bare repository
 * to git, which reads `.git` first: nor to core, which would otherwise guard their would-be `config` and `hooks`
 * instead of the real `.git`'s.)
 */
export const repositoryOf = (
  location: string,
): { readonly entry: string | undefined; readonly gitDir: string; readonly commonDir: string } | undefined => {
  for (let current = location; ; current = dirname(current)) {
    const entry = join(current, ".git")
    const stats = lstat(entry)
    if (stats !== undefined) {
      const gitDir = stats.isFile() ? pointedBy(entry) : entry
      if (gitDir === undefined) return undefined
      // A worktree's git directory names the repository's own (`commondir`), where hooks and config are.
      return { entry, gitDir, commonDir: commonOf(gitDir) ?? gitDir }
    }
    if (isGitDirectory(current)) return { entry: undefined, gitDir: current, commonDir: commonOf(current) ?? current }
    if (dirname(current) === current) return undefined
  }
}

/**
 * The places of one git directory that run code. `commondir` too where git keeps none (a repository's own git
 * directory, a submodule's): one planted there moves the hooks and config elsewhere. A worktree's git directory
 * holds one git wrote, which `git worktree remove` must be able to delete with it: that one is protected by name
 * for the file tools and the paths a line names (`named`), not held read-only for commands.
 */
const placesIn = (directory: string, which: string, commondir: boolean): Array<Place> => [
  { path: join(directory, "hooks"), what: `the hooks of ${which} (${join(directory, "hooks")}), which git runs` },
  { path: join(directory, "config"), what: `the config of ${which} (${join(directory, "config")}), which tells git what to run` },
  { path: join(directory, "config.worktree"), what: `the worktree config of ${which}, which tells git what to run` },
  { path: join(directory, "info", "attributes"), what: `the attributes of ${which}, which pick the filters git runs` },
  ...(commondir ? [{ path: join(directory, "commondir"), what: `the commondir of ${which}, which tells git where its hooks and config are` }] : []),
]

/** The largest index read for its gitlinks; a larger one is taken to hold none (a repository of millions of files). */
const MAX_INDEX_BYTES = 64 * 1024 * 1024

/** The longest path an index of git's holds (PATH_MAX). */
const MAX_PATH_BYTES = 4096

/** A gitlink's mode (a submodule: a repository checked out inside the work tree). */
const GITLINK = 0o160000

/**
 * The paths (from the work tree's root, `/`-separated) of the gitlinks in the git index `index` (versions 2 to 4;
 * object names of `hashBytes`: 20 for SHA-1, 32 for SHA-256): the repositories checked out inside the work tree
 * whose own config `git status` at the root reads, and runs (`core.fsmonitor`), when one is populated. An index
 * that cannot be read holds none.
 */
export const gitlinksIn = (index: Uint8Array, hashBytes = 20): ReadonlyArray<string> => indexRead(index, hashBytes).links

/**
 * The gitlinks of an index (`gitlinksIn`), and the shared index it names where it is split (`git update-index
 * --split-index`: its `link` extension, the object name of `sharedindex.<name>` beside it, which holds the rest of
 * its entries).
 */
const indexRead = (index: Uint8Array, hashBytes: number): { readonly links: ReadonlyArray<string>; readonly shared?: string } => {
  const view = new DataView(index.buffer, index.byteOffset, index.byteLength)
  if (index.byteLength < 12 || view.getUint32(0) !== 0x44495243) return { links: [] }
  const version = view.getUint32(4)
  if (version < 2 || version > 4) return { links: [] }
  const count = view.getUint32(8)
  const decoder = new TextDecoder()
  const links: Array<string> = []
  let at = 12
  // Version 4's paths are the previous one's start and a new end: built in one buffer, each entry's path over the
  // last, so reading costs the index's size and never a path's length per entry (a crafted index of long shared
  // paths took seconds at every command's start).
  const path = new Uint8Array(MAX_PATH_BYTES)
  let length = 0
  for (let entry = 0; entry < count && links.length < MAX_NESTED; entry++) {
    const start = at
    if (at + 40 + hashBytes + 2 > index.byteLength) return { links }
    const mode = view.getUint32(at + 24)
    at += 40 + hashBytes
    const flags = view.getUint16(at)
    at += 2
    if (version >= 3 && (flags & 0x4000) !== 0) at += 2
    if (version === 4) {
      // The part of the previous path to drop (git's varint), then the rest, NUL-terminated; no padding.
      let byte = index[at++] ?? 0
      let drop = byte & 0x7f
      while ((byte & 0x80) !== 0 && at < index.byteLength && drop <= MAX_PATH_BYTES) {
        byte = index[at++]!
        drop = ((drop + 1) << 7) | (byte & 0x7f)
      }
      const end = index.indexOf(0, at)
      // A path git cannot have (longer than PATH_MAX): not an index git wrote; what was read so far stands.
      if (end === -1 || drop > length || length - drop + (end - at) > MAX_PATH_BYTES) return { links }
      path.set(index.subarray(at, end), length - drop)
      length = length - drop + (end - at)
      at = end + 1
      if ((mode & 0o170000) === GITLINK) links.push(decoder.decode(path.subarray(0, length)))
    } else {
      const end = index.indexOf(0, at)
      if (end === -1 || end - at > MAX_PATH_BYTES) return { links }
      if ((mode & 0o170000) === GITLINK) links.push(decoder.decode(index.subarray(at, end)))
      // Padded with NULs (at least one) to a multiple of 8 bytes from the entry's start.
      at = start + Math.ceil((end + 1 - start) / 8) * 8
    }
  }
  if (links.length >= MAX_NESTED) return { links }
  // The extensions, up to the trailing checksum: a split index's `link` names its shared index.
  let shared: string | undefined
  while (at + 8 <= index.byteLength - hashBytes) {
    const size = view.getUint32(at + 4)
    if (decoder.decode(index.subarray(at, at + 4)) === "link" && size >= hashBytes) {
      shared = Buffer.from(index.subarray(at + 8, at + 8 + hashBytes)).toString("hex")
    }
    at += 8 + size
  }
  return shared === undefined ? { links } : { links, shared }
}

/** The gitlinks of the index in `gitDir` (see `gitlinksIn`), read again only when the index file changed. */
const gitlinksCache = new Map<string, { readonly stamp: string; readonly links: ReadonlyArray<string> }>()

const gitlinksOf = (gitDir: string): ReadonlyArray<string> => {
  const path = join(gitDir, "index")
  let fd: number | undefined
  try {
    // Opened without waiting (a FIFO a command left there is no index), and read through the one descriptor.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
    const stats = fstatSync(fd)
    if (!stats.isFile() || stats.size > MAX_INDEX_BYTES) return []
    const stamp = `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`
    const cached = gitlinksCache.get(path)
    if (cached?.stamp === stamp) return cached.links
    const sha256 = /^\s*objectformat\s*=\s*sha256\s*$/im.test(read(join(gitDir, "config")) ?? "")
    const main = indexRead(readFileSync(fd), sha256 ? 32 : 20)
    // A split index keeps most of its entries in its shared index: git reads both (a gitlink there is one too).
    const shared = main.shared === undefined ? [] : sharedLinks(join(gitDir, `sharedindex.${main.shared}`), sha256 ? 32 : 20)
    const links = [...new Set([...main.links, ...shared])].slice(0, MAX_NESTED)
    // A split index is read again each time: its shared index may change under the same main index.
    if (main.shared !== undefined) return links
    if (gitlinksCache.size >= 64) gitlinksCache.clear()
    gitlinksCache.set(path, { stamp, links })
    return links
  } catch {
    return []
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** The gitlinks of the shared index at `path` (none where it cannot be read: git cannot read the index then either). */
const sharedLinks = (path: string, hashBytes: number): ReadonlyArray<string> => {
  let fd: number | undefined
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
    const stats = fstatSync(fd)
    return stats.isFile() && stats.size <= MAX_INDEX_BYTES ? indexRead(readFileSync(fd), hashBytes).links : []
  } catch {
    return []
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/**
 * The `.git` entries of the repositories checked out at gitlinks of `location`'s repository (its index), absolute:
 * `git status` at the root looks into each populated one with that repository's own config.
 */
export const gitlinkEntries = (location: string): ReadonlyArray<string> => {
  const repository = repositoryOf(location)
  if (repository === undefined) return []
  const root = repository.entry === undefined ? repository.gitDir : dirname(repository.entry)
  // An index is written by git, or by a command: a path that would leave the work tree names nothing of it.
  return gitlinksOf(repository.gitDir)
    .filter((link) => link.split("/").every((segment) => segment !== "" && segment !== "." && segment !== ".."))
    .slice(0, MAX_NESTED)
    .map((link) => join(root, ...link.split("/"), ".git"))
}

/**
 * The git directory a gitlink's `.git` entry is (a directory), or points at (a `gitdir:` file); undefined where it is
 * neither.
 */
export const gitDirOf = (entry: string): string | undefined => {
  const stats = lstat(entry)
  if (stats?.isDirectory() === true) return entry
  return stats?.isFile() === true ? pointedBy(entry) : undefined
}

/** The places of the git directory `directory` that run code (see `placesIn`), as paths, `commondir` among them. */
export const codePlacesIn = (directory: string): ReadonlyArray<string> =>
  placesIn(directory, directory, true).map((place) => place.path)

/**
 * A `.git` entry or a place in one that runs code (see `placesIn`), by name, its worktrees' and submodules' too: a
 * repository made or moved anywhere (a Location that is no repository yet, a folder in it) is one the user's git
 * may run, before any of its places exist to be found (a worktree's `commondir` is also put back after a command,
 * not held read-only: `git worktree remove` deletes it).
 * Matched over real paths, ignoring case (a case-folding file system makes them one).
 */
const NAMED =
  /(?:^|\/)\.git(?:\/(?:worktrees\/[^/]+\/|modules\/(?:[^/]+\/)+)?(?:config|config\.worktree|commondir|hooks(?:\/.*)?|info\/attributes))?$/i

type Env = Readonly<Record<string, string | undefined>>

/** git's own folder of the user's configuration: `$XDG_CONFIG_HOME/git`, by default `~/.config/git`. */
const gitConfigHome = (home: string, env: Env = process.env): string =>
  join(env.XDG_CONFIG_HOME !== undefined && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : join(home, ".config"), "git")

/** The user's git config files, as git reads them in every repository: `~/.gitconfig`, then git's folder's `config`. */
const userConfigFiles = (home: string, env: Env = process.env): ReadonlyArray<string> => [join(home, ".gitconfig"), join(gitConfigHome(home, env), "config")]

/**
 * The user's own git configuration, which git reads in every repository (`core.fsmonitor`, `core.pager`, aliases,
 * filters: programs it runs unasked): `~/.gitconfig`, `$XDG_CONFIG_HOME/git/config` and `attributes` (by default
 * under `~/.config`), and the system's `/etc/gitconfig`. What a change to `real` would plant there, or undefined.
 */
export const userConfig = (home: string, real: string, env: Env = process.env): string | undefined => {
  const places = [...userConfigFiles(home, env), join(gitConfigHome(home, env), "attributes"), "/etc/gitconfig"]
  // Where each really is too: a dotfiles repository often links them.
  const really = (path: string) => {
    try {
      return realpathSync(path)
    } catch {
      return path
    }
  }
  return places.some((place) => place === real || really(place) === real) ? `${real}, the user's own git configuration, which tells git what to run in every repository` : undefined
}

/** What a change to `real` would plant for git by its name alone (a `.git` entry or a code place in one), or undefined. */
export const named = (real: string): string | undefined =>
  NAMED.test(real.replaceAll("\\", "/"))
    ? `${real}, a place of a git repository (its pointer, hooks, config or attributes) that tells the user's git what to run`
    : undefined

/** The places in a git directory that tell git what to run, as paths relative to it. */
const RUNS = ["hooks", "config", "config.worktree", join("info", "attributes"), "commondir"]

/**
 * What a change to `real` would plant for git in a bare repository (a directory git takes for a git directory by
 * its `HEAD` and `objects/`, with no `.git` in its name), or undefined: a code place in one (`config`, `hooks/`, ...),
 * or the `HEAD` or `objects/` that would make a directory one, so that `config` written into it beforehand goes
 * unchecked no more. Every folder above `real` is looked at: git finds a bare repository from any folder in it.
 * `made`: paths the same change makes too (one patch adding a folder's `HEAD` and its `objects/`), taken as there.
 */
export const bare = (real: string, made: (path: string) => boolean = () => false): string | undefined => {
  for (let directory = dirname(real); ; directory = dirname(directory)) {
    const inside = relative(directory, real)
    if (isGitDirectory(directory)) {
      if (RUNS.some((place) => inside === place || inside.startsWith(`${place}${sep}`))) {
        return `${real}, a place of the git repository ${directory} (its hooks, config or attributes) that tells the user's git what to run`
      }
    } else {
      const head = inside === "HEAD"
      const objects = inside === "objects" || inside.startsWith(`objects${sep}`)
      const other = head ? join(commonOf(directory) ?? directory, "objects") : objects ? join(directory, "HEAD") : undefined
      // A commondir sends git to another folder's objects, config and hooks: by its name alone, wherever it is.
      if (inside === "commondir" || (other !== undefined && (lstat(other) !== undefined || made(other)))) {
        return `${directory}, which it would make a git repository whose config and hooks the user's git would run`
      }
    }
    if (dirname(directory) === directory) return undefined
  }
}

/**
 * The names whose making `bare` weighs for `real` (a file about to be made), as paths: the `HEAD` and `objects` of
 * every folder above it that it would be the `HEAD` of, or inside the `objects/` of. Two changes that each make
 * one of a folder's pair, checked at once, each find the other missing; a change holding the pair's names while it
 * checks and makes its file (FileLock.committing) sees the other's once it is made.
 */
export const repositoryNames = (real: string): ReadonlyArray<string> => {
  const names: Array<string> = []
  for (let directory = dirname(real); ; directory = dirname(directory)) {
    const inside = relative(directory, real)
    if (inside === "HEAD" || inside === "objects" || inside.startsWith(`objects${sep}`)) names.push(join(directory, "HEAD"), join(directory, "objects"))
    if (dirname(directory) === directory) return names
  }
}

/** The folders around `real` that `repositoryNames` weighs and that are git repositories now. */
export const repositoriesAround = (real: string): ReadonlyArray<string> => {
  const names = repositoryNames(real)
  const found: Array<string> = []
  for (let index = 0; index < names.length; index += 2) {
    const folder = dirname(names[index]!)
    if (isGitDirectory(folder)) found.push(folder)
  }
  return found
}

/**
 * What a change to `real` would plant in a bare repository (`bare`), or a folder around it that has become a git
 * repository since `before` (repositoriesAround, taken before the change made its folders: one another change made
 * the `HEAD` of while this one made its `objects/`), or undefined. `made`: as for `bare`.
 */
export const plantedSince = (
  real: string,
  before: ReadonlyArray<string>,
  made: (path: string) => boolean = () => false,
): string | undefined => {
  const became = repositoriesAround(real).find((folder) => !before.includes(folder))
  if (became !== undefined) return `${became}, which it would make a git repository whose config and hooks the user's git would run`
  return bare(real, made)
}

/** Git directories under `directory/modules` (submodules, nested to any depth), up to `budget`. */
const modulesUnder = (directory: string, found: Array<string>, budget: { left: number }): void => {
  let names: Array<string>
  try {
    names = readdirSync(join(directory, "modules"))
  } catch {
    return
  }
  const visit = (path: string) => {
    if (--budget.left < 0) return
    if (isGitDirectory(path)) {
      found.push(path)
      modulesUnder(path, found, budget)
      return
    }
    // A submodule's name may hold slashes: its git directory sits deeper.
    let inner: Array<string>
    try {
      inner = readdirSync(path)
    } catch {
      return
    }
    for (const name of inner) if (lstat(join(path, name))?.isDirectory() === true) visit(join(path, name))
  }
  for (const name of names) visit(join(directory, "modules", name))
}

/** The git directories of the worktrees of the repository whose common directory is `commonDir` (MAX_NESTED at most). */
export const worktreesOf = (commonDir: string): ReadonlyArray<string> => {
  try {
    return readdirSync(join(commonDir, "worktrees"))
      .slice(0, MAX_NESTED)
      .map((name) => join(commonDir, "worktrees", name))
  } catch {
    return []
  }
}

/**
 * The places the user's git runs code from for the repository `location` is in (none outside a repository): the
 * `.git` pointer file, then hooks, config and attributes of the git directory, the common directory, every
 * worktree's and every submodule's.
 */
export const places = (location: string): ReadonlyArray<Place> => {
  const repository = repositoryOf(location)
  if (repository === undefined) return []
  const found: Array<Place> = []
  if (repository.entry !== undefined && lstat(repository.entry)?.isFile() === true) {
    found.push({ path: repository.entry, what: `${repository.entry}, which tells git where the repository (its hooks and config) is` })
  }
  // A folder holding a `.git` that git would also take for a git directory itself (where its `.git` is not one).
  const holder = repository.entry === undefined ? undefined : dirname(repository.entry)
  if (holder !== undefined && isGitDirectory(holder)) found.push(...placesIn(holder, `the folder ${holder}, which git takes for a repository where its .git is not one`, true))
  const directories = [repository.commonDir]
  if (repository.gitDir !== repository.commonDir) directories.push(repository.gitDir)
  const budget = { left: MAX_NESTED }
  const worktrees = new Set<string>()
  for (const directory of worktreesOf(repository.commonDir)) {
    if (--budget.left < 0) break
    directories.push(directory)
    worktrees.add(directory)
  }
  // The Location's own git directory in a worktree is one of them too.
  if (repository.gitDir !== repository.commonDir) worktrees.add(repository.gitDir)
  for (const directory of [...directories]) modulesUnder(directory, directories, budget)
  for (const directory of new Set(directories)) {
    found.push(...placesIn(directory, `the git repository ${directory}`, !worktrees.has(directory)))
    // A worktree's commondir sends git to the hooks and config of the repository it names: one a command rewrote
    // (or left out) would have the user's git in that worktree run another's.
    if (worktrees.has(directory)) {
      found.push({
        path: join(directory, "commondir"),
        what: `the commondir of the git worktree ${directory}, which tells git where its hooks and config are`,
        restored: true,
      })
    }
  }
  // The repositories checked out at the index's gitlinks: `git status` at the root looks into each populated one with
  // its own config (its `core.fsmonitor` runs), and a `.git` file of one is where git finds it.
  for (const link of gitlinkEntries(location)) {
    const gitDir = gitDirOf(link)
    if (gitDir === undefined) continue
    if (gitDir !== link) found.push({ path: link, what: `${link}, which tells git where a submodule's repository is` })
    if (!directories.includes(gitDir)) found.push(...placesIn(gitDir, `the git repository ${gitDir}`, true))
  }
  // Where the repository's config (and the user's own) sends git for more: the hooks of `core.hooksPath` (husky's
  // `.husky/`, a `.githooks/` every repository shares) and the files `include.path` and `includeIf.*.path` pull in.
  // Code there runs as surely as in .git/hooks.
  const root = repository.entry === undefined ? repository.gitDir : dirname(repository.entry)
  const configs = [...new Set(directories)].flatMap((directory) => [join(directory, "config"), join(directory, "config.worktree")])
  found.push(...pointedAt(configs, root, true, location))
  return found
}

/**
 * Where the config of the repository `location` is in (its own and its common directory's, and the user's) sends
 * git for more from that work tree: a `core.hooksPath` (a relative one is the work tree's), the files included.
 */
export const pointedFrom = (location: string, user = true): ReadonlyArray<Place> => {
  const repository = repositoryOf(location)
  if (repository === undefined) return []
  const root = repository.entry === undefined ? repository.gitDir : dirname(repository.entry)
  const directories = [...new Set([repository.commonDir, repository.gitDir])]
  return pointedAt(
    directories.flatMap((directory) => [join(directory, "config"), join(directory, "config.worktree")]),
    root,
    user,
    location,
  )
}

/** The `core.hooksPath` values of the user's own git config files (includes not followed), as written. */
export const userHooksPaths = (): ReadonlyArray<string> =>
  userConfigFiles(homedir()).flatMap((file) =>
    configEntries(read(file) ?? "")
      .filter((entry) => entry.section === "core" && entry.key === "hookspath" && entry.value !== "")
      .map((entry) => entry.value),
  )

/** What is at `path`: nothing yet, a directory or regular file (links followed), or something else (a device). */
const kindOf = (path: string): "missing" | "entry" | "other" => {
  try {
    const stats = statSync(path)
    return stats.isDirectory() || stats.isFile() ? "entry" : "other"
  } catch {
    return "missing"
  }
}

/** The most config files followed through includes from one repository's. */
const MAX_INCLUDES = 50

/**
 * The keys whose value is a command git runs, by section (subsections aside: `filter "lfs"` is `filter`; "any":
 * every key of the section), and whether only a value starting with `!` is one (an alias, a submodule's update):
 * `core.pager`, `diff.external`, a diff driver's `textconv`, a filter's `clean`, `credential.helper`, `gpg.program`...
 */
const COMMANDS: Readonly<Record<string, { readonly keys: ReadonlySet<string> | "any"; readonly bang?: true }>> = {
  core: { keys: new Set(["pager", "editor", "fsmonitor", "sshcommand", "askpass", "gitproxy", "alternaterefscommand"]) },
  sequence: { keys: new Set(["editor"]) },
  diff: { keys: new Set(["external", "command", "textconv"]) },
  pager: { keys: "any" },
  gpg: { keys: new Set(["program", "defaultkeycommand"]) },
  filter: { keys: new Set(["clean", "smudge", "process"]) },
  merge: { keys: new Set(["driver"]) },
  mergetool: { keys: new Set(["cmd", "path"]) },
  difftool: { keys: new Set(["cmd", "path"]) },
  credential: { keys: new Set(["helper"]) },
  browser: { keys: new Set(["cmd", "path"]) },
  man: { keys: new Set(["cmd", "path"]) },
  guitool: { keys: new Set(["cmd"]) },
  interactive: { keys: new Set(["difffilter"]) },
  remote: { keys: new Set(["uploadpack", "receivepack", "proxy"]) },
  uploadpack: { keys: new Set(["packobjectshook"]) },
  sendemail: { keys: new Set(["smtpserver", "sendmailcmd", "tocmd", "cccmd", "headercmd"]) },
  trailer: { keys: new Set(["command", "cmd"]) },
  alias: { keys: "any", bang: true },
  submodule: { keys: new Set(["update"]), bang: true },
}

/** Whether `section.key = value` of a git config is a command git runs (COMMANDS). */
export const runsCommand = (section: string, key: string, value: string): boolean => {
  const runs = COMMANDS[section]
  if (runs === undefined || (runs.keys !== "any" && !runs.keys.has(key))) return false
  return runs.bang !== true || value.trimStart().startsWith("!")
}

/**
 * The files a command git runs names by path (`scripts/fsmon.sh`, `!node ./tools/cred.js`, `sh -c ./x`): each word
 * with a `/` (after an `=`, for `--opt=path`), from `bases` when relative (git runs most commands at the top of the
 * work tree, some where git was started). Words git's shell would expand (`$HOME/x`) are left out: what they name
 * is not known here.
 */
const programPaths = (command: string, bases: ReadonlyArray<string>, expand: (value: string, base: string) => string): Array<string> =>
  command
    .replace(/^!/, "")
    .split(/[\s;&|()<>]+/)
    .map((word) => word.replace(/^['"]|['"]$/g, "").replace(/^[^=/]*=/, ""))
    .filter((word) => word.includes("/") && !/[$`*?[]/.test(word))
    .flatMap((word) => (isAbsolute(word) || word.startsWith("~") ? [expand(word, "/")] : bases.map((base) => expand(word, base))))

/**
 * The hooks directories, included config files and programs that `configs` (and the user's own config) name,
 * followed through includes: a relative `core.hooksPath` is the working tree's (`root`), a relative include the
 * including file's directory's, `~/` the home's; a program's path (`programPaths`) is taken from the working tree and
 * from `location` (where the user's git may be started).
 */
const pointedAt = (configs: ReadonlyArray<string>, root: string, user = true, location = root): Array<Place> => {
  const home = homedir()
  const queue = [...configs, ...(user ? userConfigFiles(home) : [])]
  const seen = new Set<string>()
  const found: Array<Place> = []
  const expand = (value: string, base: string) =>
    value === "~" || value.startsWith("~/") ? join(home, value.slice(1)) : isAbsolute(value) ? value : resolve(base, value)
  for (let index = 0; index < queue.length && seen.size < MAX_INCLUDES; index++) {
    const file = queue[index]!
    if (seen.has(file)) continue
    seen.add(file)
    const text = read(file)
    if (text === undefined) continue
    for (const { section, key, value } of configEntries(text)) {
      if (value === "") continue
      if (section === "core" && key === "hookspath") {
        const path = expand(value, root)
        // A hooks path that is no directory (`/dev/null`, to turn hooks off) holds no hooks: nothing to keep.
        if (kindOf(path) === "other") continue
        found.push({ path, what: `${path}, the hooks directory core.hooksPath names in ${file}, whose hooks git runs` })
        // husky's (`.husky/_`): each hook there runs the script of its name in the folder above (`.husky/pre-commit`).
        if (basename(path) === "_") found.push({ path: dirname(path), what: `${dirname(path)}, whose scripts the hooks of ${path} run` })
      } else if (runsCommand(section, key, value)) {
        for (const path of new Set(programPaths(value, [...new Set([root, location])], expand))) {
          if (kindOf(path) !== "other") found.push({ path, what: `${path}, a program ${section}.${key} in ${file} has git run` })
        }
      } else if ((section === "include" || section === "includeif") && key === "path") {
        const path = expand(value, dirname(file))
        if (kindOf(path) === "other") continue
        found.push({ path, what: `${path}, a config file ${file} includes, which tells git what to run` })
        queue.push(path)
      }
    }
  }
  return found
}

/** The values a git config's text gives `section.key` (both lower case; a subsection's dropped), in order. */
export const valuesOf = (text: string, section: string, key: string): ReadonlyArray<string> =>
  configEntries(text)
    .filter((entry) => entry.section === section && entry.key === key)
    .map((entry) => entry.value)

/** One `key = value` of a git config: its section and key lower case, the subsection as written (`filter "lfs"`). */
export interface ConfigEntry {
  readonly section: string
  readonly subsection?: string
  readonly key: string
  readonly value: string
  /** A key with no `=` (git reads it as true). */
  readonly bare?: true
}

const NAME_CHAR = /[A-Za-z0-9.-]/
const KEY_START = /[A-Za-z]/
const KEY_CHAR = /[A-Za-z0-9-]/

/**
 * A git config file's entries as git reads them, in one pass over the text: `[section "sub"]` and the older
 * `[section.sub]` headers (an entry may follow on the header's line), `key = value` and a bare `key` (true), and
 * values with `"` quoting parts, backslash escapes (`\n`, `\t`, `\b`, `\"`, `\\`), a backslash at the end of a
 * line continuing the value on the next (also hiding what would start a section there), spaces around the value
 * dropped and `#` or `;` outside quotes starting a comment. What git would refuse (a quote left open, a line it
 * cannot read) is read as far as it goes: a config git refuses runs nothing.
 */
export const configEntries = (text: string): Array<ConfigEntry> => {
  const entries: Array<ConfigEntry> = []
  const length = text.length
  let at = 0
  let section = ""
  let subsection: string | undefined
  const lineEnd = () => {
    while (at < length && text[at] !== "\n") at++
  }
  while (at < length) {
    const char = text[at]!
    if (char === " " || char === "\t" || char === "\r" || char === "\n") {
      at++
      continue
    }
    if (char === "#" || char === ";") {
      lineEnd()
      continue
    }
    if (char === "[") {
      at++
      let name = ""
      while (at < length && NAME_CHAR.test(text[at]!)) name += text[at++]
      subsection = undefined
      while (text[at] === " " || text[at] === "\t") at++
      if (text[at] === '"') {
        at++
        let sub = ""
        while (at < length && text[at] !== '"' && text[at] !== "\n") {
          if (text[at] === "\\" && at + 1 < length && text[at + 1] !== "\n") at++
          sub += text[at++]
        }
        if (text[at] === '"') at++
        subsection = sub
      }
      while (at < length && text[at] !== "]" && text[at] !== "\n") at++
      if (text[at] === "]") at++
      const dot = name.indexOf(".")
      if (dot !== -1 && subsection === undefined) [name, subsection] = [name.slice(0, dot), name.slice(dot + 1).toLowerCase()]
      section = name.toLowerCase()
      continue
    }
    if (!KEY_START.test(char)) {
      lineEnd()
      continue
    }
    let key = ""
    while (at < length && KEY_CHAR.test(text[at]!)) key += text[at++]
    while (text[at] === " " || text[at] === "\t") at++
    if (text[at] !== "=") {
      // A bare key is true; anything else after it is not git's to read.
      entries.push({ section, ...(subsection === undefined ? {} : { subsection }), key: key.toLowerCase(), value: "true", bare: true })
      lineEnd()
      continue
    }
    at++
    let value = ""
    /** Spaces outside quotes after what was read: part of the value only where more of it follows. */
    let spaces = ""
    let quoted = false
    while (at < length) {
      const next = text[at]!
      if (next === "\n") break
      if (!quoted && (next === "#" || next === ";")) {
        lineEnd()
        break
      }
      if (next === "\\") {
        const escaped = text[at + 1]
        if (escaped === "\n") {
          at += 2
          continue
        }
        if (escaped === "\r" && text[at + 2] === "\n") {
          at += 3
          continue
        }
        value += spaces + (escaped === "n" ? "\n" : escaped === "t" ? "\t" : escaped === "b" ? "\b" : (escaped ?? ""))
        spaces = ""
        at += 2
        continue
      }
      if (next === '"') {
        quoted = !quoted
        value += spaces
        spaces = ""
      } else if (!quoted && (next === " " || next === "\t" || next === "\r")) {
        if (value !== "") spaces += next
      } else {
        value += spaces + next
        spaces = ""
      }
      at++
    }
    entries.push({ section, ...(subsection === undefined ? {} : { subsection }), key: key.toLowerCase(), value })
  }
  return entries
}
