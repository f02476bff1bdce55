export * as Covered from "./covered"

// What a command must read nothing of although its sandbox grants the tree they lie in: the files and directories
// an agent's `read` rules deny inside the Location (and the approved directories), found when the command starts by
// walking those trees. The supervisor covers each in the command's mount namespace (./namespace `cover`), so every
// program reads them as empty, the ones core has no operand table for included. Landlock cannot do it: it grants
// trees and cannot carve a path out of one without granting its siblings one by one (then the folder takes no new
// file).

import { lstatSync, mkdirSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Listing } from "./listing"

/**
 * How many entries a walk reads at most: past that, what it found would be covered and the rest not (Found.partial),
 * so the command does not start (Sandbox.Prepared.uncovered).
 */
export const MAX_ENTRIES = 1_000_000

let bounded = MAX_ENTRIES

/** The bound walks use now: MAX_ENTRIES, unless a test set another (`boundedAt`). */
export const bound = (): number => bounded

/** Makes every walk stop past `entries` (a test's small bound); answers how to put MAX_ENTRIES back. */
export const boundedAt = (entries: number): (() => void) => {
  bounded = entries
  return () => {
    bounded = MAX_ENTRIES
  }
}

/** Where a walk stopped at a folder it cannot list (`Listing.shut`): the folder, and the error. */
export interface Shut {
  readonly at: string
  readonly code: string
}

export interface Found {
  readonly files: ReadonlyArray<string>
  readonly directories: ReadonlyArray<string>
  /** Entries read. */
  readonly entries: number
  /** True when the walk stopped before its end: files past it are not covered. */
  readonly partial: boolean
  /** Where it stopped: at a folder it cannot list (`Listing.shut`: the folder and the error), else at its bound. */
  readonly shut?: Shut
}

/** What the walk of some roots under some rules found in its folders, before links and other names are looked at. */
interface Visited {
  readonly files: ReadonlyArray<string>
  readonly directories: ReadonlyArray<string>
  readonly regular: ReadonlyArray<string>
  readonly links: ReadonlyArray<string>
  readonly entries: number
  /** A folder the walk could not list though a command may have shut it (then it stopped there). */
  readonly shut?: Shut
}

/**
 * The last walk of some roots under some rules (by the rules' key), with every folder it looked at and how it was:
 * while none has changed, what it found in them stands (what links lead to is looked at again each time).
 */
const walks = new Map<string, Listing.Record & { readonly visited: Visited }>()
/** How many such walks are kept (a few Locations and agents). */
const MAX_WALKS = 16

/** How many answers of the rules are kept, over every set of rules: past it, the cache starts again. */
const MAX_VERDICTS = 500_000

/** The answers of sets of rules (by their `key`) for real paths: the rules decide by the path's text alone. */
const verdicts = new Map<string, Map<string, boolean>>()
let kept = 0

/** `denied`, its answers kept when it carries a `key` (Rule.denier's and Builtin.readDenied's do). */
const remembered = (denied: (real: string) => boolean): ((real: string) => boolean) => {
  const key = (denied as { readonly key?: string }).key
  if (key === undefined) return denied
  let known = verdicts.get(key)
  if (known === undefined) verdicts.set(key, (known = new Map()))
  const answers = known
  return (real) => {
    let answer = answers.get(real)
    if (answer === undefined) {
      answer = denied(real)
      if (kept >= MAX_VERDICTS) {
        for (const each of verdicts.values()) each.clear()
        kept = 0
      }
      answers.set(real, answer)
      kept++
    }
    return answer
  }
}

/** A name no entry has: a directory is covered whole only if the rules would deny a file made in it too. */
const PROBE = "\u0000any"

/** Walks the roots' folders (see `walk`); kept for `walkKey` unless it stopped at `max`. */
const visit = (
  roots: ReadonlyArray<string>,
  denied: (real: string) => boolean,
  max: number,
  walkKey: string | undefined,
  count: number,
  mode: Listing.Mode,
): Visited => {
  const files = new Set<string>()
  const directories = new Set<string>()
  /** Every regular file seen: searched for other names of a denied file only when one has more than one. */
  const regular: Array<string> = []
  const links: Array<string> = []
  const seen = new Set<string>()
  let entries = 0
  let partial = false
  let shut: Shut | undefined
  /** Every folder looked at, as it was then. */
  const stamps: Array<readonly [string, string]> = []
  /** Walks one directory; answers whether everything in it is denied (then its caller may cover it whole). */
  const into = (directory: string, root: boolean): boolean => {
    const listed = Listing.list(directory, stamps, mode)
    if (listed === undefined) {
      // One a command may have shut would keep a denied file in it uncovered: the walk stops, as at its bound.
      const code = Listing.shut(directory)
      if (code !== undefined) {
        shut ??= { at: directory, code }
        partial = true
      }
      return false
    }
    entries += listed.length
    if (entries > max) {
      partial = true
      return false
    }
    let all = true
    const prefix = directory.endsWith("/") ? directory : `${directory}/`
    for (const entry of listed) {
      if (partial) return false
      const path = prefix + entry.name
      // A name that is not UTF-8 leads nowhere as core reads it (or to another entry, named U+FFFD): what it names
      // could be neither walked nor covered, nor a link's target read. A file the rules would not deny by the name as
      // read (its bytes in U+FFFD's place) is passed over.
      if (entry.unnamed === true) {
        if (entry.kind === "directory" || entry.kind === "link" || (entry.kind === "file" && denied(path))) {
          shut ??= { at: path, code: "EILSEQ" }
          partial = true
          return false
        }
        all = false
        continue
      }
      if (entry.kind === "directory") {
        if (seen.has(path)) continue
        seen.add(path)
        const before = files.size
        const whole = into(path, false)
        if (whole && denied(path) && denied(join(path, PROBE))) {
          // Its files go: the directory's cover holds them.
          for (const file of [...files].slice(before)) files.delete(file)
          for (const inner of [...directories]) if (inner.startsWith(`${path}/`)) directories.delete(inner)
          directories.add(path)
        } else all = false
      } else if (entry.kind === "link") {
        links.push(path)
        all = false
      } else if (entry.kind === "file" && denied(path)) {
        files.add(path)
      } else {
        if (entry.kind === "file") regular.push(path)
        all = false
      }
    }
    return all && !root
  }
  for (const root of roots) {
    if (seen.has(root)) continue
    seen.add(root)
    into(root, true)
  }
  const visited = {
    files: [...files],
    directories: [...directories],
    regular,
    links,
    entries: partial ? max + 1 : entries,
    ...(shut === undefined ? {} : { shut }),
  }
  if (walkKey !== undefined && !partial) {
    if (walks.size >= MAX_WALKS) walks.delete(walks.keys().next().value!)
    walks.set(walkKey, { stamps, visited, count, watched: Listing.watchedAll(mode) })
  }
  return visited
}

/**
 * Walks `roots` (real paths; links not followed; each directory's listing reused while it is unchanged, the
 * rules' answers while the rules are the same (`test`'s `key`), and the whole walk while no folder in it changed) and answers what `denied` (a test of a real path) refuses: each
 * denied regular file; a directory whole (one mount rather than one per file) when the rules deny it, any name
 * made in it, and every entry found beneath it; a symbolic link's target when it is denied (the cover holds at the
 * target, so reading through any link meets it); and every other name of a denied file (a hard link made before
 * the call) found in the walk. The roots themselves are never covered whole: their files are, one by one.
 */
export const walk = (roots: ReadonlyArray<string>, test: (real: string) => boolean, max = bounded): Found => {
  const denied = remembered(test)
  const key = (test as { readonly key?: string }).key
  const walkKey = key === undefined ? undefined : JSON.stringify([roots, key, max])
  const last = walkKey === undefined ? undefined : walks.get(walkKey)
  // A walk with no key keeps no record: each is a first, by stamps.
  const { stands, count, mode } = Listing.begin(last)
  const visited = stands && last !== undefined ? last.visited : visit(roots, denied, max, walkKey, count, mode)
  const files = new Set(visited.files)
  const directories = new Set(visited.directories)
  const { regular, links, entries } = visited
  const partial = entries > max
  for (const link of links) {
    let target: string
    try {
      target = realpathSync(link)
    } catch {
      continue
    }
    if (!denied(target)) continue
    try {
      const stat = statSync(target)
      if (stat.isDirectory()) directories.add(target)
      else if (stat.isFile()) files.add(target)
    } catch {
      // gone meanwhile
    }
  }
  // Other names of a denied file: the same inode under a name no rule denies.
  const linked = new Set<string>()
  for (const file of files) {
    const stat = lstatSync(file, { throwIfNoEntry: false })
    if (stat !== undefined && stat.nlink > 1) linked.add(`${stat.dev}:${stat.ino}`)
  }
  if (linked.size > 0) {
    for (const path of regular) {
      const stat = lstatSync(path, { throwIfNoEntry: false })
      if (stat !== undefined && linked.has(`${stat.dev}:${stat.ino}`)) files.add(path)
    }
  }
  // A path inside a covered directory needs no cover of its own.
  const inside = (path: string) => [...directories].some((directory) => path.startsWith(`${directory}/`))
  return {
    files: [...files].filter((file) => !inside(file)),
    directories: [...directories].filter((directory) => !inside(directory)),
    entries,
    partial,
    ...(visited.shut === undefined ? {} : { shut: visited.shut }),
  }
}

/** The name of the empty file in core's data directory that covers a denied file. */
export const EMPTY = "empty"

/**
 * The empty file denied files are covered with, in `data` (core's data directory, which no command reaches): made
 * 0444 if missing, made again if it is not an empty regular file of this user's; null when it cannot be had.
 */
export const emptyIn = (data: string): string | null => {
  const path = join(data, EMPTY)
  const sound = () => {
    const stat = lstatSync(path, { throwIfNoEntry: false })
    return stat !== undefined && stat.isFile() && stat.size === 0 && stat.uid === process.getuid?.() && (stat.mode & 0o222) === 0
  }
  try {
    if (sound()) return path
    mkdirSync(data, { recursive: true, mode: 0o700 })
    rmSync(path, { force: true, recursive: true })
    writeFileSync(path, "", { mode: 0o444, flag: "wx" })
    return sound() ? path : null
  } catch {
    return null
  }
}
