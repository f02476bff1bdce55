export * as Owner from "./owner"

// Identifies the process that began a call or holds a lock. Whether a call recorded in the store is still running
// is told by its lease (./lease), which hosts sharing a store can all read; the process check here answers only on
// the owner's own host, for file locks and for records kept before leases. A pid alone can be reused, so the
// identity includes the process start time where the platform exposes it (Linux /proc).

import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { hostname } from "node:os"

/** The start time of a process in clock ticks since boot, or "" where it cannot be read. */
const startTime = (pid: number): string => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the parenthesised command name start at field 3 (state); starttime is field 22.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return fields[0] === "Z" || fields[0] === "X" ? "dead" : (fields[19] ?? "")
  } catch {
    return ""
  }
}

const HOST = hostname()

/**
 * This process's identity: host, pid, start time and a random part, so processes on hosts that share a name and
 * a pid (containers) are never taken for one another. `isAlive` reads the first three.
 */
export const current: string = `${HOST}:${process.pid}:${startTime(process.pid)}:${randomBytes(6).toString("hex")}`

/**
 * Whether the process identified by `owner` is still running. A process on another host cannot be checked and
 * counts as not running, so a caller never waits on it forever.
 */
export const isAlive = (owner: string): boolean => {
  const [host, pidText, start] = owner.split(":")
  const pid = Number(pidText)
  if (host !== HOST || !Number.isInteger(pid) || pid <= 0) return false
  if (owner === current) return true
  try {
    process.kill(pid, 0)
  } catch (cause) {
    // EPERM: it exists but belongs to someone else.
    if ((cause as NodeJS.ErrnoException).code !== "EPERM") return false
  }
  const now = startTime(pid)
  return now !== "dead" && (start === "" || now === "" || now === start)
}
