export * as Listing from "./listing"

// Directory listings kept while the directory is unchanged (as its stamp says, or its watch: ./watched), for the
// walks core makes of a command's grants before it starts and after it ends (./covered, ./repositories): a walk made
// again reads only what changed since, and where its folders are watched looks at none that did not.

import { isUtf8 } from "node:buffer"
import { accessSync, constants, type Dirent, lstatSync, readdirSync, type Stats } from "node:fs"
import { dirname } from "node:path"
import { Watched } from "./watched"

export type Kind = "directory" | "link" | "file" | "other"

export interface Entry {
  readonly name: string
  readonly kind: Kind
  /**
   * Its name as read stands for bytes that are not UTF-8 (each read as U+FFFD), or may: a path made of it leads
   * nowhere, or to another entry whose name is U+FFFD written in UTF-8. A walk cannot look at what it names.
   */
  readonly unnamed?: true
}

/**
 * Whether the folder read at `through` (its path, or its descriptor's) holds a name that is not UTF-8: asked only
 * where a name read holds U+FFFD, which is how such bytes are read.
 */
const notUtf8In = (through: string): boolean => {
  try {
    return readdirSync(through, { encoding: "buffer" }).some((raw) => !isUtf8(raw))
  } catch {
    // Gone meanwhile: as good as one (the walk stops, to look again).
    return true
  }
}

/** What a directory held when last listed: a listing is read again only once the directory has changed. */
interface Kept {
  /** The directory's inode and change time (nanoseconds): any entry added, removed or renamed changes it. */
  readonly stamp: string
  readonly entries: ReadonlyArray<Entry>
  /** Read with a watch on it (./watched): the watch's id. */
  readonly watched: number | undefined
  /** A watching walk could set no watch on it (past the watches core may hold, or a file system not watched). */
  readonly unwatchable: boolean
}

/** How many directories' listings are kept (a few large Locations); past it, the cache starts again. */
const MAX_LISTINGS = 200_000
/** How many entries they hold together, at most (about a hundred bytes each); past it, the cache starts again. */
const MAX_ENTRIES = 2_000_000

const listings = new Map<string, Kept>()
/** The entries the kept listings hold. */
let kept = 0

const forget = (directory: string) => {
  kept -= listings.get(directory)?.entries.length ?? 0
  listings.delete(directory)
}

/**
 * How recent a directory's change may be for its listing to be trusted later by its stamp: the kernel stamps changes
 * with a coarse clock (a tick of up to 10 ms), so an entry added within the same tick as the listing leaves the stamp
 * as it was. A listing of a directory changed this recently is not kept (as git treats a racily clean index).
 */
const RACY_MS = 100
/**
 * The same where the file system keeps whole seconds only (ext4 with small inodes, ext3, FAT's two seconds, many
 * network file systems), as its stamps tell (no fraction in either): an entry added in the same second as the
 * listing leaves the stamp as it was.
 */
const COARSE_RACY_MS = 2_000 + RACY_MS

/** How long after `stat`'s last change its directory's listing is not trusted by its stamp. */
export const racyFor = (stat: Pick<Stats, "ctimeMs" | "mtimeMs">): number => (stat.ctimeMs % 1000 === 0 && stat.mtimeMs % 1000 === 0 ? COARSE_RACY_MS : RACY_MS)

/** A stamp no directory has: a walk that met a racy directory is looked at again next time. */
const RACY = "racy"

/** A directory's inode and change times, as its stamp. */
const stampFrom = (stat: Stats): string => `${stat.dev}:${stat.ino}:${stat.ctimeMs}:${stat.mtimeMs}`

/** What a directory's inode and change times are now ("gone" when it cannot be looked at). */
export const stampOf = (directory: string): string => {
  try {
    return stampFrom(lstatSync(directory))
  } catch {
    return "gone"
  }
}

/**
 * The stamp of a folder whose listing was read with a watch on it (./watched), before the watch's id: it stands while
 * that watch says so (a listing read again, by this walk or another, has a watch of its own).
 */
const WATCHED = "watched:"

/** The watch a stamp names, or undefined. */
const watchOf = (stamp: string): number | undefined => (stamp.startsWith(WATCHED) ? Number(stamp.slice(WATCHED.length)) : undefined)

/**
 * How a walk lists: by stamps alone (a walk made once or twice, as `core exec` makes: setting a watch costs more than
 * reading a folder), or watching what it reads (a walk made again and again, as a long-lived host makes: each folder
 * is then trusted by its watch, a look in memory, rather than an lstat). Watching, a walk reads with a watch every
 * folder it must read, and watches, up to UPGRADES a walk, folders whose listings stand by their stamps.
 */
export type Mode = "stamps" | "watching"

/** How many listings standing by their stamps a watching walk watches (`Watched.adopt`): spread over a few walks. */
const UPGRADES = 16_384

/** What the current walk may still watch of them (`standing` begins a walk). */
let upgrades = UPGRADES

/** The mode of a walk made for the `count`-th time (from 1) of the same roots: watching from the third on. */
const modeFor = (count: number): Mode => (count >= 3 ? "watching" : "stamps")

/**
 * Whether the walk that just ended in `mode` left nothing to watch that could be (its upgrades did not run out): a
 * record of one that did not is walked again, watching, though it stands.
 */
export const watchedAll = (mode: Mode): boolean => mode === "watching" && upgrades > 0

/** What a walk keeps of itself for the next walk of the same roots. */
export interface Record {
  /** Every folder it looked at and how it was (`list`'s stamps), each after its parent. */
  readonly stamps: ReadonlyArray<readonly [string, string]>
  /** How many times these roots were walked (its record reused or not). */
  count: number
  /** Whether it watched all it could (`watchedAll`). */
  readonly watched: boolean
}

/**
 * Begins a walk of the roots `last` (if any) is the record of: whether that record stands for it (then noted as
 * walked once more), and else the walk's count and the mode it lists in. A record of a walk that did not watch all it
 * could is walked again, watching, whether or not it stands.
 */
export const begin = (last: Record | undefined): { readonly stands: boolean; readonly count: number; readonly mode: Mode } => {
  const count = (last?.count ?? 0) + 1
  const mode = modeFor(count)
  const again = last !== undefined && mode === "watching" && !last.watched
  const stands = standing(again ? undefined : last?.stamps) && last !== undefined
  if (stands) last.count = count
  return { stands, count, mode }
}

/**
 * The entries of `directory`, from the cache while nothing has changed it: while its watch is silent and its path
 * leads to it (./watched), else while its change time stands (a command cannot set a change time back; and what a
 * sandboxed command could add unseen is its own: a hard link to a covered file crosses a mount, EXDEV); otherwise
 * read, with a watch set on it first when `mode` is watching and one can be. Its stamp is noted in `stamps` (one that
 * matches nothing where it changed too recently to be trusted). Undefined when it cannot be read.
 */
export const list = (directory: string, stamps: Array<readonly [string, string]>, mode: Mode = "stamps"): ReadonlyArray<Entry> | undefined => {
  const cached = listings.get(directory)
  if (cached?.watched !== undefined && Watched.trusted(directory, cached.watched)) {
    stamps.push([directory, WATCHED + cached.watched])
    return cached.entries
  }
  let stat
  try {
    stat = lstatSync(directory)
  } catch {
    stamps.push([directory, "gone"])
    return undefined
  }
  const stamp = stampFrom(stat)
  // Never through a link (a `.git/modules` made one leading out of the folders searched): not a folder to list.
  if (!stat.isDirectory()) {
    stamps.push([directory, stamp])
    return undefined
  }
  if (cached?.watched !== undefined && Watched.confirm(directory, cached.watched, stat)) {
    stamps.push([directory, WATCHED + cached.watched])
    return cached.entries
  }
  const racy = Date.now() - Math.max(stat.ctimeMs, stat.mtimeMs) < racyFor(stat)
  // By its stamp only where it was read unwatched (one whose watch was dropped, by a mount or a lost report, is read
  // again). A watching walk watches it as it stands, up to UPGRADES a walk: the watch set, the folder is the one listed
  // if its stamp is still the same (as a walk by stamps would take it), and whatever changes it afterwards is reported.
  if (!racy && cached !== undefined && cached.watched === undefined && cached.stamp === stamp) {
    if (mode === "watching" && !cached.unwatchable && upgrades > 0) {
      upgrades--
      const id = Watched.adopt(directory, (now) => stampFrom(now) === stamp)
      listings.set(directory, id === undefined ? { ...cached, unwatchable: true } : { ...cached, watched: id })
      if (id !== undefined) {
        stamps.push([directory, WATCHED + id])
        return cached.entries
      }
    }
    stamps.push([directory, stamp])
    return cached.entries
  }
  const read = mode === "watching" ? Watched.read(directory, entriesOf) : unwatched(directory)
  if (read === undefined) {
    stamps.push([directory, racy ? RACY : stamp])
    return undefined
  }
  const entries = read.entries
  stamps.push([directory, read.watched !== undefined ? WATCHED + read.watched : racy ? RACY : stamp])
  forget(directory)
  // A watch its path had before, now of no listing kept (read by stamps): its place goes to another folder.
  if (read.watched === undefined) Watched.forget(directory)
  // One folder holding a good part of what all may hold is read again each time, not kept.
  if (entries.length <= MAX_ENTRIES / 4) {
    if (listings.size >= MAX_LISTINGS || kept + entries.length > MAX_ENTRIES) {
      listings.clear()
      Watched.reset()
      kept = 0
    }
    // A racy stamp is kept as one that matches nothing: the listing stands only while its watch does.
    if (read.watched !== undefined || !racy) {
      listings.set(directory, { stamp: racy ? RACY : stamp, entries, watched: read.watched, unwatchable: mode === "watching" && read.watched === undefined })
      kept += entries.length
    }
  } else Watched.forget(directory)
  return entries
}

/** The entries read of a folder, which can be read again at `through`: names that are not UTF-8 marked. */
const entriesOf = (read: ReadonlyArray<Dirent>, through: string): ReadonlyArray<Entry> => {
  const unnamed = read.some((entry) => entry.name.includes("\uFFFD")) && notUtf8In(through)
  return read.map((entry) => ({
    name: entry.name,
    kind: entry.isDirectory() ? "directory" : entry.isSymbolicLink() ? "link" : entry.isFile() ? "file" : "other",
    ...(unnamed && entry.name.includes("\uFFFD") ? { unnamed: true } : {}),
  }))
}

/** A folder's entries read by its path, unwatched. */
const unwatched = (directory: string): Watched.Read<ReadonlyArray<Entry>> | undefined => {
  try {
    return { entries: entriesOf(readdirSync(directory, { withFileTypes: true }), directory), watched: undefined }
  } catch {
    return undefined
  }
}

/**
 * Begins a walk (what the watches reported is taken in first: before any `list`), and answers whether the last
 * walk's record of what it looked at (`stamps`, as `list` noted them, each folder after its parent) still stands:
 * every watched folder trusted or found again where it was, every other one's stamp the same. False with no record.
 */
const standing = (stamps: ReadonlyArray<readonly [string, string]> | undefined): boolean => {
  Watched.begin()
  upgrades = UPGRADES
  if (stamps === undefined) return false
  for (const [directory, stamp] of stamps) {
    const watch = watchOf(stamp)
    if (watch === undefined) {
      if (stampOf(directory) !== stamp) return false
      continue
    }
    if (Watched.trusted(directory, watch)) continue
    let stat
    try {
      stat = lstatSync(directory)
    } catch {
      return false
    }
    if (!Watched.confirm(directory, watch, stat)) return false
  }
  return true
}

/** An error's code, or what it says where it has none. */
const codeOf = (cause: unknown): string => (cause as NodeJS.ErrnoException | undefined)?.code ?? String(cause)

/** Whether this process may `mode` (W_OK, X_OK) `directory`. */
const may = (directory: string, mode: number): boolean => {
  try {
    accessSync(directory, mode)
    return true
  } catch {
    return false
  }
}

/** Whether `directory` is another user's that this process may neither write nor enter (`stat`: its lstat, if known). */
const closed = (directory: string, stat?: Stats): boolean => {
  let owner: number
  try {
    owner = (stat ?? lstatSync(directory)).uid
  } catch {
    return false
  }
  return owner !== process.getuid?.() && !may(directory, constants.W_OK) && !may(directory, constants.X_OK)
}

/**
 * Why `directory`, found in a walk but not listed (`list` answered undefined), may hide what a command put in it: the
 * error that keeps it from being listed (EACCES where a command made it unreadable, `chmod 111`, or its parent
 * `chmod 444`; ENAMETOOLONG where it was moved past the longest path the kernel takes). A walk that meets an entry
 * whose name is not UTF-8 (`Entry.unnamed`) stops there too, with EILSEQ. Undefined where it cannot
 * hide anything: a folder gone, or no longer a folder (a change the walk's next look sees), or one another user owns
 * that this process may neither write nor enter, or one beneath such a folder (a command running as this user can
 * have put nothing in it, and the user's git cannot run there). A walk meeting one that may stops there, as at its bound.
 */
export const shut = (directory: string): string | undefined => {
  let stat: Stats
  try {
    stat = lstatSync(directory)
  } catch (cause) {
    const code = codeOf(cause)
    if (code === "ENOENT" || code === "ENOTDIR") return undefined
    // Beneath a folder of another user's that this process may neither write nor enter (`/root/.cargo` for a user
    // who is not root): no command of this user reaches it either.
    return code === "EACCES" && closed(dirname(directory)) ? undefined : code
  }
  if (!stat.isDirectory()) return undefined
  if (closed(directory, stat)) return undefined
  try {
    readdirSync(directory)
  } catch (cause) {
    return codeOf(cause)
  }
  // Listed now, though not a moment ago: changed while the walk looked (its content was not seen).
  return "ECHANGED"
}

/** What `shut`'s code means, in words. */
export const shutText = (code: string): string =>
  code === "EACCES" || code === "EPERM"
    ? "its permissions keep core out"
    : code === "ENAMETOOLONG"
      ? "its path is longer than the system takes"
      : code === "ELOOP"
        ? "links on its way loop"
        : code === "ECHANGED"
          ? "it changed while core listed it"
          : code === "EILSEQ"
            ? "its name is not UTF-8, so core cannot look at it by name"
            : `listing it fails with ${code}`
