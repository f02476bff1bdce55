export * as Guard from "./guard"

// Core's own configuration in a Location (core.json, tools/, plugins/, .core/), the code its tool and plugin files
// import and what the user's git runs (.git/hooks, .git/config: Protected.code) against the code a command runs,
// which no per-command check can read. The entries that exist are mounted read-only for the command by its
// supervisor (./namespace). One that does not exist cannot be covered that way, so what the command created at
// its place is removed once the command and everything it started have ended, and the result says so; so is one
// that a command replaced by renaming a folder above it (only the Location's own entries are mount points no
// command can move): the folder is put back where it holds a file a tool imports, otherwise the content is put back
// where it was kept. The Location itself, or a folder above it, renamed away (its parent is a place a command may
// write: the temp directory, a repository granted by shell.allowWrite) and replaced with one the command made, is
// moved back, and what stood in its place set aside. Where the
// system gives no mount namespace, what the command changed inside the existing directories (a file written,
// replaced or added) is taken out the same way, and core.json is put back. Meanwhile the Location counts as busy:
// a long-lived core defers hot reload of its tool files and core.json until no command of that Location runs
// (`idle`), so it never loads a file a command wrote.

import {
  type BigIntStats,
  type Stats,
  closeSync,
  constants,
  cpSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path"
import { Git } from "../permission/git"
import { Protected } from "../permission/protected"
import { Planted } from "./planted"
import { ProcessGroup } from "./process-group"
import { Landlock } from "./landlock"
import { Listing } from "./listing"
import { Repositories } from "./repositories"

interface Before {
  /** Who it is: device, inode, kind and birth time (an inode number freed by the command may be reused at once). */
  readonly dev: number
  readonly ino: number
  readonly kind: number
  readonly born: number
  /** Where it pointed, when it was a symbolic link (which the command could replace: it is no mount point). */
  readonly link: string | undefined
  /** The content of a regular core.json, put back should the command change it where no mount protected it. */
  readonly content: Buffer | undefined
  /** Its permission bits, which content put back keeps. */
  readonly mode: number
  /**
   * Whether it is a regular file with other names (hard links): one of them may lie where the command can write,
   * so a mount of this one does not keep its content. Its content is kept and looked at when the command ends.
   */
  readonly linked: boolean
}

/** The largest core.json whose content is kept to put back. */
const MAX_CONTENT_BYTES = 1_048_576

/** A file, link or directory inside a protected directory, as it was before the command. */
interface Inside {
  readonly ino: bigint
  readonly kind: bigint
  /** When its inode last changed (ns): any write, rename or change of mode moves it, and no command can set it. */
  readonly changed: bigint
}

/** The most entries noted inside one protected directory; a directory holding more is not checked inside. */
export const MAX_INSIDE = 10_000

const DIRECTORY = 0o040000n

/**
 * Everything beneath `directory` (depth first, symbolic links not followed), up to `budget` entries: whether it
 * saw all of it.
 */
const survey = (directory: string, into: Map<string, Inside>, budget: { left: number }): boolean => {
  const fd = openFolder(directory)
  if (fd === undefined) return true
  try {
    return surveyHeld(fd, directory, into, budget)
  } finally {
    closeSync(fd)
  }
}

/**
 * `survey` of the folder held open as `fd`, noted as `directory`: each folder below it opened without following a
 * link (a command still running may swap one for a link while it is looked at; see `inHeld`).
 */
const surveyHeld = (fd: number, directory: string, into: Map<string, Inside>, budget: { left: number }, known?: Known): boolean => {
  let names: Array<string>
  try {
    names = readdirSync(`/proc/self/fd/${fd}`)
  } catch {
    return true
  }
  for (const name of names) {
    if (budget.left <= 0) return false
    budget.left--
    const path = join(directory, name)
    let stats: BigIntStats | undefined
    try {
      stats = lstatSync(inHeld(fd, name), { bigint: true, throwIfNoEntry: false })
    } catch {
      stats = undefined
    }
    if (stats === undefined) continue
    const kind = stats.mode & 0o170000n
    into.set(path, { ino: stats.ino, kind, changed: stats.ctimeNs })
    if (kind !== DIRECTORY) continue
    // Not into a folder the guard notes elsewhere (the Location's `.git` moved here): it is not this one's to look in.
    const noted = known?.get(`${stats.dev}:${stats.ino}`)
    if (noted !== undefined && noted !== path) continue
    const below = openFolder(inHeld(fd, name), true)
    if (below === undefined) continue
    try {
      if (!surveyHeld(below, path, into, budget, known)) return false
    } finally {
      closeSync(below)
    }
  }
  return true
}

interface Entry {
  readonly path: string
  /** The directory what the command left here is kept under, by its path from there. */
  readonly base: string
  /**
   * When what the command made of it is undone: `fixed`, one of the Location's own entries, which a mount keeps
   * in place (no folder above it can be renamed); `renamed`, code elsewhere in a place a command may write, which
   * a command can replace by renaming a folder above it; `never`, code where a command cannot write, only mounted.
   */
  readonly undo: "fixed" | "renamed" | "never"
  /**
   * Of code elsewhere (`renamed`): the folders above it, up to its Location, as they were, each held open (the
   * nearest first). Mounted, it changes only when the command renamed one of them (which is put back); otherwise a
   * change is a person's (an editor saving it) and stays.
   */
  readonly above: ReadonlyArray<Way>
  readonly before: Before | undefined
  /** What a directory held before the command, when no mount is expected to keep it read-only. */
  readonly inside: Map<string, Inside> | undefined
  /** Whether it is mounted read-only while the command runs (else its content is put back after: `restored`). */
  readonly mounted: boolean
  /**
   * Whether it is a file a tool imports: another spelling of its name in its folder is loaded in its place (Bun's
   * resolver finds it ignoring case: `lib/FMT.ts` for a missing `../lib/fmt.ts`), and a folder above it the command
   * renamed away is put back (see `finish`).
   */
  readonly imported: boolean
}

export interface Undone {
  /** The entries undone (absolute paths). */
  readonly paths: ReadonlyArray<string>
  /** Where what the command had left there was moved, for a person to look at; none when nothing was undone. */
  readonly keptIn: string | undefined
  /**
   * Set when the search for the repositories the command made could not finish (it left more than core searches, or
   * a folder core cannot list): what that means, and that the folders are refused until a person has looked (see
   * `Record_.unchecked`).
   */
  readonly unchecked?: string
}

export interface Guarded {
  /** The entries that exist: what the supervisor mounts read-only. */
  readonly readOnly: ReadonlyArray<string>
  /**
   * Who each of `readOnly` was when the guard looked (`dev:ino`): the starter checks its mounts stand on these, since
   * another command of the Location may move a folder above one (`.git`, `lib`) between the look and the mount.
   */
  readonly readOnlyIds?: ReadonlyArray<string>
  /**
   * The Locations' own git directories (and common directories) that exist, and the Locations in a place the
   * command may write: the supervisor binds each onto itself (writable), so that no command renames one away and
   * makes another in its place while it runs, which the user's git, run meanwhile, would take with its hooks and
   * config, or core, loading a Location named meanwhile, with its tools.
   */
  readonly pinned?: ReadonlyArray<string>
  /**
   * Once the command and everything it started have ended: undoes what the command made of the entries (an entry
   * created, a symbolic link replaced, which is put back, a core.json changed, whose content is put back), moving
   * what it had left there into the keeping directory (a file written at the same time with a person's approval
   * is not lost), and lets the Location go. `mounted`: the entries that existed were read-only to the command, so
   * any change to them is someone else's (a person's) and stays. Idempotent.
   */
  readonly finish: (mounted: boolean) => Undone
  /**
   * Why the command must not start (MOVED): what this guard found differs from what a command still running found
   * first. Nothing is held or mounted then, and `finish` undoes nothing.
   */
  readonly refused?: string
  /** Why: what another command moved (MOVED), or a search for repositories that could not finish. */
  readonly refusedBy?: "moved" | "unsearched"
}

/**
 * Moves `path` to `target` (its directory made when needed), copying where a move cannot cross file systems;
 * removes it whatever happens, so that nothing of it stays where core would load it.
 */
const setAside = (path: string, target: string | undefined): void => {
  if (target !== undefined) {
    try {
      mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
      renameSync(path, target)
      return
    } catch {
      try {
        cpSync(path, target, { recursive: true, verbatimSymlinks: true })
      } catch {
        // kept nowhere: it is still removed below
      }
    }
  }
  rmSync(path, { recursive: true, force: true })
}

/** Commands running per Location (real path), and who waits for the Location to have none. */
const running = new Map<string, number>()
const waiting = new Map<string, Array<() => void>>()

/** A command guarded now in this process: whether it may write a place, and how it guards one more Location. */
interface Guarding {
  readonly reaches: (path: string) => boolean
  /**
   * Guards `location` (real) too, from now until the command ends (`ended`: once its guard has undone what the
   * command changed there); or why it cannot.
   */
  readonly adopt: (location: string) => Adopted
}

/** A Location adopted: settled once every command that adopted it has ended; or why one could not. */
export type Adopted = { readonly ended: Promise<void> } | { readonly refused: string }

/** The commands guarded now in this process (not the Locations adopted by one: see `adopt`). */
const guarding = new Set<Guarding>()
/** Set while a command adopts a Location: that guard is the command's, not one of its own. */
let adopting = false

/**
 * What the earliest command still running found at each path a guard holds or notes (the folders on the way to a
 * Location, a repository's .git, core's configuration, where a .git above it would be), and how many running
 * commands' guards noted it. A command started later must find the same: otherwise what stands there is another
 * command's doing (a Location or .git it swapped), which this one's guard would take for the user's and put back
 * once it ends, after the other's guard had undone it.
 */
const baselines = new Map<string, { readonly before: Noted | null; count: number }>()

/** What a guard searched for repositories, and found there (see Record_ `repositories`). */
interface Search {
  readonly roots: ReadonlyArray<string>
  readonly found: ReadonlyArray<string>
}

/** The searches of the commands running in this process, each guard's own. */
const searches = new Set<Search>()

/**
 * The folders where a command of this process ended with the search after it unfinished, and where it stopped, when
 * no record of it could be written (no records directory): refused here until the process stops (see `Record_.unchecked`).
 */
const uncheckedHere = new Map<string, Unsearched>()

/**
 * Whether a command still running may have made `repository`: one of its searches covered where it is and did not
 * find it. Such a repository is not the user's to the guard of a command started after (its end would otherwise
 * put back, as the user's, what the first command planted there).
 */
const madeByOther = (repository: string, others: ReadonlyArray<Search>): boolean =>
  others.some(
    (search) => search.roots.some((root) => repository.startsWith(root + sep)) && !search.found.includes(repository),
  )

/**
 * What a guard found at a path, as another core process reads it from its record: who the entry was (or null for
 * none), where a link pointed, and a digest of the content kept.
 */
interface Noted {
  readonly dev: number
  readonly ino: number
  readonly kind: number
  readonly born: number
  readonly link?: string
  readonly digest?: string
}

const digestOf = (content: Buffer): string => new Bun.CryptoHasher("sha256").update(content).digest("hex")

const notedOf = (before: Before | undefined): Noted | null =>
  before === undefined
    ? null
    : {
        dev: before.dev,
        ino: before.ino,
        kind: before.kind,
        born: before.born,
        ...(before.link === undefined ? {} : { link: before.link }),
        ...(before.content === undefined ? {} : { digest: digestOf(before.content) }),
      }

/** Whether `now` is what `was` noted: the same entry, and the same content where both kept it. */
const sameAs = (was: Noted | null, now: Noted | null): boolean =>
  was === null || now === null
    ? was === now
    : was.dev === now.dev &&
      was.ino === now.ino &&
      was.kind === now.kind &&
      was.born === now.born &&
      was.link === now.link &&
      (was.digest === undefined || now.digest === undefined || was.digest === now.digest)

/**
 * A guard's record for other core processes (in core's data directory, which commands cannot reach): whose it is
 * (pid and start time, so a dead core's is known for one) and what it found before its command started.
 */
interface Record_ {
  readonly pid: number
  readonly start: number
  readonly found: ReadonlyArray<readonly [string, Noted | null]>
  /**
   * The folders searched for repositories (the Locations, the folders granted) and those found in them: one made
   * since (a nested repository, one added at a gitlink) would keep what git runs of it, never taken out.
   */
  readonly repositories?: { readonly roots: ReadonlyArray<string>; readonly found: ReadonlyArray<string> }
  /**
   * Written over the record when its command has ended and the search after it could not finish (the command left
   * more than core searches, or a folder core cannot list): the roots, and where and why it stopped. A repository
   * the command made among them keeps what git runs of it, unseen, so the record stands, for every core process,
   * its own included, until a person removes it.
   */
  readonly unchecked?: { readonly roots: ReadonlyArray<string> } & Unsearched
}

/** A record read back, with where it is. */
interface Read {
  readonly path: string
  readonly record: Record_
}

/**
 * The guards' records in `directory` (none where it cannot be read), split into those of commands still running in
 * other core processes and those of dead cores. A dead core's record whose command left every path as its guard found
 * it is removed as it is met; one whose paths changed is kept (see `stale`).
 */
const recordsIn = (directory: string): { readonly running: ReadonlyArray<Read>; readonly dead: ReadonlyArray<Stale> } => {
  let names: ReadonlyArray<string>
  try {
    names = readdirSync(directory).filter((name) => name.endsWith(".json"))
  } catch {
    return { running: [], dead: [] }
  }
  const running: Array<Read> = []
  const dead: Array<Stale> = []
  for (const name of names) {
    const path = join(directory, name)
    // This process's own running commands are known here (`searches`): their records are not read back, which cost
    // each command of a burst a read of every other's.
    if (ownRunning.has(path)) continue
    let record: Record_
    try {
      record = JSON.parse(readFileSync(path, "utf8")) as Record_
    } catch {
      // Gone meanwhile (its command ended), or being written: a record is renamed into place whole.
      continue
    }
    if (record.unchecked !== undefined) {
      const { roots, ...unsearched } = record.unchecked
      dead.push({ record: path, pid: record.pid, found: roots, changed: roots, unchecked: { ...unsearched, by: unsearched.by ?? "bound" } })
      continue
    }
    // (A record of a dead core that had this pid, with another start time, is a dead core's.)
    if (record.pid === process.pid && record.start === startOfThisProcess()) continue
    // A core killed but not yet reaped (a zombie, state Z or X) keeps its start time, but not its lock: it is dead.
    const owner = ProcessGroup.stat(record.pid)
    if (owner !== undefined && owner.start === record.start && owner.state !== "Z" && owner.state !== "X") {
      running.push({ path, record })
      continue
    }
    const changed = record.found.filter(([at, was]) => !sameAs(was, notedOf(look(at, was?.digest !== undefined)))).map(([at]) => at)
    if (record.repositories !== undefined) {
      const now = Repositories.under(record.repositories.roots)
      const was = new Set(record.repositories.found)
      // A search stopped at its bound is no sign of one made: the folder searched counts as changed.
      if (now.partial) changed.push(...record.repositories.roots)
      // (A root made a repository is noted by its own `.git` and `HEAD`.)
      else changed.push(...now.repositories.filter((repository) => !was.has(repository) && !record.repositories!.roots.includes(repository)))
    }
    if (changed.length === 0) rmSync(path, { force: true })
    else dead.push({ record: path, pid: record.pid, found: record.found.map(([at]) => at), changed })
  }
  return { running, dead }
}

/** What the guards of commands still running in other core processes found, read from their records in `directory`. */

/**
 * A record of a core process that died while its command ran (SIGKILL, a crash), whose guard therefore never undid
 * what the command left, and some of whose paths are no longer what the guard found: a Location, a folder above it
 * or a .git renamed away and replaced, core's configuration made where there was none. What stands there may be the
 * command's, and loading it would run it outside the sandbox.
 */
export interface Stale {
  /** The record's file (in core's data directory): removing it lets the paths load again. */
  readonly record: string
  readonly pid: number
  /** Every path its guard noted. */
  readonly found: ReadonlyArray<string>
  /** Those no longer as noted. */
  readonly changed: ReadonlyArray<string>
  /**
   * Set where the record is of a command that ended with the search after it unfinished (`Record_.unchecked`): where
   * and why that search stopped. `changed` is then the folders it searched.
   */
  readonly unchecked?: Unsearched
}

/** Where a search for repositories stopped before its end, and why: past a bound, or at a folder it cannot list. */
export interface Unsearched {
  readonly at: string | undefined
  readonly by: "bound" | "shut"
  /** For a folder it could not list, the error (`Listing.shut`). */
  readonly code?: string
}

/** Whether `path` is `location`, inside it or a folder above it. */
const alongside = (path: string, location: string): boolean =>
  path === location || path.startsWith(`${location}${sep}`) || location.startsWith(path === sep ? sep : `${path}${sep}`)

/**
 * The dead cores' records in `directory` that stand in the way of loading the Location at `location` (a real path):
 * a command of that Location whose paths changed, or another's whose changed paths are the Location, inside it or
 * above it. Those of dead cores whose paths are all as noted are removed on the way.
 */
export const stale = (directory: string, location: string): ReadonlyArray<Stale> =>
  [...recordsIn(directory).dead, ...uncheckedInProcess()].filter(
    (dead) => dead.found.includes(location) || dead.changed.some((path) => alongside(path, location)),
  )

/** The commands of this process that ended with the search after them unfinished and no record of it written. */
const uncheckedInProcess = (): ReadonlyArray<Stale> =>
  [...uncheckedHere].map(([root, unsearched]) => ({ record: "", pid: process.pid, found: [root], changed: [root], unchecked: unsearched }))

/** Why a Location is not loaded: `stale` found records in the way. */
export const staleMessage = (location: string, found: ReadonlyArray<Stale>): string => {
  const unchecked = found.filter((one) => one.unchecked !== undefined)
  const killed = found.filter((one) => one.unchecked === undefined)
  return [...(unchecked.length > 0 ? [uncheckedMessage(location, unchecked)] : []), ...(killed.length > 0 ? [killedMessage(location, killed)] : [])].join(
    " And ",
  )
}

/** Why a Location is not loaded: a core died while a command ran there, and some of what its guard found changed. */
const killedMessage = (location: string, found: ReadonlyArray<Stale>): string => {
  const changed = [...new Set(found.flatMap((one) => one.changed))]
  const pids = [...new Set(found.map((one) => one.pid))]
  return (
    `core will not load ${location}: a command that core process ${pids.join(", ")} ran here was still running when ` +
    `that process was stopped, before it could undo what the command changed, and ${changed.join(", ")} ` +
    `${changed.length === 1 ? "is" : "are"} no longer what ${changed.length === 1 ? "it was" : "they were"} when the ` +
    "command started: what stands there now may be the command's (a Location, a .git or core's configuration it " +
    "made), which core would run outside the sandbox. Look at it, put back what is yours, then remove " +
    `${found.map((one) => one.record).join(" and ")} and start core again.`
  )
}

/** The bounds of a search, in words. */
const boundsText = (): string => {
  const { folders, entries } = Repositories.bounds()
  return `${folders.toLocaleString("en-US")} folders or ${entries.toLocaleString("en-US")} entries`
}

/** What stopped a search, in words: more than it searches, or a folder it cannot list. */
const stopText = (unsearched: ReadonlyArray<Unsearched>): string => {
  const bound = unsearched.filter((one) => one.by === "bound")
  const at = [...new Set(bound.flatMap((one) => (one.at === undefined ? [] : [one.at])))]
  const shut = unsearched.flatMap((one) => (one.by === "shut" && one.at !== undefined ? [`${one.at} (${Listing.shutText(one.code ?? "")})`] : []))
  return [
    ...(bound.length > 0
      ? [`more than ${boundsText()} (node_modules not counted${at.length === 0 ? "" : `; the search stopped at ${at.join(", ")}`})`]
      : []),
    ...(shut.length > 0 ? [`a folder core cannot list: ${[...new Set(shut)].join(", ")}`] : []),
  ].join(", and ")
}

/** Why a Location is refused: a command ended there with the search for the repositories it made unfinished. */
const uncheckedMessage = (location: string, found: ReadonlyArray<Stale>): string => {
  const roots = [...new Set(found.flatMap((one) => one.changed))]
  const records = found.flatMap((one) => (one.record === "" ? [] : [one.record]))
  return (
    `core will not load ${location} or run commands in it: a command core process ${[...new Set(found.map((one) => one.pid))].join(", ")} ` +
    `ran left ${stopText(found.flatMap((one) => (one.unchecked === undefined ? [] : [one.unchecked])))} in ${roots.join(", ")}, ` +
    "so core could not search them for a git repository that command made. A repository it made there keeps its " +
    "hooks and config, which the user's git would run outside the sandbox. Ask the user to look at what it left " +
    "(remove the folders it made, and any .git in them that is not theirs), then to " +
    (records.length === 0 ? "start core again." : `remove ${records.join(" and ")}.`) +
    " Do not retry until then."
  )
}

/** Why a command is not started: the search for the repositories it may write stopped before its end. */
const unsearchedMessage = (roots: ReadonlyArray<string>, unsearched: Unsearched): string =>
  `core did not run the command: before each command core searches ${roots.join(", ")} for the git repositories ` +
  "the command may write (their hooks and config run when the user runs git, outside the sandbox), and it met " +
  `${stopText([unsearched])}, so the search cannot finish. Ask the user to ` +
  (unsearched.by === "bound"
    ? "remove what is not needed there (a folder of generated files), or to serve a smaller Location or grant a smaller folder."
    : "look at that folder (make it readable, move it to a shorter path, or remove it).") +
  " Do not retry the command until then."

/**
 * Writes this guard's record into `directory`, whole (over the one at `path` when given); its path, or undefined
 * where it cannot (a read-only data dir).
 */
const writeRecord = (
  directory: string,
  found: ReadonlyArray<readonly [string, Noted | null]>,
  repositories: Record_["repositories"],
  unchecked?: Record_["unchecked"],
  path: string = join(directory, `${process.pid}-${crypto.randomUUID()}.json`),
): string | undefined => {
  const start = startOfThisProcess()
  if (start === undefined) return undefined
  const record: Record_ = {
    pid: process.pid,
    start,
    found,
    ...(repositories === undefined ? {} : { repositories }),
    ...(unchecked === undefined ? {} : { unchecked }),
  }
  try {
    // The folder once made stays (core's data directory): made again only where the write finds it gone.
    if (!recordFolders.has(directory)) mkdirSync(directory, { recursive: true, mode: 0o700 })
    try {
      writeFileSync(`${path}.tmp`, JSON.stringify(record), { mode: 0o600 })
    } catch {
      mkdirSync(directory, { recursive: true, mode: 0o700 })
      writeFileSync(`${path}.tmp`, JSON.stringify(record), { mode: 0o600 })
    }
    recordFolders.add(directory)
    renameSync(`${path}.tmp`, path)
    // A record marked unchecked is read back like any other: a person removing it is what clears it.
    if (unchecked === undefined) ownRunning.add(path)
    else ownRunning.delete(path)
    return path
  } catch {
    rmSync(`${path}.tmp`, { force: true })
    return undefined
  }
}

/** This process's start time (ProcessGroup.stat), read once: it never changes. */
let ownStart: number | undefined
const startOfThisProcess = (): number | undefined => (ownStart ??= ProcessGroup.stat(process.pid)?.start)
/** The records this process wrote for its commands still running (not marked unchecked). */
const ownRunning = new Set<string>()
/** The records' folders this process made or found (writeRecord). */
const recordFolders = new Set<string>()

/** Why a command is not started (`Guarded.refused`): what another command still running changed. */
export const MOVED =
  "another command still running in this Location moved it, a folder above it or its repository's .git away, or " +
  "changed core's configuration in it; that command's end puts it back. Run this one again once it has ended."

const realOf = (path: string): string => {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

const lstat = (path: string | Buffer) => {
  try {
    return lstatSync(path, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

const look = (path: string | Buffer, keep = false): Before | undefined => {
  const stats = lstat(path)
  if (stats === undefined) return undefined
  let link: string | undefined
  let content: Buffer | undefined
  try {
    if (stats.isSymbolicLink()) link = readlinkSync(path)
    else if ((keep || stats.nlink > 1) && stats.isFile() && stats.size <= MAX_CONTENT_BYTES) content = fileContent(path, stats)
  } catch {
    // gone or unreadable meanwhile: nothing to put back
  }
  const linked = stats.isFile() && stats.nlink > 1
  return { dev: stats.dev, ino: stats.ino, kind: stats.mode & 0o170000, born: stats.birthtimeMs, link, content, mode: stats.mode & 0o7777, linked }
}

/**
 * The content of the regular file at `path` that `stats` describe, read through a descriptor opened without following
 * a link and without waiting (a link or a FIFO a command swapped in after `stats` were taken: core, as root, would
 * read what the link leads to, and put it back where the command reads it; a FIFO would hold core for good).
 * Undefined where what is there now is not that file.
 */
const fileContent = (path: string | Buffer, stats: Stats): Buffer | undefined => {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    const opened = fstatSync(fd)
    if (!opened.isFile() || opened.dev !== stats.dev || opened.ino !== stats.ino) return undefined
    return readFileSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** Whether a path is who it was (the same inode, kind and birth), or missing both times. */
const unchanged = (was: Before | undefined, now: Before | undefined): boolean =>
  was === undefined
    ? now === undefined
    : now !== undefined && was.dev === now.dev && was.ino === now.ino && was.kind === now.kind && was.born === now.born

/**
 * A folder on the way to a Location (the Location, then each folder above it), as it was before the command, held
 * open: the handle follows it wherever the command moves it.
 */
interface Way {
  readonly path: string
  readonly before: Before | undefined
  readonly fd: number | undefined
}

/** The folder at `path` as it is, held open where it is a folder that can be opened. */
const holding = (path: string): Way => {
  let fd: number | undefined
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
  } catch {
    fd = undefined
  }
  return { path, before: look(path), fd }
}

/** The Location `key` and every folder above it but the root, each noted and held open where it can be. */
const wayTo = (key: string): Array<Way> => {
  const way: Array<Way> = []
  for (let path = key; path !== dirname(path); path = dirname(path)) way.push(holding(path))
  return way
}

/**
 * Where the directory held open as `fd` is now, or undefined where it is gone (removed, or out of reach). As bytes:
 * a command may rename it to a name that is no UTF-8, or that ends as the kernel marks a removed one (" (deleted)"),
 * which a removed directory is told from by having no links left.
 */
const whereNow = (fd: number): Buffer | undefined => {
  try {
    const path = readlinkSync(`/proc/self/fd/${fd}`, { encoding: "buffer" })
    return path[0] === 0x2f && fstatSync(fd).nlink > 0 ? path : undefined
  } catch {
    return undefined
  }
}

/**
 * Acting once a command has ended, core acts as its user (root included) on places a command still running beside
 * it may change at any moment: a folder on the way swapped for a link (to the Location's `.git`, to `/etc`), or
 * another folder moved to the path. A check of a path and an action by it would then act on different things. So
 * core acts through a folder held open: `/proc/self/fd/N/NAME` is NAME in that very folder, wherever it is now.
 */
const inHeld = (fd: number, name: string): string => `/proc/self/fd/${fd}/${name}`

/** The folder at `path` opened to act in (`noFollow`: not when `path` itself is a link), or undefined. */
const openFolder = (path: string, noFollow = false): number | undefined => {
  try {
    return openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | (noFollow ? constants.O_NOFOLLOW : 0))
  } catch {
    return undefined
  }
}

/** The folders a guard notes, by who they are (`dev:ino`): where each was before its command. */
type Known = ReadonlyMap<string, string>

/**
 * Runs `act` on `path` through its folder held open (see `inHeld`, `folderOf`: the folder named, or one a link on the
 * way leads to where its real path passes `through`). Answers what `act` did, or undefined where the folder cannot be
 * opened or is not taken (nothing is touched then).
 */
const inFolder = <A>(path: string, act: (at: string) => A, known: Known, through?: (real: string) => boolean): A | undefined => {
  const fd = folderOf(path, known, through)
  if (fd === undefined) return undefined
  try {
    return act(inHeld(fd, basename(path)))
  } finally {
    closeSync(fd)
  }
}

/**
 * Sets aside what stands at `at` (through a folder held open; see `setAside`) unless it is a folder the guard notes
 * (`known`) elsewhere than at `path`, which `at` names: first renamed to a name of core's own beside it and looked at
 * there, so that what is checked is what was moved (a command still running may move the Location's `.git` to the
 * name between a look and a rename), and moved back where it is such a folder. Answers whether it set something aside.
 */
const asideChecked = (at: string, path: string, target: string | undefined, known: Known): boolean => {
  const staged = join(dirname(at), `.core-aside-${crypto.randomUUID()}`)
  try {
    renameSync(at, staged)
  } catch {
    return false
  }
  const stats = lstat(staged)
  const noted = stats?.isDirectory() === true ? known.get(`${stats.dev}:${stats.ino}`) : undefined
  if (noted !== undefined && noted !== path) {
    try {
      if (lstat(at) === undefined) renameSync(staged, at)
    } catch {
      // left beside it under core's name: a Location's `.git` is found there and moved back (`unmade`)
    }
    return false
  }
  setAside(staged, target)
  return true
}

/** Sets aside what stands at `path` (`asideChecked`), through its folder held open where it is taken (`inFolder`). */
const setAsideIn = (path: string, target: string | undefined, known: Known, through?: (real: string) => boolean): boolean =>
  inFolder(path, (at) => lstat(at) !== undefined && asideChecked(at, path, target, known), known, through) === true

/**
 * The folder `names` below the folder held as `fd` (none: that folder itself), each step opened without following a
 * link, held open for the caller to close; undefined where a step is missing, no folder, or a link.
 */
const descend = (fd: number, names: ReadonlyArray<string>): number | undefined => {
  let at = openFolder(`/proc/self/fd/${fd}`)
  for (const name of names) {
    if (at === undefined) return undefined
    const next = openFolder(inHeld(at, name), true)
    closeSync(at)
    at = next
  }
  return at
}

/** Whether `path` is a mount point (another file system, or another mount of it, than its folder's). */
const mountPoint = (path: string): boolean => {
  const here = lstat(path)
  const above = lstat(dirname(path))
  return here === undefined || above === undefined || here.dev !== above.dev || here.ino === above.ino
}

/**
 * Puts back, highest first, each folder of `way` the command renamed away, until the way is as it was (a folder put
 * back may hold the one below it moved aside inside it, or replaced): each only when that surely undoes a rename,
 * the folder found where its handle leads, as it was, and what stands at its path no mount point (a file system
 * remounted there is never touched). What stands there is set aside with `setAsideAt` first (given its path, and
 * the same through its folder held open), unless it is another folder this guard notes (`known`, by who it is),
 * moved there by a command still running: that is left as it is. Both renames are made through the folders held
 * open (see `inHeld`). Answers whether the way is as it was (unchanged, or put back), and the paths put back.
 */
const putBack = (
  way: ReadonlyArray<Way>,
  setAsideAt: (path: string, at: string) => void,
  known: Known,
): { readonly intact: boolean; readonly moved: ReadonlyArray<string> } => {
  const moved: Array<string> = []
  for (let round = 0; round <= way.length; round++) {
    const folder = [...way].reverse().find((each) => each.before !== undefined && !unchanged(each.before, look(each.path)))
    if (folder === undefined) return { intact: true, moved }
    const now = folder.fd === undefined ? undefined : whereNow(folder.fd)
    const found = now !== undefined && !now.equals(Buffer.from(folder.path)) && unchanged(folder.before, look(now))
    const standing = lstat(folder.path) !== undefined
    if (!found || (standing && mountPoint(folder.path))) return { intact: false, moved }
    // Its folder must be where it was, not a link the command put on the way: putting back through one would move
    // the folder out to wherever the link leads (`inFolder`'s own check). Nor is anything but the folder moved,
    // wherever it is now: a folder on its way swapped for a link would have another of its name moved instead.
    const back = inFolder(
      folder.path,
      (to) => {
        const there = lstat(to)
        const noted = there === undefined ? undefined : known.get(`${there.dev}:${there.ino}`)
        if (noted !== undefined && noted !== folder.path) return false
        // Moved from the folder holding it now (reached through itself: `..`), by its name there as bytes (a command
        // may have named it with bytes that are no UTF-8): the folder held, no other.
        const parent = openFolder(`/proc/self/fd/${folder.fd}/..`)
        if (parent === undefined) return false
        try {
          const from = Buffer.concat([Buffer.from(`/proc/self/fd/${parent}/`), now.subarray(now.lastIndexOf(0x2f) + 1)])
          if (!unchanged(folder.before, look(from))) return false
          // Out of what stands at the path first (the command may have moved it inside), to a name of its own beside it.
          const out = join(dirname(to), `.${basename(folder.path)}.core-back-${crypto.randomUUID().slice(0, 8)}`)
          try {
            renameSync(from, out)
          } catch {
            return false
          }
          if (standing) setAsideAt(folder.path, to)
          try {
            renameSync(out, to)
          } catch {
            return false
          }
          return true
        } finally {
          closeSync(parent)
        }
      },
      known,
    )
    if (back !== true) return { intact: false, moved }
    moved.push(folder.path)
  }
  return { intact: false, moved }
}

/**
 * Guards `location` for one command, from before it starts, and with it `others`: the other Locations this core
 * serves, whose configuration the command must not change either. What the command leaves in core's
 * configuration is moved under `keeping` (in core's data directory, which commands cannot reach), or only removed
 * without one. `unmounted`: no mount is expected to keep the existing entries read-only, so what their
 * directories hold is noted now, to take out what the command changed in them. `writable`: the other places the
 * command may write (shell.allowWrite, directories approved for the call), where it can rename a folder above a
 * protected path as it can in the temp directory. `records`: the directory (in core's data directory) where the
 * guards of every core process note what they found, so that a command started in one while another's swap stands
 * is refused as in the same process. `people`: the folders of `writable` a person granted (shell.allowWrite,
 * directories approved for the call; not the temp directory), whose repositories are guarded as the Location's.
 */
export const begin = (
  location: string,
  keeping?: string,
  others: ReadonlyArray<string> = [],
  unmounted = false,
  writable: ReadonlyArray<string> = [],
  home: string = Protected.directoriesOf().home,
  records?: string,
  people: ReadonlyArray<string> = writable,
): Guarded => {
  const keys = [...new Set([location, ...others].map(realOf))]
  for (const key of keys) running.set(key, (running.get(key) ?? 0) + 1)
  /** Lets the Locations go: hot reload may run again once no command runs in one. */
  const leave = () => {
    for (const key of keys) {
      const left = (running.get(key) ?? 1) - 1
      if (left > 0) running.set(key, left)
      else {
        running.delete(key)
        for (const wake of waiting.get(key)?.splice(0) ?? []) wake()
        waiting.delete(key)
      }
    }
  }
  /** The folders above entries of code elsewhere, held open: see `Entry.above`. */
  const folders = new Map<string, Way>()
  const noted = (path: string, base: string, undo: Entry["undo"], keep: boolean, mounted = true, imported = false): Entry => {
    const before = look(path, keep)
    let inside: Map<string, Inside> | undefined
    if ((unmounted || !mounted) && before?.kind === Number(DIRECTORY)) {
      inside = new Map()
      if (!survey(path, inside, { left: MAX_INSIDE })) inside = undefined
    }
    const above: Array<Way> = []
    if (undo === "renamed") {
      for (let folder = dirname(path); under(base, folder) && folder !== base; folder = dirname(folder)) {
        if (!folders.has(folder)) folders.set(folder, holding(folder))
        above.push(folders.get(folder)!)
      }
    }
    return { path, base, undo, above, before, inside, mounted, imported }
  }
  const own = keys.flatMap((key) => Protected.LOCATION_ENTRIES.map((name) => join(key, name)))
  const under = (root: string, path: string) => path === root || path.startsWith(root + sep)
  const temporary = realOf(tmpdir())
  const granted = [...new Set(writable.map(realOf))]
  // The repositories the command may write besides the Location's own (and one holding it): kept in a folder of the
  // Location (a clone, not a submodule), at or in a folder a person granted, or holding one. The user's git runs
  // their hooks and config outside any sandbox: they are guarded as the Location's repository is. The temp
  // directory, granted to every command, is not searched (docs/shell.md, known limits).
  const grantedRoots = [...new Set(people.map(realOf))].filter(
    (root) => root !== temporary && !keys.some((key) => under(key, root)),
  )
  const writableHere = (path: string) =>
    keys.some((key) => under(key, path)) || granted.some((root) => under(root, path)) || under(temporary, path)
  /**
   * Where a link a command put on the way to a place core loads may lead for what it reaches to be undone there: a
   * place the command could write, but none of core's own configuration (read-only to it: what is there is the
   * user's, `ln -s tools/sub lib2` for a missing `lib2/helper.ts`).
   */
  const linkedInto = (real: string) => writableHere(real) && !own.some((entry) => under(entry, real))
  // Not the Location's repository's own worktrees and submodules (guarded with it, see `unmade` for its gitlinks).
  const links = new Set(keys.flatMap(Git.gitlinkEntries))
  // Looked up once for the whole of `begin` (`gits` below reads them too).
  const repositoryOfKey = new Map(keys.map((key) => [key, Git.repositoryOf(key)] as const))
  const commons = keys.flatMap((key) => {
    const repository = repositoryOfKey.get(key)
    return repository === undefined ? [] : [repository.commonDir]
  })
  const searched = [...keys, ...grantedRoots]
  // What the guards of commands still running found: in this process, and in other core processes (their records,
  // where `records` names core's directory of them).
  const read = records === undefined ? undefined : recordsIn(records)
  const runningElsewhere = read === undefined ? [] : read.running.map(({ record }) => record)
  // A command that ended with the search after it unfinished, in a folder this one searches: what it made there is
  // unknown until a person has looked. And a search that stops at its bound now cannot say which repositories this
  // command may write. Either way it does not start (fail closed: a command can fill a folder past the bound).
  const unfinished = [...(read?.dead ?? []), ...uncheckedInProcess()].filter(
    (dead) => dead.unchecked !== undefined && searched.some((root) => dead.changed.some((path) => alongside(path, root))),
  )
  const walked = unfinished.length > 0 ? undefined : Repositories.under(searched)
  if (walked === undefined || walked.partial) {
    leave()
    const nothing: Undone = { paths: [], keptIn: undefined }
    const refused =
      walked === undefined
        ? uncheckedMessage(keys[0]!, unfinished)
        : unsearchedMessage(searched, { at: walked.stoppedAt, by: walked.stoppedBy ?? "bound", ...(walked.code === undefined ? {} : { code: walked.code }) })
    return { readOnly: [], refused, refusedBy: "unsearched", finish: () => nothing }
  }
  const otherSearches = [...searches, ...runningElsewhere.flatMap((record) => (record.repositories === undefined ? [] : [record.repositories]))]
  const foundBefore = new Set(walked.repositories.filter((repository) => !madeByOther(repository, otherSearches)))
  const search: Search = { roots: searched, found: [...foundBefore] }
  const before = foundBeforeOf(foundBefore, commons)
  // A worktree's or submodule's checkout of a repository found (its `.git` file pointing into that repository's git
  // directory, guarded with it): its `.git` file is put back as it was when the command ends, not held read-only
  // (`git worktree remove` deletes it with its folder).
  const pointers: Array<Protected.Code> = []
  const nested = [...new Set([...grantedRoots, ...foundBefore])].filter((repository) => {
    const entry = join(repository, ".git")
    if (keys.includes(repository) || links.has(entry)) return false
    if (lstat(entry)?.isFile() !== true) return true
    const gitDir = Git.gitDirOf(entry)
    if (gitDir === undefined || !before.commons.some((common) => under(common, realOf(gitDir)))) return true
    pointers.push({ path: entry, what: `${entry}, which tells git where its repository is`, identity: undefined, kind: "git", restored: true })
    // And where its repository's config sends git from this work tree: a relative `core.hooksPath` is this one's.
    for (const place of Git.pointedFrom(repository)) {
      if (!before.commons.some((common) => under(common, realOf(place.path)))) pointers.push({ ...place, identity: undefined, kind: "git", restored: true })
    }
    return false
  })
  const code = Protected.code(keys, home)
  /** The places of the Locations' repositories and imports (the others' are added to them once). */
  const ownPlaces = new Set(code.map((place) => place.path))
  const nestedPlaces = [
    ...new Map(
      nested
        .flatMap(Git.places)
        // A place that is a link (`.git/hooks` -> `../githooks`): where it leads is noted too, where writable.
        .flatMap((place) => (lstat(place.path)?.isSymbolicLink() === true ? [place, { ...place, path: realOf(place.path) }] : [place]))
        .filter((place) => !ownPlaces.has(place.path) && writableHere(place.path))
        // Not held read-only (a command may remove the whole repository, `rm -rf vendor/x`): what the command
        // changed of them is put back, or taken out, when it ends.
        .map((place) => [place.path, { ...place, identity: undefined, kind: "git" as const, restored: true as const }] as const),
    ).values(),
  ]
  const entries: Array<Entry> = [
    // A nested entry (.claude/skills) is a mount that moves with a folder above it renamed: checked as code
    // elsewhere in the Location is, by the folders above it.
    ...keys.flatMap((key) =>
      Protected.LOCATION_ENTRIES.map((name) =>
        noted(join(key, name), key, name.includes("/") ? "renamed" : "fixed", name === "core.json"),
      ),
    ),
    // Inside an entry already mounted, a path needs no mount of its own. Outside the Locations, the places granted
    // to the command and the temp directory (where a command may rename a folder above it), a path is mounted and
    // no more: what changes there is a person's.
    ...[...code, ...nestedPlaces, ...pointers.filter((place) => !ownPlaces.has(place.path))]
      .filter((place) => !own.some((entry) => under(entry, place.path)))
      .flatMap((place) => {
        const base =
          keys.find((key) => under(key, place.path)) ??
          granted.find((root) => under(root, place.path) && root !== place.path) ??
          (under(temporary, place.path) ? temporary : undefined)
        // Git's files are put back (a repository without its config breaks); an imported module only where no
        // mount keeps it read-only.
        const keep = unmounted || place.kind === "git"
        // A place put back rather than mounted (a worktree's commondir): where the command cannot write, nothing.
        if (place.restored === true) return base === undefined ? [] : [noted(place.path, base, "renamed", true, false)]
        if (base !== undefined) return [noted(place.path, base, "renamed", keep, true, place.kind === "import")]
        return place.identity === undefined ? [] : [noted(place.path, sep, "never", false)]
      }),
  ]
  const spelling = spellingFolders(entries)
  const ways = keys.map((key) => ({ key, way: wayTo(key) }))
  // The .git of a repository holding a Location (a folder of it), where a command may rename it away and put
  // another (or a .git file naming a git directory of its own) in its place: a granted folder, the temp directory.
  // The Location's own .git is checked with what it holds (`unmade`); this one is held as the Location's folders are.
  // So are the folders of its worktrees' git directories (`.git/worktrees/<name>`, and the folder of them) where the
  // command may write (in a Location too): one renamed away and replaced by a link to a folder of the command's
  // would have git in that worktree read the command's config, through a commondir left as it was. `made`: those
  // worktree folders, which git itself removes (`git worktree remove`) and makes again in their place.
  const made = new Set<string>()
  /** The `.git` of the other repositories: one that cannot be put back (removed) is left to `madeDeeper`. */
  const nestedGits = new Set<string>()
  // Each held once: Locations of one repository name its worktrees' folders each (a directory held twice and
  // looked at once would stay open for good).
  const gitPaths = new Set([
    ...keys.flatMap((key) => {
      const repository = repositoryOfKey.get(key)
      if (repository === undefined) return []
      const entry = repository.entry
      const own =
        entry === undefined || keys.some((each) => under(each, entry)) || !(granted.some((root) => under(root, entry)) || under(temporary, entry))
          ? []
          : [entry]
      const folder = join(repository.commonDir, "worktrees")
      const worktrees = [folder, ...Git.worktreesOf(repository.commonDir)]
        .filter((path) => writableHere(path) && lstat(path)?.isDirectory() === true)
        .map((path) => (made.add(path), path))
      return [...own, ...worktrees]
    }),
    // The `.git` of each other repository, where the command may rename it away and put its own in its place.
    ...nested
      .map((repository) => join(repository, ".git"))
      .filter((entry) => writableHere(entry) && lstat(entry) !== undefined)
      .map((entry) => (nestedGits.add(entry), entry)),
  ])
  const gits = [...gitPaths].map(holding)
  // A `.git` made by the command in a folder above a Location (`git init ..`, `git init /tmp`) would be the user's
  // git's next repository there, its config and hooks the command's: where none was before, one found after goes.
  const aboveFound = [...new Set(ways.flatMap(({ way }) => way.slice(1).map((folder) => join(folder.path, ".git"))))].map(
    (path) => [path, look(path)] as const,
  )
  const above = aboveFound.filter(([, before]) => before === undefined).map(([path]) => path)
  // Whether each Location had a `.git` of its own, or was a bare repository, before the command (see `unmade`).
  const repositories = [...keys, ...grantedRoots].map((key) => ({
    key,
    entry: lstat(join(key, ".git")),
    bare: Git.isGitDirectory(key),
  }))
  // The folders this guard notes, by who they are: one found at another path once the command has ended was moved
  // there (by a command still running beside it), and is not acted on as what stands at that path (see `folderOf`).
  const known = new Map<string, string>()
  /**
   * Of those, the Locations' own (their repositories' and core's configuration's, with the folders above them): never
   * what a command made (`madeDeeper`, which takes from repositories moved as from made ones, other repositories'
   * places included).
   */
  const knownOwn = new Map<string, string>()
  const know = (path: string, before: Before | undefined, own: boolean) => {
    if (before?.kind !== Number(DIRECTORY)) return
    known.set(`${before.dev}:${before.ino}`, path)
    if (own) knownOwn.set(`${before.dev}:${before.ino}`, path)
  }
  /** The Locations' own git directories, by who they are: never a repository a command made (see `madeDeeper`). */
  const ownGitDirs = new Set<string>()
  const pinned = new Set<string>()
  for (const repository of repositoryOfKey.values()) {
    if (repository === undefined) continue
    for (const dir of new Set([repository.gitDir, repository.commonDir])) {
      const before = look(dir)
      if (before?.kind === Number(DIRECTORY) && before.link === undefined) pinned.add(dir)
      know(dir, before, true)
      const identity = identityOf(dir)
      if (identity !== undefined) ownGitDirs.add(identity)
    }
  }
  // The folders holding the Location's nested entries (`.claude` of `.claude/skills`): bound onto themselves too, or
  // a command renames one away, and with it the read-only mount beneath, leaving no skill folder where core looks.
  for (const key of keys) {
    for (const name of Protected.LOCATION_ENTRIES) {
      if (!name.includes("/")) continue
      const folder = join(key, name.slice(0, name.indexOf("/")))
      const before = look(folder)
      if (before?.kind === Number(DIRECTORY) && before.link === undefined) pinned.add(folder)
    }
  }
  // The Locations themselves, where one lies in a place the command may write (`sub`, served on its own, of a
  // Location served too; any under a writable temporary folder): bound onto themselves, with the folders between
  // (Starter `pinsOf`). A command could otherwise rename one away and leave a link to a folder of its own in its
  // place, and a request naming that Location meanwhile would load the folder the link leads to, its tools run in core.
  for (const key of keys) {
    if (!writable.some((place) => key !== place && Landlock.within(place, key))) continue
    const before = look(key)
    if (before?.kind === Number(DIRECTORY) && before.link === undefined) pinned.add(key)
  }
  for (const { way } of ways) for (const folder of way) know(folder.path, folder.before, true)
  for (const git of gits) know(git.path, git.before, !nestedGits.has(git.path))
  for (const entry of entries) {
    const own = ownPlaces.has(entry.path) || Protected.LOCATION_ENTRIES.some((name) => keys.some((key) => join(key, name) === entry.path))
    for (const folder of entry.above) know(folder.path, folder.before, own)
    know(entry.path, entry.before, own)
    know(dirname(entry.path), look(dirname(entry.path)), own)
  }
  // What this guard found, against what the earliest command still running found at the same paths: in this
  // process, and in other core processes (their records, where `records` names core's directory of them).
  const found = [
    ...new Map<string, Noted | null>([
      ...ways.flatMap(({ way }) => way.map((folder) => [folder.path, notedOf(folder.before)] as const)),
      ...gits.map((git) => [git.path, notedOf(git.before)] as const),
      ...entries.map((entry) => [entry.path, notedOf(entry.before)] as const),
      ...aboveFound.map(([path, before]) => [path, notedOf(before)] as const),
      // Each Location's own `.git`: one another command moved away (or made) as this one is guarded would be taken
      // for none there before (or the user's), and its hooks and config taken out as a command's once this one ends.
      ...keys.map((key) => [join(key, ".git"), notedOf(look(join(key, ".git")))] as const),
    ]),
  ]
  const elsewhere = runningElsewhere.map((record) => new Map(record.found))
  const clashes = ([path, noted]: readonly [string, Noted | null]) => {
    const base = baselines.get(path)
    if (base !== undefined && !sameAs(base.before, noted)) return true
    return elsewhere.some((other) => other.has(path) && !sameAs(other.get(path)!, noted))
  }
  if (found.some(clashes)) {
    for (const { way } of ways) for (const folder of way) if (folder.fd !== undefined) closeSync(folder.fd)
    for (const folder of folders.values()) if (folder.fd !== undefined) closeSync(folder.fd)
    for (const git of gits) if (git.fd !== undefined) closeSync(git.fd)
    leave()
    const nothing: Undone = { paths: [], keptIn: undefined }
    return { readOnly: [], refused: MOVED, refusedBy: "moved", finish: () => nothing }
  }
  for (const [path, noted] of found) {
    const base = baselines.get(path)
    if (base !== undefined) base.count++
    else baselines.set(path, { before: noted, count: 1 })
  }
  searches.add(search)
  // Noted for other cores alone (no clash with a command running beside it): whether each granted folder was a
  // repository, its `.git`, and a `HEAD` at each root. What a command made of them `unmade` takes out when it ends; should this
  // core die first, the next one finds them changed (`stale`).
  const inFound = new Set(found.map(([path]) => path))
  const repositoryFound = [...keys, ...grantedRoots]
    .flatMap((key) => [join(key, ".git"), join(key, "HEAD")])
    .filter((path) => !inFound.has(path))
    .map((path) => [path, notedOf(look(path))] as const)
  const recorded = records === undefined ? undefined : writeRecord(
          records,
          [...found, ...repositoryFound],
          search,
        )
  let removed: Undone | undefined
  const keptIn = keeping === undefined ? undefined : join(keeping, `${new Date().toISOString()}-${crypto.randomUUID().slice(0, 8)}`)
  /** Where what the command left at `path` (of the entry whose base is `base`) is kept. */
  const keptAt = (base: string, path: string) => {
    if (keptIn === undefined) return undefined
    const target = join(keptIn, relative(base, path))
    const own = () => join(keptIn, crypto.randomUUID().slice(0, 8), relative(base, path))
    // Never onto what was set aside before it under the same name (two folders `lib` put back), nor through it: a
    // link the command had put where a folder stood, set aside under the folder's name, would lead what is kept
    // below that name out of core's data directory (onto what the link names). It is kept in a folder of its own.
    if (lstat(target) !== undefined) return own()
    for (let folder = dirname(target); folder.length > keptIn.length; folder = dirname(folder)) {
      const stats = lstat(folder)
      if (stats !== undefined && !stats.isDirectory()) return own()
    }
    return target
  }
  const finish = (kept: boolean): Undone => {
    if (removed !== undefined) return removed
    const undone: Array<string> = []
    // First the Locations where they were: what is checked below is looked at by path. One that could not be put
    // back has its entries checked as if no mount had kept them: what stands at their paths now is not theirs.
    const moved = new Set<string>()
    /** Sets aside what stands at `path` (`at`: the same through its folder held open), kept by its name beside the others. */
    const aside = (path: string, at?: string) =>
      at === undefined ? setAsideIn(path, keptAt(dirname(path), path), known) : asideChecked(at, path, keptAt(dirname(path), path), known)
    for (const { key, way } of ways) {
      const back = putBack(way, aside, known)
      undone.push(...back.moved)
      if (!back.intact) moved.add(key)
      for (const folder of way) if (folder.fd !== undefined) closeSync(folder.fd)
    }
    // A .git the command made above a Location goes.
    for (const path of above) if (aside(path)) undone.push(path)
    // A .git that cannot be put back goes, whatever stands in its place: git then finds no repository there rather
    // than run what the command planted (the repository it moved away is kept where it is).
    for (const git of gits) {
      const back = putBack([git], aside, known)
      undone.push(...back.moved)
      // A worktree's folder git removed (its handle leads nowhere), with a folder git made since in its place (a
      // worktree added), stays: what the folder holds is checked as git's places are. A link there never does.
      const standing = lstat(git.path)
      const remade = made.has(git.path) && git.fd !== undefined && whereNow(git.fd) === undefined && standing?.isDirectory() === true
      if (!back.intact && standing !== undefined && !remade && !nestedGits.has(git.path) && aside(git.path)) undone.push(git.path)
      if (git.fd !== undefined) closeSync(git.fd)
    }
    // A folder above a file a tool imports that the command renamed away (`mv lib lib-old`, a `lib` of its own made
    // in its place) is put back, and what stood in its place set aside: left where the command moved it, the
    // person's code is no longer where the tools import it from, and what the command planted beside it would be
    // loaded once the person moved the folder back. One that cannot be put back has its entries checked below as they
    // are. (A repository the command moved stays where it was moved: only what git runs of it is undone.)
    // Not into a Location that could not be put back itself: what stands at its path is not the person's. Each way
    // once (the files of one folder share it, from their nearest folder up).
    const tried = new Set<string>()
    for (const entry of entries) {
      const nearest = entry.above[0]?.path
      if (!entry.imported || entry.undo !== "renamed" || moved.has(entry.base) || nearest === undefined || tried.has(nearest)) continue
      tried.add(nearest)
      undone.push(...putBack(entry.above, aside, known).moved)
    }
    for (const entry of entries) {
      const before = entry.before
      const mounted = kept && entry.mounted && !moved.has(entry.base)
      // A mount point the command could neither change nor replace (a symbolic link it could replace).
      if (entry.undo === "never") continue
      if (mounted && entry.undo === "fixed" && before !== undefined && before.link === undefined && !before.linked) continue
      // Mounted, code elsewhere that existed changes only by a folder above it renamed (a person's change stays).
      if (mounted && entry.undo === "renamed" && before !== undefined && !before.linked && entry.above.every((folder) => unchanged(folder.before, look(folder.path)))) continue
      // Through its folder held open (see `inHeld`). A place no mount held (another repository's), in its folder as
      // it was before the command, wherever that is now; else where it is named, a place whose folder is no longer so
      // (a link on the way, another folder core guards moved there) not touched: its repository, moved, is one the
      // command made (`madeDeeper`).
      // Where it is named, what core would load through a link on the way is undone where the link leads, in a place
      // the command could write (the Location's own entries, and code they import); another repository's, never.
      const folder = entry.mounted ? folderOf(entry.path, known, linkedInto) : (anchored(entry) ?? folderOf(entry.path, known))
      if (folder === undefined) continue
      try {
        // Named where they are now (the command may have moved the repository); the Location's, as core loads them.
        const where = entry.mounted ? undefined : whereNow(folder)?.toString()
        const shown = (path: string) => (where === undefined ? path : join(where, relative(dirname(entry.path), path)))
        undone.push(...undoEntry(entry, folder, keptAt, known).map(shown))
      } finally {
        closeSync(folder)
      }
    }
    for (const folder of folders.values()) if (folder.fd !== undefined) closeSync(folder.fd)
    undone.push(...respelled(entries, spelling, keptAt, known, linkedInto))
    for (const repository of repositories) undone.push(...unmade(repository, keptAt, known))
    const deeper = madeDeeper(searched, before, keptAt, ownGitDirs, knownOwn)
    undone.push(...deeper.taken)
    searches.delete(search)
    for (const [path] of found) {
      const base = baselines.get(path)
      if (base !== undefined && --base.count <= 0) baselines.delete(path)
    }
    // The command left too much, or a folder shut, to search for the repositories it made: its record stands,
    // marked, so that no core loads these folders or runs a command in them until a person has looked (where no
    // record can be written, this process alone refuses them until it stops).
    const unsearched = deeper.unsearched
    let uncheckedIn: string | undefined
    if (unsearched !== undefined) {
      uncheckedIn = records === undefined ? undefined : writeRecord(records, found, search, { roots: searched, ...unsearched }, recorded)
      if (uncheckedIn === undefined) for (const root of searched) uncheckedHere.set(root, unsearched)
    } else if (recorded !== undefined) {
      rmSync(recorded, { force: true })
      ownRunning.delete(recorded)
    }
    // The Locations first served while it ran, last: what it changed of their configuration since.
    guarding.delete(self)
    for (const { guarded, ended } of adopted.splice(0)) {
      undone.push(...guarded.finish(false).paths)
      ended()
    }
    removed = {
      paths: undone,
      keptIn: undone.length === 0 ? undefined : keptIn,
      ...(unsearched === undefined
        ? {}
        : { unchecked: uncheckedMessage(keys[0]!, [{ record: uncheckedIn ?? "", pid: process.pid, found: searched, changed: searched, unchecked: unsearched }]) }),
    }
    leave()
    return removed
  }
  /** The guards of the Locations first served while it runs (see `adopt`), ended with the command's own. */
  const adopted: Array<{ readonly guarded: Guarded; readonly ended: () => void }> = []
  const adoptedKeys = new Set<string>()
  const self: Guarding = {
    reaches: (path) => !keys.includes(path) && !adoptedKeys.has(path) && writableHere(path),
    adopt: (location) => {
      adopting = true
      let guarded: Guarded
      try {
        // What the command may write is where what the Location's tools import may be changed (and undone).
        guarded = begin(location, keptIn, [], true, [...keys, ...granted], home, records, [])
      } finally {
        adopting = false
      }
      if (guarded.refused !== undefined) return { refused: guarded.refused }
      adoptedKeys.add(location)
      return {
        ended: new Promise<void>((ended) => {
          adopted.push({ guarded, ended })
        }),
      }
    },
  }
  if (!adopting) guarding.add(self)
  const mountedEntries = entries.filter((entry) => entry.before !== undefined && entry.mounted)
  return {
    readOnly: mountedEntries.map((entry) => entry.path),
    readOnlyIds: mountedEntries.map((entry) => `${entry.before!.dev}:${entry.before!.ino}`),
    pinned: [...pinned],
    finish,
  }
}

/** Longer than any file system's step of time stamps (FAT's is 2 s): a change after a stamp this old shows. */
const STAMP_STEP_NS = 2_000_000_000n

/**
 * Who a folder is and when its entries last changed (a change time no command can set back); none when missing,
 * or (`settled`) when it changed so recently that a change in the same step of its clock would not show.
 */
const folderStamp = (folder: string, settled = false): string | undefined => {
  try {
    const stats = lstatSync(folder, { bigint: true, throwIfNoEntry: false })
    if (stats === undefined) return undefined
    if (settled && BigInt(Date.now()) * 1_000_000n - stats.ctimeNs < STAMP_STEP_NS) return undefined
    return `${stats.dev}:${stats.ino}:${stats.mtimeNs}:${stats.ctimeNs}`
  } catch {
    return undefined
  }
}

/** The entries whose other spellings are looked for once the command ends (`respelled`), by folder, as it was. */
const spellingFolders = (entries: ReadonlyArray<Entry>): ReadonlyMap<string, string | undefined> => {
  const folders = new Set(entries.filter(spelledAlike).map((entry) => dirname(entry.path)))
  return new Map([...folders].map((folder) => [folder, folderStamp(folder, true)] as const))
}

/** Whether another spelling of the entry's name is taken out when the command made one (`respelled`). */
const spelledAlike = (entry: Entry): boolean => entry.imported && entry.before === undefined && entry.undo !== "never"

/**
 * What the command made under another spelling of a missing file a tool imports (`lib/FMT.ts`, `lib/Fmt.ts` for
 * `lib/fmt.ts`): Bun's resolver loads it in the file's place, so it is taken out as the file itself would be. An
 * entry's own path is its own (checked as an entry); the spelling loaded that existed before is an entry too, since
 * the closure follows it. Only a folder changed since the command started (`folders`, as they were then: made,
 * replaced, an entry added, or changed just before) is listed, once: a large temp directory holding a Location is
 * not listed for every command.
 */
const respelled = (
  entries: ReadonlyArray<Entry>,
  folders: ReadonlyMap<string, string | undefined>,
  keptAt: (base: string, path: string) => string | undefined,
  known: Known,
  through: (real: string) => boolean,
): Array<string> => {
  // The folders there now (a missing one holds nothing) and changed since the command started, each looked at once.
  const changed = new Set(
    [...folders]
      .filter(([folder, was]) => {
        const now = folderStamp(folder)
        return now !== undefined && now !== was
      })
      .map(([folder]) => folder),
  )
  if (changed.size === 0) return []
  const own = new Set(entries.map((entry) => entry.path))
  const listed = new Map<string, Map<string, Array<string>>>()
  const taken: Array<string> = []
  for (const entry of entries) {
    if (!spelledAlike(entry)) continue
    const folder = dirname(entry.path)
    if (!changed.has(folder)) continue
    let names = listed.get(folder)
    if (names === undefined) {
      names = new Map()
      let found: Array<string> = []
      try {
        found = readdirSync(folder)
      } catch {
        // no folder there (or none core can list, where the resolver cannot find another spelling either)
      }
      for (const name of found) {
        const key = name.toLowerCase()
        names.set(key, [...(names.get(key) ?? []), name])
      }
      listed.set(folder, names)
    }
    const key = basename(entry.path).toLowerCase()
    for (const name of names.get(key) ?? []) {
      const path = join(folder, name)
      if (own.has(path)) continue
      // Through its folder held open: where a link on the way leads, in a place the command could write (see `folderOf`).
      if (setAsideIn(path, keptAt(entry.base, path), known, through)) taken.push(path)
    }
    // Taken once, whichever entry of the folder found it.
    names.delete(key)
  }
  return taken
}

/** Copies the regular file at `path` to a new file in its place (its other names keep the old one); whether it could. */
const ownInode = (path: string): boolean => {
  const fresh = `${path}.core-${crypto.randomUUID().slice(0, 8)}`
  try {
    const stats = lstat(path)
    const content = stats?.isFile() === true ? fileContent(path, stats) : undefined
    if (stats === undefined || content === undefined) return false
    writeFileSync(fresh, content, { mode: stats.mode & 0o7777, flag: "wx" })
    renameSync(fresh, path)
    return true
  } catch {
    rmSync(fresh, { force: true })
    return false
  }
}

/**
 * Whether the repository found at `place` is still there with the git directory `identity`, by no link the command
 * may have put on the way: its folder where it was, its `.git` (or itself, bare) that git directory.
 */
const stillAt = (place: string, identity: string): boolean => {
  if (realOf(place) !== place) return false
  const entry = join(place, ".git")
  const stats = lstat(entry)
  const gitDir = stats === undefined ? place : stats.isDirectory() ? entry : stats.isFile() ? Git.gitDirOf(entry) : undefined
  return gitDir !== undefined && identityOf(gitDir) === identity
}

/** The repositories found before a command, to tell one it made from one it moved (a folder above renamed). */
interface FoundBefore {
  readonly repositories: ReadonlySet<string>
  /** Their git directories' device and inode, and where each repository was. */
  readonly identities: ReadonlyMap<string, ReadonlySet<string>>
  /** The common directories of theirs and the Locations' repositories (where their worktrees and modules are). */
  readonly commons: ReadonlyArray<string>
  /** Those with a `.git` that git would also take for a git directory themselves (a `HEAD` and an `objects` in them). */
  readonly bare: ReadonlySet<string>
}

const identityOf = (path: string): string | undefined => {
  try {
    const stats = statSync(path)
    return `${stats.dev}:${stats.ino}`
  } catch {
    return undefined
  }
}

const foundBeforeOf = (repositories: ReadonlySet<string>, commons: ReadonlyArray<string>): FoundBefore => {
  const found = [...repositories].map((repository) => [repository, Git.repositoryOf(repository)] as const)
  // (One git directory may be found at two places: a worktree's checkout and its folder in `.git/worktrees`.)
  const identities = new Map<string, Set<string>>()
  for (const [repository, one] of found) {
    const identity = one === undefined ? undefined : identityOf(one.gitDir)
    if (identity === undefined) continue
    const places = identities.get(identity) ?? new Set<string>()
    identities.set(identity, places.add(repository))
  }
  return {
    repositories,
    identities,
    commons: [...new Set([...commons, ...found.flatMap(([, one]) => (one === undefined ? [] : [one.commonDir]))].map(realOf))],
    bare: new Set([...repositories].filter((repository) => lstat(join(repository, ".git")) !== undefined && Git.isGitDirectory(repository))),
  }
}

/**
 * What git would run of each repository the command made deeper in a Location or a granted folder (`git init sub`,
 * `git clone URL vendor/x`, `git init --bare fixture.git`, one added at a gitlink of a repository found there, in
 * `node_modules` too), taken out once it has ended, as of one made at the Location (`unmade`, which also sees to the
 * roots themselves and the Location's gitlinks): its hooks and info/attributes, its config and config.worktree where
 * they set a key that runs code (a clone keeps its remote, a repository its format), a commondir (of a worktree of a
 * repository found before: one naming another), or its `.git` link, or `.git` file pointing at no repository found
 * before. Its objects, refs, index and work stay. A repository moved here (a folder above it renamed) is the same one;
 * a Location's own git directory moved here is not taken for one made. Everything is taken through its folder held
 * open (see `inHeld`).
 */
const madeDeeper = (
  roots: ReadonlyArray<string>,
  before: FoundBefore,
  keptAt: (base: string, path: string) => string | undefined,
  ownGitDirs: ReadonlySet<string>,
  known: Known,
): { readonly taken: Array<string>; readonly unsearched: Unsearched | undefined } => {
  const taken: Array<string> = []
  const inside = (root: string, path: string) => path === root || path.startsWith(root + sep)
  const now = Repositories.under(roots)
  const gitlinked = [...roots, ...before.repositories].flatMap(Git.gitlinkEntries).map(dirname)
  // Where the search stopped at a bound, the repositories it found are still stripped; the rest are unknown.
  const candidates = [...new Set([...now.repositories, ...gitlinked])].flatMap((repository) => {
    const base = roots.find((root) => repository !== root && inside(root, repository))
    // Reached through a link (a gitlink `self` -> `.`): not a place of its own.
    if (base === undefined || realOf(repository) !== repository) return []
    const entry = join(repository, ".git")
    const stats = lstat(entry)
    const pointed = stats === undefined ? repository : stats.isDirectory() ? entry : stats.isFile() ? Git.gitDirOf(entry) : undefined
    const gitDir = pointed === undefined ? undefined : realOf(pointed)
    // One found before where it was is the same repository. One whose git directory the command removed and made
    // again is not; nor one it moved (its places were noted where it was, and no mount held them).
    const identity = gitDir === undefined ? undefined : identityOf(gitDir)
    // A Location's own git directory moved here (by a command still running; `unmade` moves it back), not pointed
    // at: the user's, whose hooks and config were read-only to every command.
    if (identity !== undefined && ownGitDirs.has(identity) && stats?.isFile() !== true) return []
    const was = identity === undefined ? undefined : before.identities.get(identity)
    if (was?.has(repository) === true) return []
    if (gitDir === undefined && before.repositories.has(repository)) return []
    // A git directory found before and still where it was, reached from here by a `.git` file (another checkout of
    // it): its places are its repository's, never taken; only what this work tree's config sends git to is.
    const alias = was !== undefined && [...was].some((place) => stillAt(place, identity!))
    return [{ repository, base, entry, stats, gitDir, alias }]
  })
  // A folder with a `.git` made a git directory itself (a `HEAD` and an `objects` put in it): git takes it for its
  // repository wherever its `.git` is not one, which a command can also make so (a `.git/HEAD` moved away). Its
  // `HEAD` goes, so that git never does; one that was so before the command is left as it was.
  for (const repository of new Set([...now.repositories, ...gitlinked])) {
    const base = roots.find((root) => repository !== root && inside(root, repository))
    if (base === undefined || realOf(repository) !== repository || before.bare.has(repository)) continue
    const head = join(repository, "HEAD")
    if (lstat(join(repository, ".git")) === undefined || lstat(head) === undefined || !Git.isGitDirectory(repository)) continue
    if (setAsideIn(head, keptAt(base, head), known)) taken.push(head)
  }
  // Where git keeps other git directories: the repositories' found before, and those of the ones made.
  const commons = [...before.commons, ...candidates.flatMap(({ stats, gitDir }) => (stats?.isDirectory() === true && gitDir !== undefined ? [gitDir] : []))]
  for (const { base, entry, stats, gitDir, alias } of candidates) {
    /** Only what really is in a folder searched: one on the way may be a link the command made to a place outside. */
    const searchedFolder = (real: string) => roots.some((root) => inside(root, real))
    const take = (path: string) => {
      if (setAsideIn(path, keptAt(base, path), known, searchedFolder)) taken.push(path)
    }
    const common = gitDir === undefined ? undefined : commons.find((each) => inside(each, gitDir))
    // A `.git` link, or a `.git` file naming no git directory, or one outside every repository found or made (a
    // link on its way leading out of the folders searched counts as outside): the whole pointer goes.
    if (stats !== undefined && !stats.isDirectory() && (!stats.isFile() || gitDir === undefined || common === undefined)) {
      take(entry)
      continue
    }
    if (gitDir === undefined || !roots.some((root) => inside(root, gitDir))) {
      if (stats !== undefined) take(entry)
      continue
    }
    // What its own config names (not the user's, whose hooks and includes are the user's), and the folder in its
    // work tree that a relative `core.hooksPath` of the user's names.
    const pointedHere = () => {
      const work = dirname(entry)
      const named = [...Git.pointedFrom(work, false).map((place) => place.path), ...Git.userHooksPaths().filter((path) => !isAbsolute(path)).map((path) => join(work, path))]
      for (const path of named) if (inside(work, realOf(path)) && !commons.some((each) => inside(each, realOf(path)))) take(path)
    }
    if (alias) {
      pointedHere()
      continue
    }
    take(join(gitDir, "hooks"))
    take(join(gitDir, "info", "attributes"))
    // A submodule's git directory names its checkout (`core.worktree`): kept where that is the checkout whose `.git`
    // file points back at it (`git clone --recurse-submodules`).
    const checkouts = candidates.filter((each) => each.stats?.isFile() === true && each.gitDir === gitDir).map((each) => realOf(dirname(each.entry)))
    for (const name of ["config", "config.worktree"]) {
      const path = join(gitDir, name)
      // Read, taken and written through its folder held open (see `inHeld`).
      inFolder(
        path,
        (at) => {
          const stats = lstat(at)
          if (stats === undefined) return
          // Read only as the file it is, never through a link (core would read, as root, what it leads to, and
          // write what it keeps of it where the command reads it): anything else goes whole.
          const content = stats.isFile() && stats.size <= MAX_CONTENT_BYTES ? fileContent(at, stats) : undefined
          const text = content === undefined ? undefined : content.toString("utf8")
          // Kept only where core reads the values git does (none read: not kept).
          const worktrees = Git.valuesOf(text ?? "", "core", "worktree")
          const ownWorktree = (key: string) =>
            key === "core.worktree" && worktrees.length > 0 && worktrees.every((value) => checkouts.includes(realOf(resolve(gitDir, value))))
          const harmless = text === undefined ? undefined : Planted.withoutCode(text, ownWorktree)
          const takeAt = () => {
            if (asideChecked(at, path, keptAt(base, path), known)) taken.push(path)
          }
          if (harmless === undefined) takeAt()
          // What runs code goes, the rest (a clone's remote, a repository's format) stays: the file as it was is kept.
          else if (harmless !== text) {
            const mode = (lstat(at)?.mode ?? 0o644) & 0o7777
            takeAt()
            try {
              writeFileSync(at, harmless, { mode, flag: "wx" })
            } catch {
              // something stands there again (a command still running): what git runs of it is its next guard's
            }
          }
          // Kept, it gets an inode of its own: a hard link the command left elsewhere would let the next command write it.
          else if ((lstat(at)?.nlink ?? 1) > 1 && !ownInode(at)) takeAt()
        },
        known,
        searchedFolder,
      )
    }
    // Where its config (or the user's) sends git from its work tree (a relative `core.hooksPath`, `.githooks`).
    if (stats !== undefined) pointedHere()
    // A worktree's commondir names the repository whose hooks and config git uses there: its own, or it goes.
    const commondir = join(gitDir, "commondir")
    if (lstat(commondir) !== undefined) {
      // Read as git reads it (Git.commonOf): a name it would take otherwise than core, or one core cannot read, goes.
      const named = Git.commonOf(gitDir)
      const owner = commons.find((each) => dirname(gitDir) === join(each, "worktrees"))
      if (owner === undefined || named === undefined || named === gitDir || realOf(named) !== owner) take(commondir)
    }
  }
  return {
    taken,
    unsearched: now.partial ? { at: now.stoppedAt, by: now.stoppedBy ?? "bound", ...(now.code === undefined ? {} : { code: now.code }) } : undefined,
  }
}

/**
 * What git would run of a repository the command made at a Location (`git init`, `git clone URL .`, or a script
 * writing one), taken out once it has ended: the user's git (their prompt's `git status`, an editor) runs it next,
 * outside any sandbox, and its remote would give the Location another project's identity, and that project's saved
 * approvals (../store/project). Where the Location had no `.git`: its hooks, config, config.worktree,
 * info/attributes and commondir (the objects, refs, index and work stay the command's), or a `.git` file (which
 * points git at a git directory elsewhere, which the command could fill). Where the Location was no bare
 * repository and the command made it one (HEAD, objects/, config at its root): its HEAD, without which git takes
 * it for none. Kept for a person, as the other entries are.
 */
const unmade = (
  repository: {
    readonly key: string
    readonly entry: Stats | undefined
    readonly bare: boolean
  },
  keptAt: (base: string, path: string) => string | undefined,
  known: Known,
): Array<string> => {
  const { key } = repository
  const taken: Array<string> = []
  /**
   * Only what really is in the Location: a folder on the way may be a link the command made to a place outside
   * (`.git/info` -> ~/.config/git), whose files are the user's, not the command's. Through the folder held open.
   */
  const inLocation = (real: string) => real === key || real.startsWith(key + sep)
  const take = (path: string) => {
    if (setAsideIn(path, keptAt(key, path), known, inLocation)) taken.push(path)
  }
  const entry = join(key, ".git")
  const was = repository.entry
  if (was === undefined) {
    const now = lstat(entry)
    if (now?.isDirectory() === true) for (const place of Git.codePlacesIn(entry)) take(place)
    else if (now !== undefined) take(entry)
  } else {
    const now = lstat(entry)
    // Who it is: device, inode, kind and birth (an inode the command freed may be reused at once, as a copy's).
    const same =
      now !== undefined && now.dev === was.dev && now.ino === was.ino && (now.mode & 0o170000) === (was.mode & 0o170000) && now.birthtimeMs === was.birthtimeMs
    if (!same) {
      // The repository's `.git` was moved, removed or replaced: only its places inside were read-only, not `.git`
      // itself. What stands in its place now (a `.git` file pointing at a git directory the command filled) goes,
      // and the repository is moved back where it was, when it is still in the Location.
      if (now !== undefined) take(entry)
      const moved = findDirectory(key, was)
      // Moved back through both folders held open, it checked to be the repository's: a folder on its way swapped
      // for a link would have another folder of its name moved into the Location instead.
      const back =
        moved !== undefined &&
        inFolder(
          moved,
          (from) => {
            const stats = lstat(from)
            if (stats?.dev !== was.dev || stats.ino !== was.ino || stats.birthtimeMs !== was.birthtimeMs) return false
            return inFolder(
              entry,
              (to) => {
                if (lstat(to) !== undefined) return false
                try {
                  renameSync(from, to)
                  return true
                } catch {
                  return false // left where the command put it
                }
              },
              known,
            )
          },
          // Not the folders this guard notes: the one holding it may be such a folder, moved (`mv vendor/x vendor/x2`
          // then `.git` into it); the repository itself is checked by who it is.
          new Map(),
          inLocation,
        ) === true
      if (back && !taken.includes(entry)) taken.push(entry)
    }
  }
  // A Location (or granted folder) made a git directory: git takes it for one where it has no `.git`, and where its
  // `.git` is not one (a command can make it so: its `HEAD` moved away). Its `HEAD` goes, so that git never does.
  if (!repository.bare && Git.isGitDirectory(key)) take(join(key, "HEAD"))
  return taken
}

/** The most entries looked at to find a repository a command moved elsewhere in its Location. */
const MAX_SEARCHED = 100_000

/** Where under `root` the directory `was` is now (the same device and inode), looking at MAX_SEARCHED entries. */
const findDirectory = (root: string, was: Stats): string | undefined => {
  const queue = [root]
  let left = MAX_SEARCHED
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    let entries
    try {
      entries = readdirSync(next, { withFileTypes: true })
    } catch {
      continue
    }
    for (const found of entries) {
      if (--left < 0) return undefined
      if (!found.isDirectory()) continue
      const path = join(next, found.name)
      const stats = lstat(path)
      if (stats?.dev === was.dev && stats.ino === was.ino && stats.birthtimeMs === was.birthtimeMs) return path
      queue.push(path)
    }
  }
  return undefined
}

/**
 * The folder of `path` held open to act in (see `inHeld`): no other folder this guard notes (`known`, by who it is)
 * reached there (by a link, or moved there), and either that very folder, no link on the way, or (`through`) one a
 * link on the way leads to where its real path passes `through` (a place a command may write: what core would load
 * at the path is there). Undefined where it is not so.
 */
const folderOf = (path: string, known: Known, through?: (real: string) => boolean): number | undefined => {
  const folder = dirname(path)
  const fd = openFolder(folder)
  if (fd === undefined) return undefined
  try {
    const stats = fstatSync(fd)
    const noted = known.get(`${stats.dev}:${stats.ino}`)
    const real = whereNow(fd)
    const reached = real?.equals(Buffer.from(folder)) === true || (through !== undefined && real !== undefined && through(real.toString()))
    if (reached && (noted === undefined || noted === folder)) return fd
  } catch {
    // gone meanwhile: not taken
  }
  closeSync(fd)
  return undefined
}

/**
 * The folder of `entry` (a place core does not mount: put back, or taken out, once the command has ended) as it was
 * before the command, held open: reached from the nearest folder above it that existed then and is held since,
 * wherever a command moved it (one still running may be swapping it for a link as core looks), each step below that
 * one opened without following a link. Undefined where there is none (no folder above it held, or it was removed).
 */
const anchored = (entry: Entry): number | undefined => {
  const index = entry.above.findIndex((folder) => folder.fd !== undefined && folder.before !== undefined)
  if (index === -1) return undefined
  const held = entry.above[index]!.fd!
  if (whereNow(held) === undefined) return undefined
  return descend(
    held,
    entry.above
      .slice(0, index)
      .reverse()
      .map((folder) => basename(folder.path)),
  )
}

/**
 * Undoes what the command made of `entry` (see `finish`), through its folder held open as `folder`; answers the paths
 * undone.
 */
const undoEntry = (
  entry: Entry,
  folder: number,
  keptAt: (base: string, path: string) => string | undefined,
  known: ReadonlyMap<string, string>,
): Array<string> => {
  const before = entry.before
  const at = inHeld(folder, basename(entry.path))
  const now = look(at, before?.content !== undefined)
  // Another folder this guard notes, moved here by a command still running: not this entry's to undo.
  const noted = now?.kind === Number(DIRECTORY) ? known.get(`${now.dev}:${now.ino}`) : undefined
  if (noted !== undefined && noted !== entry.path) return []
  if (before?.content !== undefined) {
    // Only where no mount kept it read-only can it differ.
    if (now?.content !== undefined && now.content.equals(before.content)) return []
    if (now !== undefined && !asideChecked(at, entry.path, keptAt(entry.base, entry.path), known)) return []
    // Put back where its folder still is (a folder renamed away took the file with it), as a new file only: what a
    // command still running put there meanwhile (a link, another folder) stays as it is, never written through.
    let back = false
    if (fstatSync(folder).nlink > 0) {
      try {
        writeFileSync(at, before.content, { mode: before.mode, flag: "wx" })
        back = true
      } catch {
        // something stands there again: it is what the next command's guard finds
      }
    }
    return back || now !== undefined ? [entry.path] : []
  }
  if (now === undefined) return []
  if (before !== undefined && before.dev === now.dev && before.ino === now.ino && before.kind === now.kind && before.born === now.born) {
    // The same directory (or file): what changed inside it, where it was noted (no mount kept it read-only).
    const changed = entry.inside === undefined ? [] : changedInside(entry, folder, keptAt, known)
    if (changed !== undefined) return changed
    // Too much was added to it to look at it all: the directory goes whole, so none of it is loaded.
  }
  if (!asideChecked(at, entry.path, keptAt(entry.base, entry.path), known)) return []
  if (before?.link !== undefined) {
    try {
      symlinkSync(before.link, at)
    } catch {
      // something stands there again: it is what the next command's guard finds
    }
  }
  return [entry.path]
}

/**
 * Takes out of a protected directory what a command added or changed in it (a directory it added goes whole; a
 * directory whose entries changed stays, its changed entries go), keeping each at `keptAt`; answers their paths,
 * or undefined (taking out nothing) when the directory now holds too much to look at it all. What the command
 * removed cannot be put back: it is gone from where core would load it, which is what matters here. The directory is
 * `entry`'s in the folder held open as `folder`; each folder below it is reached without following a link.
 */
const changedInside = (
  entry: Entry,
  folder: number,
  keptAt: (base: string, path: string) => string | undefined,
  known: Known,
): Array<string> | undefined => {
  const now = new Map<string, Inside>()
  const name = basename(entry.path)
  const root = descend(folder, [name])
  if (root === undefined) return undefined
  try {
    if (!surveyHeld(root, entry.path, now, { left: 2 * MAX_INSIDE }, known)) return undefined
  } finally {
    closeSync(root)
  }
  const taken: Array<string> = []
  /** What was not taken (another folder the guard notes, moved here): nothing in it is either. */
  const left: Array<string> = []
  for (const [path, found] of now) {
    if (taken.some((gone) => path.startsWith(`${gone}/`)) || left.some((kept) => path.startsWith(`${kept}/`))) continue
    const before = entry.inside!.get(path)
    const same =
      before !== undefined &&
      before.ino === found.ino &&
      before.kind === found.kind &&
      (found.kind === DIRECTORY || before.changed === found.changed)
    if (same) continue
    const steps = relative(entry.path, path).split(sep)
    const parent = descend(folder, [name, ...steps.slice(0, -1)])
    if (parent === undefined) continue
    try {
      const at = inHeld(parent, steps[steps.length - 1]!)
      if (lstat(at) === undefined) continue
      if (asideChecked(at, path, keptAt(entry.base, path), known)) taken.push(path)
      else left.push(path)
    } finally {
      closeSync(parent)
    }
  }
  return taken
}

/**
 * Guards `location`, a Location served from now on, against every command running in this process that may write it
 * (in its own Location or another it guards, a folder granted to it, the temp directory) and was not told of it when
 * its guard began: from now until each ends, as a command of `location` where no mount namespace keeps anything
 * read-only (what it holds of core's configuration, and the files its tools import in places the command may write,
 * noted now; what the command changes of them taken out once it has ended); meanwhile `location` is busy (`idle`
 * waits, and with it hot reload). Without this, a command started before a host first named a Location inside its own
 * could write tools there that a reload then ran in core. Answers once those commands have ended (what a load must
 * wait for: a command started since knows of `location`), or why one cannot guard it (another command's swap stands:
 * see `Guarded.refused`).
 */
export const adopt = (location: string): Adopted => {
  const key = realOf(location)
  const reaching = [...guarding].filter((command) => command.reaches(key))
  // What a link there leads to is not noted where no mount holds it: not guarded, so refused.
  const linked = reaching.length === 0 ? undefined : linkedEntry(key)
  if (linked !== undefined) {
    return { refused: `${linked} is a symbolic link, and core cannot guard what it leads to from a command running now` }
  }
  const ended: Array<Promise<void>> = []
  for (const command of reaching) {
    const adopted = command.adopt(key)
    if ("refused" in adopted) return adopted
    ended.push(adopted.ended)
  }
  return { ended: Promise.all(ended).then(() => undefined) }
}

/** The first of core's configuration entries in `location` (or a folder on the way to one) that is a symbolic link. */
const linkedEntry = (location: string): string | undefined => {
  for (const entry of Protected.LOCATION_ENTRIES) {
    let path = location
    for (const part of entry.split("/")) {
      path = join(path, part)
      if (lstat(path)?.isSymbolicLink() === true) return path
    }
  }
  return undefined
}

/** Resolves once no guarded command of `location` runs (at once when none does). */
export const idle = (location: string): Promise<void> => {
  const key = realOf(location)
  if (!running.has(key)) return Promise.resolve()
  return new Promise((resolve) => {
    const list = waiting.get(key) ?? []
    list.push(resolve)
    waiting.set(key, list)
  })
}

/** How many are waiting for `location` to be idle (a long-lived core's hot reload, held back). */
export const held = (location: string): number => waiting.get(realOf(location))?.length ?? 0

/** Whether a guarded command of `location` runs now. */
export const busy = (location: string): boolean => running.has(realOf(location))
