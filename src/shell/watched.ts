export * as Watched from "./watched"

// Folders the walks before and after a command list (./listing), watched with inotify so that a walk made again
// trusts what nothing has touched without looking at it: a Location of tens of thousands of folders is otherwise
// looked at folder by folder (an lstat each) twice a command.
//
// A folder's listing is trusted while all of these hold, and looked at as before (its stamp) otherwise:
// - its watch has reported nothing since the listing was read (the watch is set on the very folder listed, through
//   a descriptor of it, before the listing is read: whatever changes it after is reported);
// - its path still leads to the folder watched: the parent's watch it was last found at its path through is still
//   its parent's, silent, and trusted in this walk (a name changes only in its parent, which reports it; a parent
//   moved or swapped for another is read again, with a watch of its own); or, for the first folder of a walk and any
//   other, an lstat finds the same folder there;
// - nothing was mounted or unmounted in core's mount namespace since (mounts change what a path leads to without a
//   change in any folder), no report was lost (the queue overflowed), and the folder is on a file system whose
//   changes all go through this kernel on its folders (ext4, xfs, btrfs, tmpfs and the like; not a network or FUSE
//   file system, where a change made elsewhere is never reported, nor overlay, whose layers can be written directly).
// Watches are a shared resource of the user (an editor's file watcher needs them too): core takes a quarter of what
// the system allows at most, and lists the rest as before.

import { closeSync, constants, fstatSync, openSync, readdirSync, readFileSync, readSync, statfsSync, type Dirent, type Stats } from "node:fs"
import { Native } from "./native"

const IN_NONBLOCK = 0o4000
const IN_CLOEXEC = 0o2000000
const IN_ATTRIB = 0x4
const IN_MOVED_FROM = 0x40
const IN_MOVED_TO = 0x80
const IN_CREATE = 0x100
const IN_DELETE = 0x200
const IN_DELETE_SELF = 0x400
const IN_MOVE_SELF = 0x800
const IN_UNMOUNT = 0x2000
export const IN_Q_OVERFLOW = 0x4000
const IN_IGNORED = 0x8000
const IN_ONLYDIR = 0x1000000
/** What a folder's watch reports: its names changing, and itself changed, moved or gone. */
const MASK = IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
/** A change of one of the folder's names (the event names it). */
const NAMED = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
/** The folder itself moved, gone, unmounted or its watch dropped. */
const GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED
const POLLPRI = 2
const POLLERR = 8

/**
 * File systems every change of which goes through this kernel's file system calls on the folders themselves, so that
 * inotify reports it: ext2/3/4, xfs, btrfs, tmpfs, f2fs, zfs, bcachefs. Any other is looked at as before: NFS, 9p,
 * virtiofs, FUSE and SMB, where a change made through another machine or a daemon is not reported, and overlay, where
 * a change written to one of its layers directly is not reported on the overlay's folders.
 */
const LOCAL = new Set([0xef53, 0x58465342, 0x9123683e, 0x01021994, 0xf2f52010, 0x2fc12fc1, 0xca451a4e])

/** A watched folder. */
interface Watch {
  /** Unique: the listing read with this watch set (a record of a walk names it; one read again has another). */
  readonly id: number
  /** The watch; -1 once dropped. */
  wd: number
  /** The folder watched: device and inode. */
  readonly identity: string
  /** Its watch reported a change of its names or itself since its listing was read. */
  changed: boolean
  /** The walk (`begin`'s count) in which its path was last known to lead to it. */
  verified: number
  /**
   * The parent's watch this folder was last found at its path through (undefined: none, trusted in that walk). While
   * that watch is its parent's path's, silent, and trusted in the current walk, the name leads to this folder still:
   * a name changes only in its parent, which reports it; a parent moved, swapped or read again has another watch.
   */
  parent: Watch | undefined
}

let fd: number | undefined
/** The mount table's descriptor, polled for changes; -1 where it cannot be polled (nothing is watched then). */
let mounts: number | undefined
const byPath = new Map<string, Watch>()
const byWd = new Map<number, Array<string>>()
/** Whether a device's file system reports every change (`local`), while the mount table stands. */
const localByDevice = new Map<number, boolean>()
let walk = 0
let counter = 0
/** Whether watching cannot be had here (no libc, no /proc): walks look at every folder by its stamp. */
let off = false
/** The walk in which no inotify instance could be had. */
let unavailableIn = -1
let budget: number | undefined
const buffer = Buffer.alloc(64 * 1024)
const noWait = new Uint8Array(16)
const pollFd = new Uint8Array(8)

/** How many watches core may hold: a quarter of the user's, at most 131,072 (a test may set another: `limitedTo`). */
const limit = (): number => {
  if (budget !== undefined) return budget
  let most = 8_192
  try {
    most = Number(readFileSync("/proc/sys/fs/inotify/max_user_watches", "latin1").trim()) || most
  } catch {
    // The kernel's old default.
  }
  return (budget = Math.min(131_072, Math.floor(most / 4)))
}

/** Makes at most `watches` watches be held (a test's); answers how to put the default back. Drops every watch. */
export const limitedTo = (watches: number): (() => void) => {
  reset()
  budget = watches
  return () => {
    reset()
    budget = undefined
  }
}

/** Drops every watch and what they said: every folder is looked at again. */
export const reset = (): void => {
  if (fd !== undefined && fd >= 0) closeSync(fd)
  fd = undefined
  for (const watch of byPath.values()) watch.wd = -1
  byPath.clear()
  byWd.clear()
  localByDevice.clear()
  walk++
}

const ready = (): boolean => {
  if (off) return false
  if (fd !== undefined) return fd >= 0
  const numbers = Native.numbers
  if (numbers === undefined || !Native.available()) return !(off = true)
  if (mounts === undefined) {
    try {
      mounts = openSync("/proc/self/mountinfo", "r")
    } catch {
      mounts = -1
    }
    if (mounts < 0) return !(off = true)
    mountsChanged()
  }
  // None to be had now (the user's inotify instances all taken, say): tried again in the next walk.
  if (unavailableIn === walk) return false
  const made = Native.syscall(numbers.inotifyInit1, IN_NONBLOCK | IN_CLOEXEC)
  if (made < 0) {
    unavailableIn = walk
    return false
  }
  fd = made
  return true
}

/** Whether the mount table changed since it was last polled (a poll takes the change). */
const mountsChanged = (): boolean => {
  if (mounts === undefined || mounts < 0 || Native.numbers === undefined) return true
  const view = new DataView(pollFd.buffer)
  view.setInt32(0, mounts, true)
  view.setInt16(4, POLLPRI, true)
  view.setInt16(6, 0, true)
  const ready = Native.syscall(Native.numbers.ppoll, Native.address(pollFd), 1, Native.address(noWait), 0)
  if (ready < 0) return true
  return ready > 0 && (view.getInt16(6, true) & (POLLPRI | POLLERR)) !== 0
}

/**
 * Takes in what the watches reported since the last walk; begins a walk. Called at the start of each walk and
 * before a walk's record is checked: a path is trusted through its parent only within one walk.
 */
export const begin = (): void => {
  walk++
  if (fd === undefined || fd < 0) return
  if (mountsChanged()) return reset()
  for (;;) {
    let read: number
    try {
      read = readSync(fd, buffer, 0, buffer.length, null)
    } catch {
      return // EAGAIN: nothing more
    }
    if (read <= 0) return
    if (!take(buffer.subarray(0, read))) return reset()
  }
}

/** Applies a read of events; false when one was lost (the queue overflowed): then nothing watched can be trusted. */
export const take = (events: Uint8Array): boolean => {
  const view = new DataView(events.buffer, events.byteOffset, events.byteLength)
  for (let at = 0; at + 16 <= events.length; ) {
    const wd = view.getInt32(at, true)
    const mask = view.getUint32(at + 4, true)
    // The name's length (0: the event is the folder's own); what it names matters not, the folder is read again.
    const length = view.getUint32(at + 12, true)
    at += 16 + length
    if (mask & IN_Q_OVERFLOW) return false
    for (const path of byWd.get(wd) ?? []) {
      const watch = byPath.get(path)
      if (watch === undefined || watch.wd !== wd) continue
      // A name made, removed or moved: the folder is read again, and a folder found through it is looked at again.
      if (mask & NAMED) watch.changed = true
      // Its own permissions (a folder made unlistable): read again. A name's metadata is its own watch's.
      if (mask & IN_ATTRIB && length === 0) watch.changed = true
      if (mask & GONE) {
        watch.changed = true
        if (mask & IN_IGNORED) drop(path, watch)
      }
    }
  }
  return true
}

/** Forgets `path`'s watch; answers whether another path still leads to the folder watched. */
const detach = (path: string, watch: Watch): boolean => {
  byPath.delete(path)
  const paths = byWd.get(watch.wd)?.filter((other) => other !== path) ?? []
  if (paths.length === 0) byWd.delete(watch.wd)
  else byWd.set(watch.wd, paths)
  return paths.length > 0
}

/** Removes watch `wd` from the kernel. */
const unwatch = (wd: number) => {
  if (fd !== undefined && fd >= 0 && wd >= 0 && Native.numbers !== undefined) Native.syscall(Native.numbers.inotifyRmWatch, fd, wd)
}

/** Forgets `path`'s watch, removing it from the kernel where no other path leads to it. */
const drop = (path: string, watch: Watch) => {
  if (!detach(path, watch)) unwatch(watch.wd)
  watch.wd = -1
}

/** Forgets what `path`'s watch said (its listing is no longer kept). */
export const forget = (path: string): void => {
  const watch = byPath.get(path)
  if (watch !== undefined) drop(path, watch)
}

const parentOf = (path: string): string => {
  const slash = path.lastIndexOf("/")
  return slash <= 0 ? "/" : path.slice(0, slash)
}

/**
 * Whether the listing of `directory` read with watch `id` stands with no look at the folder: that watch still set and
 * silent, and the folder's path known to lead to it this walk, through its parent's (see above).
 */
export const trusted = (directory: string, id: number): boolean => {
  const watch = byPath.get(directory)
  if (watch === undefined || watch.id !== id || watch.wd < 0 || watch.changed) return false
  if (watch.verified === walk) return true
  // Only a watch its path has is trusted in a walk (one dropped or replaced has left byPath, its wd -1).
  const parent = watch.parent
  if (parent === undefined || parent.wd < 0 || parent.verified !== walk) return false
  watch.verified = walk
  counts.trusted++
  return true
}

/** Whether the listing of `directory` read with watch `id` stands, `stat` (an lstat of it now) finding that folder. */
export const confirm = (directory: string, id: number, stat: Stats): boolean => {
  const watch = byPath.get(directory)
  if (watch === undefined || watch.id !== id || watch.wd < 0 || watch.changed || `${stat.dev}:${stat.ino}` !== watch.identity) return false
  found(directory, watch)
  return true
}

/** Notes that `directory` was found at its path now, through its parent as it is now. */
const found = (directory: string, watch: Watch) => {
  const parent = byPath.get(parentOf(directory))
  watch.verified = walk
  watch.parent = parent !== undefined && parent.wd >= 0 && parent.verified === walk ? parent : undefined
}

/**
 * Whether the folder open as `folder`, on `device`, is on a LOCAL file system: asked once a device while the mount
 * table stands (a device number says nothing lasting: one unmounted is given to the next file system mounted, and a
 * mount drops every watch and this with them).
 */
const local = (device: number, folder: number): boolean => {
  let known = localByDevice.get(device)
  if (known === undefined) {
    try {
      known = LOCAL.has(Number(statfsSync(`/proc/self/fd/${folder}`).type))
    } catch {
      known = false
    }
    localByDevice.set(device, known)
  }
  return known
}

/** Opens `directory` as a folder, not through a link; undefined where it cannot be. */
const openFolder = (directory: string): number | undefined => {
  try {
    return openSync(directory, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
  } catch {
    return undefined
  }
}

/**
 * Sets a watch on the folder open as `folder` for `directory` (replacing what its path had), where one can be: the
 * watch's id, and the folder as it is now, read after the watch was set (whatever changes it afterwards is reported).
 */
const watchOpen = (directory: string, folder: number): { readonly id: number | undefined; readonly stat: Stats } => {
  const stat = fstatSync(folder)
  if (!ready() || Native.numbers === undefined) return { id: undefined, stat }
  // Its watch made again (the same, where the folder is the same: the kernel answers the one it has).
  const before = byPath.get(directory)
  const shared = before !== undefined && detach(directory, before)
  let wd = -1
  if (byPath.size < limit() && local(stat.dev, folder))
    wd = Native.syscall(Native.numbers.inotifyAddWatch, fd!, Native.address(Buffer.from(`/proc/self/fd/${folder}\0`)), MASK)
  if (before !== undefined) {
    if (!shared && before.wd !== wd) unwatch(before.wd)
    before.wd = -1
  }
  if (wd < 0) return { id: undefined, stat }
  const watch: Watch = { id: ++counter, wd, identity: `${stat.dev}:${stat.ino}`, changed: false, verified: walk, parent: undefined }
  byPath.set(directory, watch)
  const paths = byWd.get(wd)
  if (paths === undefined) byWd.set(wd, [directory])
  else paths.push(directory)
  found(directory, watch)
  // After the watch: a change made between the two is reported, and seen here too.
  return { id: watch.id, stat: fstatSync(folder) }
}

/** A folder read: what `take` made of its entries, and its watch's id where one was set. */
export interface Read<A> {
  readonly entries: A
  readonly watched: number | undefined
}

/**
 * The entries of `directory`, read through a descriptor of it, its watch set before they are read where it can be
 * (`watched`: the watch's id, which `trusted` and `confirm` take), as `take` makes them of the entries read and of a
 * path to read the same folder at again (while `take` runs): undefined when it cannot be opened as a folder (not one,
 * a link, gone, shut: the caller's reading says which). Throws nothing.
 */
export const read = <A>(directory: string, take: (entries: ReadonlyArray<Dirent>, through: string) => A): Read<A> | undefined => {
  const folder = openFolder(directory)
  if (folder === undefined) return undefined
  try {
    const { id } = watchOpen(directory, folder)
    const through = `/proc/self/fd/${folder}`
    let entries: ReadonlyArray<Dirent>
    try {
      entries = readdirSync(through, { withFileTypes: true })
    } catch {
      // Not through /proc (none mounted): by its path, unwatched.
      forget(directory)
      return { entries: take(readdirSync(directory, { withFileTypes: true }), directory), watched: undefined }
    }
    return { entries: take(entries, through), watched: id }
  } catch {
    forget(directory)
    return undefined
  } finally {
    closeSync(folder)
  }
}

/**
 * Watches `directory` without reading it again, where its kept listing stands by its stamp: `unchanged` says of the
 * folder as it is once the watch is set whether it is the one listed, unchanged since (its stamp). The watch's id;
 * undefined where no watch can be set, or the folder is not the one listed (then nothing is watched).
 */
export const adopt = (directory: string, unchanged: (stat: Stats) => boolean): number | undefined => {
  counts.adopted++
  const folder = openFolder(directory)
  if (folder === undefined) return undefined
  try {
    const { id, stat } = watchOpen(directory, folder)
    if (id === undefined || unchanged(stat)) return id
    forget(directory)
    return undefined
  } catch {
    forget(directory)
    return undefined
  } finally {
    closeSync(folder)
  }
}

/** How many folders are watched now (for tests and figures). */
export const size = (): number => byPath.size

/** Whether `directory` is watched now (for tests). */
export const watching = (directory: string): boolean => (byPath.get(directory)?.wd ?? -1) >= 0

/**
 * How many listings were trusted by their watches alone, no look at the folder, and how many kept listings a watch
 * was tried on without reading them again (for tests and figures).
 */
export const counts = { trusted: 0, adopted: 0 }
