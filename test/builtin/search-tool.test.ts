// SearchTool.modifiedTimes: the modification times glob and grep order by, looked up relative to the held directory
// by the paths rg printed, equal to what statSync answers as mtimeMs for every kind of file it can meet.

import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Pinned } from "../../src/permission/pinned"
import { SearchTool } from "../../src/builtin/search-tool"
import { openOn } from "../support/descriptors"
import { tempDir } from "../support/temp"

const printed = (relative: string | Uint8Array) => Buffer.concat([Buffer.from("./"), Buffer.from(relative)])

describe("SearchTool.modifiedTimes", () => {
  test("answers statSync's mtimeMs, to the nanosecond, through the held directory", async () => {
    const root = realpathSync(tempDir())
    mkdirSync(join(root, "deep", "er"), { recursive: true })
    const names = ["a.txt", "deep/b.txt", "deep/er/c d.txt", "ünï.txt"]
    for (const name of names) writeFileSync(join(root, name), name)
    // Times with sub-millisecond parts, one before 1970, one far ahead.
    utimesSync(join(root, "a.txt"), 1_700_000_000.123456, 1_700_000_000.123456)
    utimesSync(join(root, "deep/b.txt"), -86_400.5, -86_400.5)
    utimesSync(join(root, "deep/er/c d.txt"), 4_000_000_000.987654, 4_000_000_000.987654)
    const held = await Pinned.directory(root)
    const times = SearchTool.modifiedTimes(held.at(""))
    try {
      for (const name of names) {
        expect(times.of(printed(name), "/nowhere")).toBe(statSync(join(root, name)).mtimeMs)
      }
      expect(times.of(printed("a.txt"), "/nowhere")).not.toBe(Math.round(times.of(printed("a.txt"), "/nowhere")))
    } finally {
      times.close()
      await held.close()
    }
  })

  test("a name that is not UTF-8, a symlink (followed, as statSync does) and a vanished file", async () => {
    const root = realpathSync(tempDir())
    expect(Bun.spawnSync(["bash", "-c", `printf x > "$0/bad$(printf '\\377')name"`, root]).exitCode).toBe(0)
    writeFileSync(join(root, "target.txt"), "x")
    utimesSync(join(root, "target.txt"), 1_000_000, 1_000_000)
    symlinkSync("target.txt", join(root, "link.txt"))
    writeFileSync(join(root, "gone.txt"), "x")
    const held = await Pinned.directory(root)
    const times = SearchTool.modifiedTimes(held.at(""))
    try {
      const bad = Buffer.concat([Buffer.from("bad"), Buffer.from([0xff]), Buffer.from("name")])
      expect(times.of(printed(bad), "/nowhere")).toBe(statSync(Buffer.concat([Buffer.from(`${root}/`), bad])).mtimeMs)
      expect(times.of(printed("link.txt"), "/nowhere")).toBe(1_000_000_000)
      rmSync(join(root, "gone.txt"))
      expect(times.of(printed("gone.txt"), join(root, "gone.txt"))).toBe(0)
    } finally {
      times.close()
      await held.close()
    }
  })

  test("looks a path up by its real path when rg did not print it from its directory, or cannot be held", async () => {
    const root = realpathSync(tempDir())
    writeFileSync(join(root, "a.txt"), "x")
    utimesSync(join(root, "a.txt"), 2_000_000, 2_000_000)
    const held = await Pinned.directory(root)
    const times = SearchTool.modifiedTimes(held.at(""))
    try {
      // Not "./…": the real path given is what is looked up.
      expect(times.of(Buffer.from("a.txt"), join(root, "a.txt"))).toBe(2_000_000_000)
      // Longer than a path may be: the real path is looked up (here one that does not exist: 0).
      expect(times.of(printed("x".repeat(5_000)), join(root, "missing"))).toBe(0)
    } finally {
      times.close()
      await held.close()
    }
    // A directory that is gone: every time comes from the real path.
    const gone = SearchTool.modifiedTimes(join(root, "no-such-directory"))
    expect(gone.of(printed("a.txt"), join(root, "a.txt"))).toBe(2_000_000_000)
    gone.close()
  })

  test("lets its directory go when closed", async () => {
    const root = realpathSync(tempDir())
    const held = await Pinned.directory(root)
    /** This process's descriptors open on `root`. */
    const opened = () => openOn(root)
    expect(opened()).toBe(1)
    const times = SearchTool.modifiedTimes(held.at(""))
    expect(opened()).toBe(2)
    times.close()
    times.close()
    expect(opened()).toBe(1)
    await held.close()
  })
})

describe("SearchTool.Newest", () => {
  /** A deterministic pseudo-random sequence (xorshift), so a failure can be replayed. */
  const random = (seed: number) => () => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) / 2 ** 32
  }

  test("keeps exactly the newest `limit`, newest first, as sorting all and cutting would: in any order, with ties", () => {
    const next = random(7)
    const orders = {
      random: (items: Array<{ path: string; modified: number }>) => items.sort(() => next() - 0.5),
      oldestFirst: (items: Array<{ path: string; modified: number }>) => items.sort((a, b) => -SearchTool.newerFirst(a, b)),
      newestFirst: (items: Array<{ path: string; modified: number }>) => items.sort(SearchTool.newerFirst),
    }
    for (const count of [0, 1, 2, 7, 100, 2_000]) {
      for (const limit of [1, 2, 3, 50, 2_000, 5_000]) {
        for (const [name, order] of Object.entries(orders)) {
          // Few distinct times, so many ties are broken by path.
          const items = Array.from({ length: count }, (_, index) => ({ path: `f${index}`, modified: Math.floor(next() * 20) }))
          const expected = [...items].sort(SearchTool.newerFirst).slice(0, limit)
          const newest = new SearchTool.Newest<(typeof items)[number]>(limit)
          for (const item of order(items)) newest.offer(item)
          expect({ name, count, limit, kept: newest.sorted() }).toEqual({ name, count, limit, kept: expected })
        }
      }
    }
  })

  test("holds no more than the limit while far more are offered", () => {
    const newest = new SearchTool.Newest<{ path: string; modified: number }>(10)
    // Each newer than every one before: each must replace the oldest kept.
    for (let index = 0; index < 100_000; index++) newest.offer({ path: `f${index}`, modified: index })
    const kept = newest.sorted()
    expect(kept.length).toBe(10)
    expect(kept.map((item) => item.modified)).toEqual(Array.from({ length: 10 }, (_, index) => 99_999 - index))
  })
})
