export * as Repositories from "./repositories"

// The git repositories a command may write, found before it starts: in the Location (a clone kept in a folder of
// it, not a submodule) and in what a person granted it (a directory approved for the call, `shell.allowWrite`),
// where the user's own git later runs their hooks and config outside any sandbox. The guard (./guard) holds what
// git runs of each as it holds the Location's repository's.

import { statfsSync } from "node:fs"
import { Git } from "../permission/git"
import { Listing } from "./listing"

/**
 * How far a walk goes: past either bound the repositories further on are not found (`partial`), and the guard runs no
 * command (it cannot say which repositories the command may write). Folders bound its time (each is looked at, an
 * lstat, before every command), entries what its listings hold in memory: a home directory (tens of thousands of
 * folders, a few hundred thousand entries) fits well inside both.
 */
export interface Bounds {
  readonly folders: number
  readonly entries: number
}

export const BOUNDS: Bounds = { folders: 200_000, entries: 1_000_000 }

let bounded: Bounds = BOUNDS

/** The bounds searches use now: BOUNDS, unless a test set others (`boundedAt`). */
export const bounds = (): Bounds => bounded

/** Makes every search use `next` (a test's small bounds); answers how to put BOUNDS back. */
export const boundedAt = (next: Bounds): (() => void) => {
  bounded = next
  return () => {
    bounded = BOUNDS
  }
}

/** Folders not walked into: what they hold is a package manager's, not a repository anyone works in. */
const SKIPPED = new Set(["node_modules"])

/**
 * The folders of a git directory's object stores (`objects`, `lfs/objects`) that git fills (large), not walked into.
 * What else a folder that looks like a git directory holds is walked: anything can make one look like that
 * (`HEAD`, `objects`, `refs`), and a folder inside it would be hidden.
 */
const OBJECTS = /^(?:[0-9a-f]{2}|pack|info)$/

/**
 * The kernel's filesystems (statfs types) in which nobody makes a file: proc, sysfs, cgroup and cgroup2. A root on
 * one holds no repository, and is not walked (`/proc/1` granted would stop every search at `/proc/1/map_files`).
 */
const KERNEL_FILESYSTEMS = new Set([0x9fa0, 0x62656572, 0x27e0eb, 0x63677270])

/** Whether `root` is on one of KERNEL_FILESYSTEMS (not where it cannot be looked at: it is walked, as any other). */
const onKernelFilesystem = (root: string): boolean => {
  try {
    return KERNEL_FILESYSTEMS.has(Number(statfsSync(root).type))
  } catch {
    return false
  }
}

/** The folders of a `.git` where git keeps other git directories. */
const GIT_DIRECTORIES = ["modules", "worktrees"]

export interface Found {
  /** Each folder holding a `.git` (directory, file or link), and each bare repository, by the path it was found at. */
  readonly repositories: ReadonlyArray<string>
  /** True when the walk stopped at one of its bounds. */
  readonly partial: boolean
  /** Where it stopped: the folder whose listing took it past a bound, or one it could not list (`Listing.shut`). */
  readonly stoppedAt?: string
  /** Why: past a bound, or at a folder it could not list. */
  readonly stoppedBy?: "bound" | "shut"
  /** For a folder it could not list, the error (`Listing.shut`). */
  readonly code?: string
}

/** The last walk of some roots: what it looked at (./listing) and what it found, which stands while none has changed. */
const walks = new Map<string, Listing.Record & { readonly found: Found }>()
/** How many such walks are kept (a few Locations and grants), and how many folders they note together at most. */
const MAX_WALKS = 16
const MAX_KEPT_FOLDERS = 400_000


/**
 * The repositories under `roots` (real paths; symbolic links not followed; `node_modules` not walked, nor a `.git`
 * but for its `modules/` and `worktrees/`, nor the object folders git fills in a bare repository), the roots
 * themselves included, and the git directories of submodules and worktrees in a `.git` or a bare repository. A root
 * on a kernel filesystem (/proc, /sys) is not walked.
 */
export const under = (roots: ReadonlyArray<string>, limits: Bounds = bounded): Found => {
  const key = JSON.stringify([roots, limits.folders, limits.entries])
  const last = walks.get(key)
  const { stands, count, mode } = Listing.begin(last)
  if (stands && last !== undefined) return last.found
  const stamps: Array<readonly [string, string]> = []
  const repositories: Array<string> = []
  const seen = new Set<string>()
  /** The object stores of the bare repositories met: git's folders in them are not walked into. */
  const stores = new Set<string>()
  let entries = 0
  let unsure = false
  const queue = roots.filter((root) => !onKernelFilesystem(root))
  for (let index = 0; index < queue.length; index++) {
    const directory = queue[index]!
    if (seen.has(directory)) continue
    seen.add(directory)
    // The folders walked so far (this one included) and every entry listed: a command that made files by the
    // million in one folder reaches the second bound, one that made folders the first.
    if (seen.size > limits.folders) return { repositories, partial: true, stoppedAt: directory, stoppedBy: "bound" }
    const listed = Listing.list(directory, stamps, mode)
    if (listed === undefined) {
      // One a command may have shut hides what it holds: the walk cannot say what is there.
      const code = Listing.shut(directory)
      if (code !== undefined) return { repositories, partial: true, stoppedAt: directory, stoppedBy: "shut", code }
      continue
    }
    entries += listed.length
    if (entries > limits.entries) return { repositories, partial: true, stoppedAt: directory, stoppedBy: "bound" }
    let head = false
    let objects = false
    let dotGit: Listing.Kind | undefined
    for (const { name, kind } of listed) {
      if (name === ".git") dotGit = kind
      else if (name === "HEAD") head = kind === "file" || kind === "link"
      else if (name === "objects" || name === "commondir") objects = true
    }
    // A bare repository (as git takes one: a HEAD and objects, or a commondir naming some), a submodule's or a
    // worktree's git directory in another's among them.
    const bare = head && objects && Git.isGitDirectory(directory)
    // One that is not yet may become one with no folder listed here changing (its `objects` a link made to lead
    // somewhere, its `commondir` rewritten): a walk that met one is not kept.
    if (head && objects && !bare) unsure = true
    if (bare) repositories.push(directory)
    else if (dotGit !== undefined && dotGit !== "other") repositories.push(directory)
    const prefix = directory.endsWith("/") ? directory : `${directory}/`
    if (bare) stores.add(`${prefix}objects`).add(`${prefix}lfs/objects`)
    const store = stores.has(directory)
    for (const { name, kind, unnamed } of listed) {
      // A folder whose name is not UTF-8: no path core has leads to it (one may lead to another, named U+FFFD).
      if (kind === "directory" && unnamed === true) return { repositories, partial: true, stoppedAt: prefix + name, stoppedBy: "shut", code: "EILSEQ" }
      if (kind !== "directory" || SKIPPED.has(name) || (store && OBJECTS.test(name))) continue
      // Inside a `.git`, only where git keeps other git directories: its submodules' and worktrees'.
      if (name === ".git") {
        for (const inner of GIT_DIRECTORIES) queue.push(`${prefix}.git/${inner}`)
        continue
      }
      queue.push(prefix + name)
    }
  }
  const found = { repositories, partial: false }
  // Not kept: one that met a folder that may change unseen, or one too large to keep beside the others.
  if (unsure || stamps.length > MAX_KEPT_FOLDERS / 2) return found
  walks.delete(key)
  let kept = [...walks.values()].reduce((sum, walk) => sum + walk.stamps.length, 0)
  for (const [oldest, walk] of walks) {
    if (walks.size < MAX_WALKS && kept + stamps.length <= MAX_KEPT_FOLDERS) break
    walks.delete(oldest)
    kept -= walk.stamps.length
  }
  walks.set(key, { stamps, found, count, watched: Listing.watchedAll(mode) })
  return found
}
