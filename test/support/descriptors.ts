// What this process holds open, read from /proc: for tests that a file or directory is held, and let go.

import { readdirSync, readlinkSync } from "node:fs"

/** How many of this process's file descriptors are open on `path` (as /proc/self/fd names it). */
export const openOn = (path: string): number =>
  readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path
    } catch {
      return false
    }
  }).length
