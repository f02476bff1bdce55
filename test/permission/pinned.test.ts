import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, symlinkSync, writeFileSync } from "node:fs"
import { constants } from "node:fs/promises"
import { join } from "node:path"
import { Effect } from "effect"
import { Text } from "../../src/builtin/text"
import { Pinned } from "../../src/permission/pinned"
import { tempDir } from "../support/temp"

/** project/d (a directory inside) and outside/d, with a file of the same name in each. */
const scene = () => {
  const root = realpathSync(tempDir("core-pinned-"))
  const inside = join(root, "project", "d")
  const outside = join(root, "outside", "d")
  mkdirSync(inside, { recursive: true })
  mkdirSync(outside, { recursive: true })
  writeFileSync(join(inside, "f.txt"), "inside")
  writeFileSync(join(outside, "f.txt"), "outside")
  /** Puts a symlink to outside/d where project/d was (the checked directory moves aside). */
  const swap = () => {
    renameSync(inside, `${inside}.moved`)
    symlinkSync(outside, inside)
  }
  return { root, inside, outside, swap }
}

const codeOf = async (run: () => Promise<unknown>) => run().then(() => undefined, (cause: { code?: string }) => cause.code)

describe("Pinned", () => {
  test("a file or directory whose path now goes through a symlink is refused as moved", async () => {
    const { inside, swap } = scene()
    swap()
    expect(await codeOf(() => Pinned.openFile(join(inside, "f.txt"), constants.O_RDONLY))).toBe(Pinned.MOVED)
    // The directory itself, now a symlink, is not followed.
    expect(await codeOf(() => Pinned.directory(inside))).toBe(Pinned.MOVED)
    expect(await codeOf(() => Pinned.makeDirectories(join(inside, "a", "b")))).toBe(Pinned.MOVED)
  })

  test("a file opened where it was checked is read", async () => {
    const { inside } = scene()
    const handle = await Pinned.openFile(join(inside, "f.txt"), constants.O_RDONLY)
    expect(await handle.readFile("utf8")).toBe("inside")
    await handle.close()
  })

  test("a staged write committed after its directory was swapped lands in the held directory, never outside", async () => {
    const { inside, outside, swap } = scene()
    const target = join(inside, "f.txt")
    const staged = await Effect.runPromise(Text.prepare(target, new TextEncoder().encode("new"), undefined, "d/f.txt"))
    swap()
    await Effect.runPromise(Text.commit(staged, target, "d/f.txt"))
    expect(readFileSync(join(outside, "f.txt"), "utf8")).toBe("outside")
    expect(readdirSync(outside)).toEqual(["f.txt"])
    expect(readFileSync(join(`${inside}.moved`, "f.txt"), "utf8")).toBe("new")
  })

  test("a write, a removal and new directories through a swapped path fail and touch nothing outside", async () => {
    const { inside, outside, swap } = scene()
    swap()
    const write = await Effect.runPromise(
      Effect.flip(Text.write({ path: join(inside, "g.txt"), bytes: new Uint8Array([1]), shown: "d/g.txt" })),
    )
    expect(write.message).toContain("no longer leads where it was checked")
    expect(await codeOf(() => Pinned.remove(join(inside, "f.txt")))).toBe(Pinned.MOVED)
    expect(await codeOf(() => Pinned.makeDirectories(join(inside, "x", "y")))).toBe(Pinned.MOVED)
    expect(readdirSync(outside)).toEqual(["f.txt"])
    expect(existsSync(join(outside, "x"))).toBe(false)
  })

  test("makeDirectories creates the missing ones and answers them deepest first", async () => {
    const { inside } = scene()
    const created = await Pinned.makeDirectories(join(inside, "a", "b", "c"))
    expect(created).toEqual([join(inside, "a", "b", "c"), join(inside, "a", "b"), join(inside, "a")])
    expect(await Pinned.makeDirectories(join(inside, "a", "b"))).toEqual([])
  })

  test("a closed directory reaches nothing through its old descriptor number", async () => {
    const { inside } = scene()
    const held = await Pinned.directory(inside)
    await held.close()
    expect(() => held.at("f.txt")).toThrow("no longer held open")
  })
})
