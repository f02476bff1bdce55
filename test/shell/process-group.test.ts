// The process tree as the supervisor reads it (ProcessGroup.children, ProcessGroup.descendants): through the lists
// of children the kernel keeps for each thread, checked against every process's parent link in /proc. Real
// processes: bash and python3 trees, a zombie, a child forked by a thread that is not the main one.

import { afterEach, describe, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { ProcessGroup } from "../../src/shell/process-group"

const python = Bun.which("python3")
const listed = (() => {
  try {
    readFileSync(`/proc/self/task/${process.pid}/children`)
    return true
  } catch {
    return false
  }
})()

const started: Array<Bun.Subprocess> = []

afterEach(() => {
  for (const child of started.splice(0)) {
    try {
      process.kill(-child.pid, "SIGKILL")
    } catch {
      // gone already
    }
  }
})

/** Starts `argv` in a group of its own and waits for its first line on stdout (it says it is ready). */
const start = async (argv: ReadonlyArray<string>) => {
  const child = Bun.spawn([...argv], { stdout: "pipe", stderr: "inherit", detached: true })
  started.push(child)
  const reader = child.stdout.getReader()
  await reader.read()
  reader.releaseLock()
  return child
}

/** Every process's parent link, read from /proc/PID/stat: the tree below `root`, zombies included. */
const linked = (root: number) => {
  const parents = new Map<number, number>()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "latin1")
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
    } catch {
      // ended while we looked
    }
  }
  const below = (pid: number): Array<number> =>
    [...parents].filter(([, parent]) => parent === pid).flatMap(([child]) => [child, ...below(child)])
  return below(root).sort((a, b) => a - b)
}

const sorted = (pids: ReadonlyArray<number>) => [...pids].sort((a, b) => a - b)

describe.skipIf(!listed || python === null)("the process tree through the kernel's lists of children", () => {
  test("a tree three deep: its children, and every descendant as /proc's parent links have it", async () => {
    const tree = await start([
      "bash",
      "-c",
      "sleep 60 & bash -c 'sleep 60 & sleep 60 & wait' & sleep 0.3; echo up; wait",
    ])
    const below = linked(tree.pid)
    expect(below).toHaveLength(4)
    const children = ProcessGroup.children(tree.pid)!
    expect(sorted(children)).toEqual(below.filter((pid) => ProcessGroup.stat(pid)!.ppid === tree.pid))
    expect(children).toHaveLength(2)
    const descendants = ProcessGroup.descendants(tree.pid)
    expect(sorted(descendants.map((each) => each.pid))).toEqual(below)
    expect(descendants.filter((each) => each.name === "sleep")).toHaveLength(3)
  })

  test("a zombie is a child, and no live descendant", async () => {
    const parent = await start([
      python!,
      "-c",
      "import os, time\nchild = os.fork()\nif child == 0: os._exit(0)\ntime.sleep(0.3)\nprint(child, flush=True)\ntime.sleep(60)",
    ])
    const children = ProcessGroup.children(parent.pid)!
    expect(children).toHaveLength(1)
    expect(ProcessGroup.stat(children[0]!)!.state).toBe("Z")
    expect(ProcessGroup.descendants(parent.pid)).toEqual([])
  })

  test("a child forked by a thread other than the main one is its process's child", async () => {
    const parent = await start([
      python!,
      "-c",
      [
        "import os, threading, time",
        "forked = threading.Event()",
        "def fork():",
        "    if os.fork() == 0:",
        "        time.sleep(60)",
        "        os._exit(0)",
        "    forked.set()",
        "    time.sleep(60)",
        "threading.Thread(target=fork, daemon=True).start()",
        "forked.wait()",
        "print('up', flush=True)",
        "time.sleep(60)",
      ].join("\n"),
    ])
    const below = linked(parent.pid)
    expect(below).toHaveLength(1)
    // Listed by the thread that forked it, not by the main thread.
    expect(readFileSync(`/proc/${parent.pid}/task/${parent.pid}/children`, "latin1").trim()).toBe("")
    expect(ProcessGroup.children(parent.pid)).toEqual(below)
    expect(ProcessGroup.descendants(parent.pid).map((each) => each.pid)).toEqual(below)
  })

  test("a process that is gone has no children", async () => {
    const gone = Bun.spawn(["true"])
    await gone.exited
    expect(ProcessGroup.children(gone.pid)).toEqual([])
    expect(ProcessGroup.descendants(gone.pid)).toEqual([])
  })
})
