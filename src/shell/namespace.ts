export * as Namespace from "./namespace"

// The private mount namespace of one command, in which core's own configuration in its Location is mounted
// read-only (./guard says which paths). Used by the supervisor only, before it applies Landlock (which forbids
// mounting). Two ways in: with CAP_SYS_ADMIN (core run by root), the thread that spawns the command unshares its
// mount namespace when the order comes; without it, the supervisor enters a user namespace of its own (mapping only
// its own uid and gid) and a mount namespace owned by it, first thing, while it still has a single thread (the
// kernel refuses a new user namespace to a process with several): ./launch does that.

import { Native } from "./native"

/** How this supervisor can make a mount namespace: it may unshare one, it is in one of its own, or it cannot. */
export type Way = "mount" | "user" | "none"

const ENOENT = 2

/**
 * Mounts each of `paths` read-only onto itself, in a mount namespace of this thread's own (nothing propagates
 * out). A path that does not exist is skipped. Answers undefined, or why it could not (then some or none of the
 * paths are read-only; the command still runs).
 */
export const protect = (way: Way, paths: ReadonlyArray<string>): string | undefined => {
  if (way === "none") return "this process cannot make a mount namespace"
  if (way === "mount") {
    const unshared = Native.unshare(Native.CLONE_NEWNS)
    if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  }
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
  // forbids it too).
  if (way === "mount") Native.prctl(Native.PR_CAPBSET_DROP, Native.CAP_SYS_ADMIN)
  return undefined
}
