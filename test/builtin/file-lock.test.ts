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
