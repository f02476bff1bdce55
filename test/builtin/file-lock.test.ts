// The cross-process commit lock of the editing built-ins: taken and given back through the directory it was made
// in, held open meanwhile, so a directory on the path swapped for a symlink during the commit neither leaves the
// lock behind (which would stall every later change of that file) nor removes a file of the same name elsewhere.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, realpathSync, renameSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { FileLock } from "../../src/builtin/file-lock"
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
