// Looking at processes from tests: whether a pid still runs (a zombie has ended; it only waits to be reaped),
// and the pids a command printed.

import { existsSync, readFileSync } from "node:fs"

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

/** The numbers in a command's output, in order (the pids it echoed). */
export const pidsIn = (text: string): Array<number> => [...text.matchAll(/\d+/g)].map((match) => Number(match[0]))
