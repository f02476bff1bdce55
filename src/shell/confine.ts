export * as Confine from "./confine"

// A read-only confinement for a program core runs itself (rg): it may read beneath one directory, the very one
// core checked, and a few named files; nothing else, and it writes nowhere. The directory is opened again by its
// real path and proved to be the same one (device and inode, which the caller's open descriptor keeps from being
// reused) reached with no symlink on the way; the rules are then made from the new descriptor and the program
// started in it, so no path is looked up after the proof (../builtin/search-process). It decides no permissions.

import { fstatSync, readlinkSync } from "node:fs"
import { Native } from "./native"

const O_DIRECTORY = 0o200000
const O_NOFOLLOW = 0o400000

/** What the program may read. */
export interface Confinement {
  /** The directory it runs in and may read beneath: its real path, device and inode (decimal, as core saw them). */
  readonly directory: { readonly path: string; readonly dev: string; readonly ino: string }
  /** Files it may also read (real paths); each one granted only if it is a regular file no symlink leads to. */
  readonly files: ReadonlyArray<string>
}

/** The confinement's directory and files, held open by this process and proved to be where core meant them. */
export interface Held {
  /** The working directory to give the program: the held directory, through this process's descriptor. */
  readonly cwd: string
  /** What to grant (./landlock `restrict`). */
  readonly grants: ReadonlyArray<{ readonly fd: number; readonly directory: boolean }>
  /** Lets go of every descriptor. */
  readonly close: () => void
}

const where = (fd: number): string | undefined => {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`)
  } catch {
    return undefined
  }
}

/**
 * Opens and proves the confinement's directory and files. Answers them held, or the reason the directory is not
 * the one core checked any more (a file that is missing, or reached through a symlink, is just left out: the
 * program then cannot read it).
 */
export const hold = (confinement: Confinement): Held | { readonly moved: string } => {
  const { path, dev, ino } = confinement.directory
  const fd = Native.open(path, Native.O_PATH | Native.O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW)
  if (fd < 0) return { moved: `${path} is gone or was replaced (errno ${-fd})` }
  let same = false
  try {
    const stat = fstatSync(fd, { bigint: true })
    same = String(stat.dev) === dev && String(stat.ino) === ino && where(fd) === path
  } catch {
    same = false
  }
  if (!same) {
    Native.close(fd)
    return { moved: `${path} is no longer the directory that was checked` }
  }
  const grants: Array<{ fd: number; directory: boolean }> = [{ fd, directory: true }]
  for (const file of confinement.files) {
    const held = Native.open(file, Native.O_PATH | Native.O_CLOEXEC | O_NOFOLLOW)
    if (held < 0) continue
    let regular = false
    try {
      regular = fstatSync(held).isFile() && where(held) === file
    } catch {
      regular = false
    }
    if (regular) grants.push({ fd: held, directory: false })
    else Native.close(held)
  }
  return {
    cwd: `/proc/self/fd/${fd}`,
    grants,
    close: () => {
      for (const grant of grants) Native.close(grant.fd)
    },
  }
}
