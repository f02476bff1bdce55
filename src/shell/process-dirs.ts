export * as ProcessDirs from "./process-dirs"

// Directories a core process makes for itself in a place others share (a call's temp and cache directories in the
// system's temporary directory, the server's socket directory in the data directory), removed by the process when it
// is done with them. A core killed (kill -9, the machine's OOM killer) removes nothing: so each is named for the
// process that made it, `<prefix><pid>-<machine><random>`, and the next core making one in the same place removes those
// whose process is gone.
//
// Gone is decided only for a directory made on this machine and in this PID namespace (`machine`: the boot's id and
// the namespace, hashed), where a pid means the same process: a data directory shared with another host (NFS, a
// shared volume) or a temporary directory shared with another container holds directories of processes this one
// cannot see, which are left alone (all are, where the machine cannot be told). So are directories of another user,
// anything that is not a directory (a link), and names core did not make. A pid reused by a process that is not core
// keeps a leftover until it ends.

import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { join } from "node:path"
import { Owner } from "../store/owner"

let known: string | undefined

/**
 * This machine's boot and this PID namespace (Owner.MACHINE), as 8 hex digits: the same for every core that sees the
 * same pids.
 */
export const machine = (): string =>
  (known ??= (Bun.hash.wyhash(Owner.MACHINE) & 0xffffffffn).toString(16).padStart(8, "0"))

/** Whether process `pid` runs (one of another user counts: signalling it is refused, not missing). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (cause) {
    return (cause as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Places swept by this process already (`parent` and prefix): each is swept once, as its first directory is made. */
const swept = new Set<string>()

/**
 * Removes the directories named `<prefix><pid>-<machine>…` in `parent` whose process is gone, made on this machine
 * and owned by this user; answers how many. Nothing it meets stops it: a directory that cannot be removed is left.
 */
export const sweep = (parent: string, prefix: string): number => {
  // Where the machine cannot be told (no /proc), no pid can be taken to mean a process of this one.
  if (Owner.MACHINE === "") return 0
  const pattern = new RegExp(`^${prefix.replace(/[^A-Za-z0-9]/g, "\\$&")}(\\d+)-${machine()}[A-Za-z0-9]+$`)
  const uid = process.getuid?.()
  let entries: Array<string>
  try {
    entries = readdirSync(parent)
  } catch {
    return 0
  }
  let removed = 0
  for (const name of entries) {
    const pid = pattern.exec(name)?.[1]
    if (pid === undefined || Number(pid) === process.pid || alive(Number(pid))) continue
    const path = join(parent, name)
    try {
      const stat = lstatSync(path)
      if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) continue
      if (remove(path)) removed++
    } catch {
      // Gone meanwhile (another core swept it), or not ours to remove: left.
    }
  }
  return removed
}

/**
 * Removes `path` and everything beneath it, as far as this user may; answers whether it is gone, and never throws. A
 * folder a command left without write or search permission (a test's read-only fixture, Go's module cache, a 0000
 * folder) is made the user's own (0700) and removed with the rest: only folders, found by lstat, never through a link.
 * Nothing of the command runs by then to swap one for a link (its supervisor ended every process first), and where
 * no sandbox holds it, it could have changed those modes itself.
 */
export const remove = (path: string): boolean => {
  try {
    rmSync(path, { recursive: true, force: true })
    return true
  } catch {
    // A folder beneath it that cannot be emptied: opened up below.
  }
  const folders = [path]
  for (let folder = folders.pop(); folder !== undefined; folder = folders.pop()) {
    try {
      if (!lstatSync(folder).isDirectory()) continue
      chmodSync(folder, 0o700)
      for (const name of readdirSync(folder)) folders.push(join(folder, name))
    } catch {
      // Not ours, or gone: rmSync says below whether it mattered.
    }
  }
  try {
    rmSync(path, { recursive: true, force: true })
    return true
  } catch {
    return false
  }
}

/**
 * Makes a private (0700) directory `<prefix><pid>-<machine><random>` in `parent`, having removed (the first time this
 * process makes one there) those a gone process left.
 */
export const make = (parent: string, prefix: string): string => {
  const place = `${parent}\0${prefix}`
  if (!swept.has(place)) {
    swept.add(place)
    sweep(parent, prefix)
  }
  return mkdtempSync(join(parent, `${prefix}${process.pid}-${machine()}`))
}
