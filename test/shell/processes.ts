// Looking at processes from tests: whether a pid still runs (a zombie has ended; it only waits to be reaped),
// the pids a command printed, a command whose children detach every way a shell offers, and the processes a name
// runs as.

import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs"

/** Whether a process is still running: present in /proc and not a zombie. */
export const alive = (pid: number): boolean => {
  const stat = `/proc/${pid}/stat`
  if (!existsSync(stat)) return false
  try {
    const text = readFileSync(stat, "latin1")
    return text.slice(text.lastIndexOf(")") + 2, text.lastIndexOf(")") + 3) !== "Z"
  } catch {
    return false
  }
}

/**
 * Waits (up to 5 s) until `pid` runs the program `name`: a shell forks before it execs, so a pid it printed may
 * still be a copy of the shell for a moment.
 */
export const running = async (pid: number, name: string): Promise<boolean> => {
  for (let tries = 0; tries < 250; tries++) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "latin1").trim() === name) return true
    } catch {
      return false
    }
    await Bun.sleep(20)
  }
  return false
}

/** The numbers in a command's output, in order (the pids it echoed). */
export const pidsIn = (text: string): Array<number> => [...text.matchAll(/\d+/g)].map((match) => Number(match[0]))

/**
 * Starts four sleepers that each leave the command's process group their own way (setsid, job control, a double
 * fork, setpgrp), writes their pids to `pids` (one per line, the pid of the sleeping process itself) and waits
 * until all four are written.
 */
export const DETACHING = [
  ": > pids",
  "setsid sh -c 'echo $$ >> pids; exec sleep 1000' &",
  "set -m; sh -c 'echo $$ >> pids; exec sleep 1000' & set +m",
  "( sh -c 'echo $$ >> pids; exec sleep 1000' & )",
  `perl -e 'setpgrp(0,0); open(F,">>pids"); print F "$$\\n"; close F; exec "sleep","1000"' &`,
  'while [ "$(wc -l < pids)" -lt 4 ]; do :; done',
].join("\n")

/**
 * The host's pids of processes a sandboxed command printed: each command has a PID namespace of its own, so `$$`
 * and `$!` number its processes as that namespace does. Found by their working directory (`cwd`, unique to the
 * test) and the last pid their NSpid line gives; a pid already the host's (no namespace) is answered as it is.
 */
export const hostPids = (pids: ReadonlyArray<number>, cwd: string): Array<number> => {
  const real = realpathSync(cwd)
  const found = new Map<number, number>()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) !== real) continue
      const line = /^NSpid:\s*(.*)$/m.exec(readFileSync(`/proc/${entry}/status`, "latin1"))?.[1]?.trim().split(/\s+/)
      if (line === undefined) continue
      found.set(Number(line.at(-1)), Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return pids.map((pid) => found.get(pid) ?? pid)
}

/**
 * Whether a process a command printed still runs, numbered as the command numbers it (`$$`, `$!`: its own PID
 * namespace's where it has one, else the host's): a running, non-zombie process working in `cwd` (unique to the
 * test) whose innermost pid is `pid`. Once the namespace is gone, none is.
 */
export const aliveIn = (cwd: string, pid: number): boolean => {
  const real = realpathSync(cwd)
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) !== real) continue
      const innermost = /^NSpid:\s*(.*)$/m.exec(readFileSync(`/proc/${entry}/status`, "latin1"))?.[1]?.trim().split(/\s+/).at(-1)
      if (Number(innermost) === pid && alive(Number(entry))) return true
    } catch {
      // gone meanwhile
    }
  }
  return false
}

/** The live processes whose command line starts with `name`. */
export const named = (name: string) =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "latin1").startsWith(`${name}\0`)
      } catch {
        return false
      }
    })
