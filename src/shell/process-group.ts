export * as ProcessGroup from "./process-group"

// Ending a process group and proving it ended: SIGTERM to the whole group, SIGKILL after a grace period, then
// SIGKILL again until no member is left (zombies excepted: they have ended and only wait to be reaped) or a bound
// is reached. Membership is read from /proc, because a signal's success says nothing about grandchildren.
// Linux only, like the rest of the producer; this module must not spawn anything.

import { readdirSync, readFileSync } from "node:fs"

/** How long members get to exit after SIGTERM before SIGKILL (DESIGN §9). */
export const GRACE_MS = 3000
/** How often membership is checked while waiting. */
const POLL_MS = 20
/** How many SIGKILL rounds before the remaining members are reported as survivors. */
const KILL_ROUNDS = 50

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** The groups this process started and has not yet ended: what a forced exit must kill first. */
const live = new Set<number>()

/** The supervisors running: a forced exit tells each to end its command at once (they die with core anyway). */
const supervisors = new Set<number>()

export const trackSupervisor = (pid: number): void => {
  supervisors.add(pid)
}

export const untrackSupervisor = (pid: number): void => {
  supervisors.delete(pid)
}

/**
 * Processes this process started in its own group (rg, which starts nothing itself, so needs no group of its own),
 * until they have ended: a forced exit kills each of them too.
 */
const singles = new Set<number>()

export const trackProcess = (pid: number): void => {
  singles.add(pid)
}

export const untrackProcess = (pid: number): void => {
  singles.delete(pid)
}

/** Remembers a group this process started, until `terminate` has ended it. */
export const track = (pgid: number): void => {
  live.add(pgid)
}

/**
 * SIGKILLs every group this process started and has not ended, at once and synchronously: for a forced exit (a
 * second Ctrl-C) that cannot wait for the graceful path, so that no process outlives core.
 */
export const killAllNow = (): void => {
  // SIGHUP, never SIGKILL: a supervisor killed outright could not end what it supervises.
  for (const pid of supervisors) {
    try {
      process.kill(pid, "SIGHUP")
    } catch {
      // already gone
    }
  }
  for (const pgid of live) {
    try {
      process.kill(-pgid, "SIGKILL")
    } catch {
      // already gone, or not ours to signal: nothing more can be done on the way out
    }
  }
  live.clear()
  for (const pid of singles) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // already gone
    }
  }
  singles.clear()
}

/** Sends `name` to every member of the group; false when the group has no member left at all. */
export const signal = (pgid: number, name: NodeJS.Signals | 0): boolean => {
  try {
    process.kill(-pgid, name)
    return true
  } catch (cause) {
    const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
    if (code === "ESRCH") return false
    // EPERM: members exist that we may not signal (a setuid program); they are reported as survivors.
    if (code === "EPERM") return true
    throw cause
  }
}

/** The live (not zombie) members of the group, from /proc/<pid>/stat. */
export const members = (pgid: number): Array<number> => {
  const found: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    const code = entry.charCodeAt(0)
    if (code < 48 || code > 57) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "latin1")
    } catch {
      continue // ended while we looked
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so fields count from the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    if (Number(fields[2]) === pgid && fields[0] !== "Z") found.push(Number(entry))
  }
  return found
}

/** Resolves true once the group has no live member, or false after `ms`. */
const emptied = async (pgid: number, ms: number): Promise<boolean> => {
  const deadline = performance.now() + ms
  for (;;) {
    if (!signal(pgid, 0) || members(pgid).length === 0) return true
    if (performance.now() >= deadline) return false
    await sleep(POLL_MS)
  }
}

/**
 * Ends every process of the group: SIGTERM, then SIGKILL after `graceMs`, repeated until none is left. Answers
 * the pids that could not be killed (empty unless a process is stuck in the kernel).
 */
export const terminate = async (pgid: number, graceMs = GRACE_MS): Promise<ReadonlyArray<number>> => {
  const survivors = await end(pgid, graceMs)
  if (survivors.length === 0) live.delete(pgid)
  return survivors
}

const end = async (pgid: number, graceMs: number): Promise<ReadonlyArray<number>> => {
  // The common case, a group that already ended, costs one system call.
  if (!signal(pgid, "SIGTERM")) return []
  if (await emptied(pgid, graceMs)) return []
  for (let round = 0; round < KILL_ROUNDS; round++) {
    if (!signal(pgid, "SIGKILL")) return []
    if (await emptied(pgid, POLL_MS)) return []
  }
  return members(pgid)
}

/** One process as /proc/<pid>/stat shows it. */
export interface Process {
  readonly pid: number
  readonly name: string
  readonly state: string
  readonly ppid: number
  /** Start time in clock ticks since boot: with the pid, it names one process even after the pid is reused. */
  readonly start: number
}

/** /proc/<pid>/stat read, or undefined when the process is gone. */
export const stat = (pid: number): Process | undefined => {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1")
  } catch {
    return undefined
  }
  const close = text.lastIndexOf(")")
  const fields = text.slice(close + 2).split(" ")
  return {
    pid,
    name: text.slice(text.indexOf("(") + 1, close),
    state: fields[0]!,
    ppid: Number(fields[1]),
    start: Number(fields[19]),
  }
}

/** Every process now running, by pid. */
const processes = (): Map<number, Process> => {
  const found = new Map<number, Process>()
  for (const entry of readdirSync("/proc")) {
    const code = entry.charCodeAt(0)
    if (code < 48 || code > 57) continue
    const process_ = stat(Number(entry))
    if (process_ !== undefined) found.set(process_.pid, process_)
  }
  return found
}

/** Whether the kernel lists each thread's children (/proc/PID/task/TID/children, CONFIG_PROC_CHILDREN). */
let childrenListed: boolean | undefined

/**
 * The children of `pid` (zombies among them), from the list the kernel keeps for each of its threads: a process's
 * children are those of every thread, and an orphan a subreaper adopts becomes the child of one of them. Reads a
 * few small files, however many processes the machine runs. Empty once `pid` is gone; undefined where the kernel
 * keeps no such list.
 */
export const children = (pid: number): Array<number> | undefined => {
  if (childrenListed === undefined) {
    try {
      readFileSync("/proc/self/task/" + readdirSync("/proc/self/task")[0] + "/children", "latin1")
      childrenListed = true
    } catch {
      childrenListed = false
    }
  }
  if (!childrenListed) return undefined
  const found: Array<number> = []
  let threads: Array<string>
  try {
    threads = readdirSync(`/proc/${pid}/task`)
  } catch {
    return found
  }
  for (const thread of threads) {
    let list: string
    try {
      list = readFileSync(`/proc/${pid}/task/${thread}/children`, "latin1")
    } catch {
      continue // the thread ended while we looked
    }
    for (const child of list.trim().split(" ")) if (child !== "") found.push(Number(child))
  }
  return found
}

/**
 * The live (not zombie) descendants of `root`. Only a subreaper's descendants stay its descendants whatever they
 * do (setsid, double fork); for any other root, orphans are lost to init. Walked down through each process's
 * children (`children`), so it costs what the tree holds rather than every process of the machine; where the kernel
 * lists no children, every process's parent link is read from /proc.
 */
export const descendants = (root: number): Array<Process> => {
  if (children(root) === undefined) return linked(root)
  const found: Array<Process> = []
  const seen = new Set<number>([root])
  const queue = [root]
  while (queue.length > 0) {
    for (const pid of children(queue.pop()!) ?? []) {
      if (seen.has(pid)) continue
      seen.add(pid)
      const process_ = stat(pid)
      if (process_ === undefined) continue
      queue.push(pid)
      if (process_.state !== "Z") found.push(process_)
    }
  }
  return found
}

/** `descendants`, from the parent link of every process in /proc. */
const linked = (root: number): Array<Process> => {
  const all = processes()
  const byParent = new Map<number, Array<Process>>()
  for (const process_ of all.values()) {
    const siblings = byParent.get(process_.ppid)
    if (siblings === undefined) byParent.set(process_.ppid, [process_])
    else siblings.push(process_)
  }
  const found: Array<Process> = []
  const queue = [root]
  while (queue.length > 0) {
    for (const child of byParent.get(queue.pop()!) ?? []) {
      if (child.pid === root) continue
      queue.push(child.pid)
      if (child.state !== "Z") found.push(child)
    }
  }
  return found
}
