export * as Repositories from "./repositories"

// The git repositories a command may write, found before it starts: in the Location (a clone kept in a folder of
// it, not a submodule) and in what a person granted it (a directory approved for the call, `shell.allowWrite`),
// where the user's own git later runs their hooks and config outside any sandbox. The guard (./guard) holds what
// git runs of each as it holds the Location's repository's.

import { Git } from "../permission/git"
import { Listing } from "./listing"

/** How many entries a walk reads at most: past that, the repositories further on are not found (`partial`). */
export const MAX_ENTRIES = 200_000

/** Folders not walked into: what they hold is a package manager's, not a repository anyone works in. */
const SKIPPED = new Set(["node_modules"])

export interface Found {
  /** Each folder holding a `.git` (directory, file or link), and each bare repository, by the path it was found at. */
  readonly repositories: ReadonlyArray<string>
  /** True when the walk stopped at its bound. */
  readonly partial: boolean
}

/** The last walk of some roots, with every folder it looked at and how it was: while none has changed, it stands. */
const walks = new Map<string, { readonly stamps: ReadonlyArray<readonly [string, string]>; readonly found: Found }>()
/** How many such walks are kept (a few Locations and grants). */
const MAX_WALKS = 16

/**
 * The repositories under `roots` (real paths; symbolic links not followed; the inside of a git directory, and of
 * `node_modules`, not walked), the roots themselves included.
 */
export const under = (roots: ReadonlyArray<string>, max = MAX_ENTRIES): Found => {
  const key = JSON.stringify([roots, max])
  const last = walks.get(key)
  if (last !== undefined && last.stamps.every(([directory, stamp]) => Listing.stampOf(directory) === stamp)) return last.found
  const stamps: Array<readonly [string, string]> = []
  const repositories: Array<string> = []
  const seen = new Set<string>()
  let entries = 0
  const queue = [...roots]
  for (let index = 0; index < queue.length; index++) {
    const directory = queue[index]!
    if (seen.has(directory)) continue
    seen.add(directory)
    const listed = Listing.list(directory, stamps)
    if (listed === undefined) continue
    entries += listed.length
    if (entries > max) {
      const found = { repositories, partial: true }
      return found
    }
    let head = false
    let objects = false
    let dotGit = false
    const folders: Array<string> = []
    for (const entry of listed) {
      const { name, kind } = entry
      if (name === ".git") {
        dotGit = kind !== "other"
        continue
      }
      if (name === "HEAD") head = kind === "file" || kind === "link"
      else if (name === "objects" || name === "commondir") objects = true
      if (kind === "directory" && !SKIPPED.has(name)) folders.push(name)
    }
    // A bare repository (as git takes one: a HEAD and objects, or a commondir naming some): nothing in it to walk.
    if (head && objects && Git.isGitDirectory(directory)) {
      repositories.push(directory)
      continue
    }
    if (dotGit) repositories.push(directory)
    const prefix = directory.endsWith("/") ? directory : `${directory}/`
    for (const name of folders) queue.push(prefix + name)
  }
  const found = { repositories, partial: false }
  if (walks.size >= MAX_WALKS) walks.delete(walks.keys().next().value!)
  walks.set(key, { stamps, found })
  return found
}
