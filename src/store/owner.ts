export * as Owner from "./owner"

// Identifies the process that began a call or holds a lock. Whether a call recorded in the store is still running
// is told by its lease (./lease), which hosts sharing a store can all read; the process check here answers only on
// the owner's own host, for file locks and for records kept before leases, and ends a lease early where it can be
// sure: an owner on this kernel and in this PID namespace whose process no longer runs (core killed and started
// again on one machine). A pid alone can be reused, so the identity includes the process start time where the
// platform exposes it (Linux /proc).

import { readFileSync, statSync } from "node:fs"
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
 * The kernel this process runs on (its boot id) and the PID namespace it sees, where Linux tells them: two
 * processes that share both number each other alike, so one can check whether the other still runs. Empty
 * elsewhere.
 */
const machine = (): string => {
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()
    return `${boot}/${statSync("/proc/self/ns/pid").ino}`
  } catch {
    return ""
  }
}

/** This process's kernel and PID namespace (see `machine`): the same for every process that numbers others alike. */
export const MACHINE = machine()

/**
 * This process's identity: host, pid, start time, a random part (so processes on hosts that share a name and a
 * pid, containers, are never taken for one another) and its machine (see `machine`). `isAlive` reads the first
 * three; `isGone` the machine too.
 */
export const current: string = `${HOST}:${process.pid}:${startTime(process.pid)}:${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}:${MACHINE}`

/**
 * Whether the process identified by `owner` has certainly stopped: it ran on this kernel, in this PID namespace,
 * and its pid no longer runs the process that began (so its lease, however long it has left, renews no more). On
 * another host or namespace nothing can be known, and only its lease tells.
 */
export const isGone = (owner: string): boolean => {
  const here = onThisMachine(owner)
  return here !== undefined && !runs(here.pid, here.start)
}

/** The pid and start time of `owner` when it is another process on this kernel and in this PID namespace. */
const onThisMachine = (owner: string): { readonly pid: number; readonly start: string } | undefined => {
  const [, pidText, start, , ...rest] = owner.split(":")
  if (MACHINE === "" || rest.join(":") !== MACHINE || owner === current) return undefined
  const pid = Number(pidText)
  return Number.isInteger(pid) && pid > 0 ? { pid, start: start ?? "" } : undefined
}

/**
 * Whether the process identified by `owner`, another process than this one, certainly still runs: it ran on this
 * kernel, in this PID namespace, and its pid still runs the process that began. Its lease may have lapsed without
 * its call being abandoned: stopped (SIGSTOP, a terminal's Ctrl-Z) or its event loop held up past a lease, it has
 * not renewed, and it will go on when it can. On another host or namespace nothing can be known.
 */
export const runsHere = (owner: string): boolean => {
  const here = onThisMachine(owner)
  // Without its start time, a pid running now may be another process: not certain.
  return here !== undefined && here.start !== "" && runs(here.pid, here.start)
}

/** Whether `owner` is this process, or another that certainly still runs on this machine (`runsHere`). */
export const stillRuns = (owner: string): boolean => owner === current || runsHere(owner)

/**
 * Whether the process identified by `owner` is still running. A process on another host cannot be checked and
 * counts as not running, so a caller never waits on it forever.
 */
export const isAlive = (owner: string): boolean => {
  const [host, pidText, start] = owner.split(":")
  const pid = Number(pidText)
  if (host !== HOST || !Number.isInteger(pid) || pid <= 0) return false
  if (owner === current) return true
  return runs(pid, start ?? "")
}

/** Whether `pid` runs the process that started at `start` (clock ticks since boot; "" when unknown). */
const runs = (pid: number, start: string): boolean => {
  try {
    process.kill(pid, 0)
  } catch (cause) {
    // EPERM: it exists but belongs to someone else.
    if ((cause as NodeJS.ErrnoException).code !== "EPERM") return false
  }
  const now = startTime(pid)
  return now !== "dead" && (start === "" || now === "" || now === start)
}
