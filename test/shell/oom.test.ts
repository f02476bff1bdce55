// A command the kernel's OOM killer ended is told so: the model read only "Killed by SIGKILL", and nothing said the
// machine had run out of memory. Run in a memory cgroup of its own (cgroup v1 or v2, where this process may make
// one: root in a container, or a delegated cgroup), so that what runs out is the cgroup's memory, not the machine's.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { tempDir } from "../support/temp"

const CHILD = join(import.meta.dir, "user-child.ts")
/** Room for the child's Bun and a supervisor's; the command asks for far more. */
const LIMIT = 700 * 1024 * 1024

/** A memory cgroup made beneath this process's own, with LIMIT set, or undefined where none can be made. */
const cgroup = (): { readonly path: string; readonly remove: () => void } | undefined => {
  const lines = readFileSync("/proc/self/cgroup", "utf8").split("\n")
  const v1 = lines.find((line) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(line))
  const base = v1 !== undefined ? join("/sys/fs/cgroup/memory", v1.slice(v1.lastIndexOf(":") + 1)) : join("/sys/fs/cgroup", lines.find((line) => line.startsWith("0::"))?.slice(3) ?? "/")
  const path = join(base, `core-oom-${process.pid}`)
  try {
    mkdirSync(path)
    writeFileSync(join(path, v1 !== undefined ? "memory.limit_in_bytes" : "memory.max"), String(LIMIT))
    return { path, remove: () => rmdirSync(path) }
  } catch {
    if (existsSync(path)) rmdirSync(path)
    return undefined
  }
}

const probe = cgroup()
probe?.remove()

/** Runs `command` through core's shell in a child process placed in a fresh memory cgroup. */
const inCgroup = (command: string) => {
  const made = cgroup()!
  try {
    const child = Bun.spawnSync(["bash", "-c", `echo $$ > ${made.path}/cgroup.procs && exec "$@"`, "bash", process.execPath, CHILD, tempDir("core-oom-runs-"), tempDir("core-oom-cwd-"), command], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tempDir("core-oom-home-") },
    })
    const line = child.stdout.toString().trim().split("\n").pop() ?? ""
    if (!line.startsWith("{")) throw new Error(`the child failed: ${child.stderr.toString()}`)
    return JSON.parse(line)
  } finally {
    made.remove()
  }
}

describe.skipIf(probe === undefined)(`a command out of memory${probe === undefined ? " (SKIPPED: no memory cgroup can be made here)" : ""}`, () => {
  test("a process the kernel's OOM killer ended while it ran: said to be out of memory; one killed otherwise is not", () => {
    const starved = inCgroup(`exec python3 -c 'x = b"x" * (3 * 1024 * 1024 * 1024)'`)
    expect({ signal: starved.signal, outOfMemory: starved.outOfMemory }).toEqual({ signal: "SIGKILL", outOfMemory: true })
    // A process the command started, ended while the command went on.
    const child = inCgroup(`python3 -c 'x = b"x" * (3 * 1024 * 1024 * 1024)'; echo went on`)
    expect({ stdout: child.stdout, exitCode: child.exitCode, outOfMemory: child.outOfMemory }).toEqual({ stdout: "went on\n", exitCode: 0, outOfMemory: true })
    const killed = inCgroup("kill -9 $$")
    expect({ signal: killed.signal, outOfMemory: killed.outOfMemory }).toEqual({ signal: "SIGKILL", outOfMemory: false })
  }, 60_000)
})
