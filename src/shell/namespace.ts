export * as Namespace from "./namespace"

// The private mount namespace of one command, in which core's own configuration in its Location is mounted
// read-only (./guard says which paths), and /dev/shm and /dev/pts are empty ones of its own. Used by the supervisor only, before it applies Landlock (which forbids
// mounting). It needs CAP_SYS_ADMIN over its mount namespace: core run by root has it; otherwise core starts the
// supervisor in a user namespace of its own (./supervised, through `unshare --user --map-current-user --mount
// --keep-caps`), which maps only the user's own uid and gid and gives the supervisor that capability there alone.
// Bun cannot enter a user namespace itself: the kernel allows that only to a process with a single thread.

import { Native } from "./native"

/** Whether this supervisor can make a mount namespace (it holds CAP_SYS_ADMIN over its own). */
export type Way = "mount" | "none"

const ENOENT = 2

/**
 * Mounts each of `paths` read-only onto itself, in a mount namespace of this thread's own (nothing propagates
 * out). A path that does not exist is skipped. Answers undefined, or why it could not (then some or none of the
 * paths are read-only; the command still runs).
 */
export const protect = (way: Way, paths: ReadonlyArray<string>): string | undefined => {
  if (way === "none") return "this process cannot make a mount namespace"
  const unshared = Native.unshare(Native.CLONE_NEWNS)
  if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  const privately = Native.mount(null, "/", Native.MS_REC | Native.MS_PRIVATE)
  if (privately !== 0) return `making the mounts private failed (errno ${privately})`
  for (const path of paths) {
    const flags = Native.mountFlags(path)
    const bound = Native.mount(path, path, Native.MS_BIND | Native.MS_REC)
    if (bound === ENOENT) continue
    if (bound !== 0) return `binding ${path} failed (errno ${bound})`
    const remounted = Native.mount(null, path, Native.MS_REMOUNT | Native.MS_BIND | Native.MS_RDONLY | flags)
    if (remounted !== 0) return `making ${path} read-only failed (errno ${remounted})`
  }
  // Run by root, the command would otherwise hold CAP_SYS_ADMIN and could unmount them (Landlock, where applied,
  // forbids it too). Run by another user, it holds no capability (the supervisor clears its ambient ones).
  Native.prctl(Native.PR_CAPBSET_DROP, Native.CAP_SYS_ADMIN)
  return undefined
}

/** Where POSIX shared memory and semaphores live (sem_open, shm_open: Python's multiprocessing, for one). */
export const SHARED_MEMORY = "/dev/shm"

/**
 * Mounts an empty tmpfs of this thread's own on /dev/shm, in a mount namespace of its own: the command may then
 * make semaphores and shared memory, while the host's /dev/shm (other programs' shared memory) stays out of its
 * reach. Answers undefined, or why it could not (then /dev/shm is left as it is, not writable to the command).
 */
export const privateSharedMemory = (way: Way): string | undefined => {
  if (way === "none") return "this process cannot make a mount namespace"
  const unshared = Native.unshare(Native.CLONE_NEWNS)
  if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  const privately = Native.mount(null, "/", Native.MS_REC | Native.MS_PRIVATE)
  if (privately !== 0) return `making the mounts private failed (errno ${privately})`
  const mounted = Native.mount("tmpfs", SHARED_MEMORY, Native.MS_NOSUID | Native.MS_NODEV, "tmpfs", "mode=1777")
  return mounted === 0 ? undefined : `mounting ${SHARED_MEMORY} failed (errno ${mounted})`
}

/**
 * Mounts a devpts instance of this thread's own on /dev/pts, with its ptmx on /dev/ptmx, in a mount namespace of
 * its own: the command may still open terminals of its own (`script`, `pty.openpty()`), while the user's terminals
 * (reading one steals what the user types there) are out of its sight. Answers undefined, or why it could not.
 */
export const privateTerminals = (way: Way): string | undefined => {
  if (way === "none") return "this process cannot make a mount namespace"
  const unshared = Native.unshare(Native.CLONE_NEWNS)
  if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  const privately = Native.mount(null, "/", Native.MS_REC | Native.MS_PRIVATE)
  if (privately !== 0) return `making the mounts private failed (errno ${privately})`
  const flags = Native.MS_NOSUID | Native.MS_NOEXEC
  const mounted = Native.mount("devpts", "/dev/pts", flags, "devpts", "newinstance,ptmxmode=0666,mode=0620")
  if (mounted !== 0) return `mounting /dev/pts failed (errno ${mounted})`
  const bound = Native.mount("/dev/pts/ptmx", "/dev/ptmx", Native.MS_BIND)
  return bound === 0 ? undefined : `binding /dev/ptmx failed (errno ${bound})`
}
