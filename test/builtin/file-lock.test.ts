// The cross-process commit lock of the editing built-ins: taken and given back through the directory it was made
// in, held open meanwhile, so a directory on the path swapped for a symlink during the commit neither leaves the
// lock behind (which would stall every later change of that file) nor removes a file of the same name elsewhere.

import { describe, expect, test } from "bun:test"
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, symlinkSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { FileLock } from "../../src/builtin/file-lock"
import { Owner } from "../../src/store/owner"
import { harness } from "../support/builtin"
import { tempDir } from "../support/temp"

describe("FileLock.committing", () => {
  test("gives its lock back in the directory it took it in, though that directory was swapped for a symlink", async () => {
    const root = realpathSync(tempDir())
    const inside = join(root, "d")
    const outside = join(root, "outside")
    mkdirSync(inside)
    mkdirSync(outside)
    const file = join(inside, "a.txt")
    writeFileSync(file, "x\n")
    // A lock-named file outside, as a symlink swap would lead a path-based removal to it.
    writeFileSync(join(outside, ".a.txt.core-lock"), "someone else's\n")
    await Effect.runPromise(
      FileLock.committing(
        [file],
        "d/a.txt",
        Effect.sync(() => {
          expect(existsSync(FileLock.lockPath(file))).toBe(true)
          renameSync(inside, join(root, "d.real"))
          symlinkSync(outside, inside)
        }),
      ),
    )
    expect(existsSync(join(root, "d.real", ".a.txt.core-lock"))).toBe(false)
    expect(existsSync(join(outside, ".a.txt.core-lock"))).toBe(true)
  })

  test("a lock made in a directory swapped away is not in the way of the next change there", async () => {
    const root = realpathSync(tempDir())
    const inside = join(root, "d")
    mkdirSync(inside)
    const file = join(inside, "a.txt")
    writeFileSync(file, "x\n")
    const moved = join(root, "moved")
    await Effect.runPromise(FileLock.committing([file], "d/a.txt", Effect.sync(() => renameSync(inside, moved))))
    renameSync(moved, inside)
    // A lock left there would name this live process, and the next change would wait for it in vain.
    expect(existsSync(FileLock.lockPath(file))).toBe(false)
    const committed = await Effect.runPromise(FileLock.committing([file], "d/a.txt", Effect.succeed("committed")))
    expect(committed).toBe("committed")
  })
})

describe("FileLock.retried", () => {
  test("makes a change again while its attempt finds a file changed, and answers the first attempt that is not", async () => {
    const tries: Array<number> = []
    const result = await Effect.runPromise(
      FileLock.retried(
        ["/nowhere/a.txt"],
        (attempt) =>
          Effect.sync(() => {
            tries.push(attempt)
            return attempt < 3 ? FileLock.CHANGED : `written on try ${attempt}`
          }),
        () => "exhausted",
      ),
    )
    expect(result).toBe("written on try 3")
    expect(tries).toEqual([1, 2, 3])
  })

  test("gives up with its failure after MAX_ATTEMPTS attempts that all found a file changed", async () => {
    const tries: Array<number> = []
    const exit = await Effect.runPromise(
      Effect.exit(
        FileLock.retried(
          ["/nowhere/a.txt"],
          (attempt) => Effect.sync(() => (tries.push(attempt), FileLock.CHANGED)),
          () => "a.txt kept changing",
        ),
      ),
    )
    expect(exit).toMatchObject({ _tag: "Failure" })
    expect(String(exit)).toContain("a.txt kept changing")
    expect(tries).toEqual(Array.from({ length: FileLock.MAX_ATTEMPTS }, (_, index) => index + 1))
  })

  test("runs every attempt alone among the changes of this process to the same file", async () => {
    let running = 0
    let most = 0
    const change = FileLock.retried(
      ["/nowhere/shared.txt"],
      (attempt) =>
        Effect.gen(function* () {
          running++
          most = Math.max(most, running)
          yield* Effect.yieldNow
          running--
          return attempt < 2 ? FileLock.CHANGED : "done"
        }),
      () => "exhausted",
    )
    expect(await Effect.runPromise(Effect.all([change, change, change], { concurrency: "unbounded" }))).toEqual(["done", "done", "done"])
    expect(most).toBe(1)
  })
})

// What a model can leave at a lock file's path with one bash call. A FIFO there blocked the read of the lock, in a
// step no cancel stopped: the change, its cancel, a sidecar's shutdown waited forever. A lock left empty made every
// change of the file wait its whole 10 s and then blame "another core process".
describe("a lock file's path holding what no core made", () => {
  test("a FIFO or a directory fails the change at once, saying so, with nothing changed", async () => {
    const h = harness({ files: { "c.txt": "c\n", "d.txt": "d\n" } })
    spawnSync("mkfifo", [join(h.directory, ".c.txt.core-lock")])
    mkdirSync(join(h.directory, ".d.txt.core-lock"))
    for (const name of ["c.txt", "d.txt"]) {
      const started = performance.now()
      const { settlement } = await h.settle("edit", { filePath: name, oldString: name[0]!, newString: "x" })
      expect(performance.now() - started).toBeLessThan(5_000)
      expect(settlement).toMatchObject({ status: "error", error: { kind: "failure" } })
      expect(settlement.error?.message).toContain("holds something core did not make")
      expect(readFileSync(join(h.directory, name), "utf8")).toBe(`${name[0]}\n`)
    }
    expect(readdirSync(h.directory).filter((name) => name.endsWith(".tmp"))).toEqual([])
  })

  test("a lock left empty for longer than a core takes to write one is stale: the change goes through", async () => {
    const h = harness({ files: { "e.txt": "e\n" } })
    const lock = join(h.directory, ".e.txt.core-lock")
    writeFileSync(lock, "")
    utimesSync(lock, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000))
    const started = performance.now()
    const { settlement } = await h.settle("edit", { filePath: "e.txt", oldString: "e", newString: "x" })
    expect(settlement.status).toBe("success")
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(readFileSync(join(h.directory, "e.txt"), "utf8")).toBe("x\n")
  })

  test("a cancel while waiting for a lock another live core holds ends the wait: cancelled, nothing changed, no temp file", async () => {
    const h = harness({ files: { "f.txt": "f\n" } })
    writeFileSync(join(h.directory, ".f.txt.core-lock"), Owner.current)
    const started = performance.now()
    const outcome = await h.settle("edit", { filePath: "f.txt", oldString: "f", newString: "x" }, { interruptAt: "Writing", session: "ses_lock" })
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(outcome.settlement.status).toBe("cancelled")
    expect(readFileSync(join(h.directory, "f.txt"), "utf8")).toBe("f\n")
    expect(readdirSync(h.directory).sort()).toEqual([".f.txt.core-lock", "f.txt"])
  })
})

// A stale lock (its holder dead, or left empty) judged by several cores at once: each removed it by name, decided on
// what it had read, and so removed the fresh lock another had just taken in its place; several went into the
// commit together. Now only the core holding a lock's flock removes it, and only while it is still at its path.
describe("cores racing on a stale lock", () => {
  const racer = join(import.meta.dir, "..", "support", "lock-racer.ts")
  for (const [kind, content] of [
    ["left empty", ""],
    ["of a dead core", `${Owner.current.split(":")[0]}:999999999:1`],
  ] as const) {
    test(`${kind}: one at a time goes into the commit, and every one of them does`, async () => {
      for (let round = 0; round < 3; round++) {
        const directory = tempDir("core-lock-race-")
        writeFileSync(join(directory, "target.txt"), "")
        const lock = join(directory, ".target.txt.core-lock")
        writeFileSync(lock, content)
        utimesSync(lock, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000))
        const start = Date.now() + 800
        const racers = Array.from({ length: 6 }, (_, id) => Bun.spawn([process.execPath, racer, directory, String(id), String(start)], { stdout: "ignore", stderr: "inherit" }))
        await Promise.all(racers.map((child) => child.exited))
        const log = readFileSync(join(directory, "log"), "utf8").trim().split("\n")
        expect({ round, entries: log.length, overlaps: log.filter((line) => line.endsWith("overlap")) }).toEqual({ round, entries: 6, overlaps: [] })
      }
    }, 60_000)
  }
})
