// The walks before and after a command trust a folder's listing while its inotify watch is silent and its path still
// leads to it (src/shell/watched.ts), with the real kernel: a repository made, moved in, or put under a folder
// swapped for another is found by the next search however it got there; a lost report (the queue overflowed) and a
// mount make every folder looked at again; past the watches core may hold, and on a file system whose changes may
// not all be reported, folders are looked at as before.

import { afterEach, describe, expect, test } from "bun:test"
import { closeSync, lstatSync, mkdirSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Native } from "../../src/shell/native"
import { Repositories } from "../../src/shell/repositories"
import { Watched } from "../../src/shell/watched"
import { tempDir } from "../support/temp"

const init = (directory: string) => expect(Bun.spawnSync(["git", "init", "-q", directory]).exitCode).toBe(0)

/** A tree of `width` × `width` folders, two deep, with a file in each. */
const tree = (width = 4): string => {
  const root = tempDir("core-watched-", "/var/tmp")
  for (let a = 0; a < width; a++)
    for (let b = 0; b < width; b++) {
      mkdirSync(join(root, `a${a}/b${b}`), { recursive: true })
      writeFileSync(join(root, `a${a}/b${b}/file`), "")
    }
  return root
}

const found = (root: string) => Repositories.under([root]).repositories

/** The folders of `tree()` under `root`: the root, four, sixteen. */
const folders = (root: string) => [root, ...[0, 1, 2, 3].flatMap((a) => [join(root, `a${a}`), ...[0, 1, 2, 3].map((b) => join(root, `a${a}/b${b}`))])]

/** Searches `roots` as a long-lived host does, command after command, until what it lists is watched. */
const watch = (roots: ReadonlyArray<string>) => {
  for (let walk = 0; walk < 3; walk++) Repositories.under(roots)
  return Repositories.under(roots).repositories
}

afterEach(() => Watched.reset())

describe("watched folders", () => {
  test("the first two searches of some roots look by stamps (as core exec makes them); from the third, what is listed is watched and trusted by its watch", () => {
    const root = tree()
    expect(found(root)).toEqual([])
    init(join(root, "a0/b0/one"))
    expect(found(root)).toEqual([join(root, "a0/b0/one")])
    expect(folders(root).filter(Watched.watching)).toEqual([])
    // The third: every folder read again with a watch (it stood by its stamps); the fourth looks at none below the
    // root: 20 of the tree's, and the repository's work tree.
    expect(found(root)).toEqual([join(root, "a0/b0/one")])
    expect([...folders(root), join(root, "a0/b0/one")].filter(Watched.watching)).toHaveLength(22)
    const before = Watched.counts.trusted
    expect(found(root)).toEqual([join(root, "a0/b0/one")])
    expect(Watched.counts.trusted - before).toBe(21)
  })

  test("a folder changed before the walk that watches what stood by its stamps is read again, not watched as it was", async () => {
    const root = tree()
    expect(found(root)).toEqual([])
    expect(found(root)).toEqual([])
    // Past the time a stamp is distrusted for: the change is seen by its stamp alone.
    await Bun.sleep(250)
    init(join(root, "a2/b3/late"))
    expect(found(root)).toEqual([join(root, "a2/b3/late")])
    expect(Watched.watching(join(root, "a2/b3"))).toBe(true)
    init(join(root, "a2/b3/later"))
    expect(found(root).toSorted()).toEqual([join(root, "a2/b3/late"), join(root, "a2/b3/later")])
  })

  test("a kept listing is watched without being read again only where the folder, seen once the watch is set, is the one listed", () => {
    const root = tree()
    const folder = join(root, "a1")
    // Not the one listed: nothing is watched.
    expect(Watched.adopt(folder, () => false)).toBeUndefined()
    expect(Watched.watching(folder)).toBe(false)
    // The watch is set before the folder is looked at: a change made meanwhile is reported.
    const id = Watched.adopt(folder, () => {
      writeFileSync(join(folder, "meanwhile"), "")
      return true
    })
    expect(id).toBeNumber()
    Watched.begin()
    expect(Watched.confirm(folder, id!, lstatSync(folder))).toBe(false)
    // Unchanged since, it is the one watched.
    const again = Watched.adopt(folder, () => true)
    Watched.begin()
    expect(Watched.confirm(folder, again!, lstatSync(folder))).toBe(true)
    // Its parent vouches for its path only where the parent is trusted in the same walk: the first folder never is.
    const quiet = Watched.adopt(join(root, "a2"), () => true)
    Watched.begin()
    expect(Watched.trusted(join(root, "a2"), quiet!)).toBe(false)
  })

  test("a repository made, or moved in, deep in a watched tree is found by the next walk", () => {
    const root = tree()
    expect(watch([root])).toEqual([])
    expect(folders(root).every(Watched.watching)).toBe(true)
    init(join(root, "a1/b2/new"))
    expect(found(root)).toEqual([join(root, "a1/b2/new")])
    const outside = tempDir("core-watched-out-", "/var/tmp")
    init(join(outside, "deep/moved"))
    renameSync(join(outside, "deep"), join(root, "a3/b0/deep"))
    expect(found(root).toSorted()).toEqual([join(root, "a1/b2/new"), join(root, "a3/b0/deep/moved")])
  })

  test("a walk's record stands only on the watches its listings were read with: one listed again by another walk does not vouch for it", () => {
    const root = tree()
    const other = tempDir("core-watched-other-", "/var/tmp")
    // Two records over the same folders (other roots, as a grant adds), then a repository made in one of them.
    expect(watch([root])).toEqual([])
    expect(watch([root, other])).toEqual([])
    init(join(root, "a1/b1/new"))
    // The second walk lists a1/b1 again, with a new watch on it, silent since: the first record is not taken for it.
    expect(Repositories.under([root, other]).repositories).toEqual([join(root, "a1/b1/new")])
    expect(found(root)).toEqual([join(root, "a1/b1/new")])
  })

  test("a folder swapped for another with the same names is looked at again, and every folder under it", () => {
    const root = tree()
    expect(watch([root])).toEqual([])
    // The same names all the way down (a2/b1), a repository deeper still: only the swap of a2 changed anything the
    // walk's folders above it saw, and nothing under the new a2 was ever watched.
    const twin = tempDir("core-watched-twin-", "/var/tmp")
    for (let b = 0; b < 4; b++) mkdirSync(join(twin, `b${b}`))
    init(join(twin, "b1/x"))
    renameSync(join(root, "a2"), join(tempDir("core-watched-old-", "/var/tmp"), "a2"))
    renameSync(twin, join(root, "a2"))
    expect(found(root)).toEqual([join(root, "a2/b1/x")])
    // Swapped out and back (the folder watched is at its path again) while a repository was made in the other.
    const other = join(root, "a0-other")
    mkdirSync(join(other, "b0"), { recursive: true })
    renameSync(join(root, "a0"), join(root, "a0-away"))
    renameSync(other, join(root, "a0"))
    init(join(root, "a0/b0/y"))
    renameSync(join(root, "a0"), other)
    renameSync(join(root, "a0-away"), join(root, "a0"))
    expect(found(root).toSorted()).toEqual([join(root, "a0-other/b0/y"), join(root, "a2/b1/x")])
  })

  test("a root inside another walk's folders is looked at again when a folder above it moved, though nothing in it did", () => {
    const root = tree()
    const inner = join(root, "a1/b1")
    expect(watch([root])).toEqual([])
    expect(watch([inner])).toEqual([])
    // a1 moves away with b1 in it (b1's own watch says nothing: a folder above it moved), and another a1/b1 takes
    // the path, a repository in it. No walk of root comes between: a1's report waits, and b1 must be looked at.
    renameSync(join(root, "a1"), join(root, "gone"))
    init(join(inner, "planted"))
    expect(Repositories.under([inner]).repositories).toEqual([join(inner, "planted")])
  })

  test("a lost report (the queue overflowed) makes every folder looked at again", () => {
    const root = tree()
    expect(watch([root])).toEqual([])
    // More changes than the kernel queues (16,384 by default) before the next walk: what comes after is lost.
    const limit = Number(require("node:fs").readFileSync("/proc/sys/fs/inotify/max_queued_events", "latin1"))
    for (let index = 0; index <= limit + 10; index++) writeFileSync(join(root, `a0/b0/f${index}`), "")
    init(join(root, "a3/b3/late"))
    expect(found(root)).toEqual([join(root, "a3/b3/late")])
    // The report of an overflow alone: nothing after it is trusted.
    const overflow = Buffer.alloc(16)
    overflow.writeInt32LE(-1, 0)
    overflow.writeUInt32LE(Watched.IN_Q_OVERFLOW, 4)
    expect(Watched.take(overflow)).toBe(false)
  }, 60_000)

  test("past the watches core may hold, the folders left are looked at as before", () => {
    const restore = Watched.limitedTo(3)
    try {
      const root = tree()
      expect(watch([root])).toEqual([])
      expect(Watched.size()).toBe(3)
      // What could not be watched is not tried again by every walk: the walk's record stands.
      const adopted = Watched.counts.adopted
      expect(found(root)).toEqual([])
      expect(Watched.counts.adopted).toBe(adopted)
      init(join(root, "a3/b3/unwatched"))
      init(join(root, "a0/watched"))
      expect(found(root).toSorted()).toEqual([join(root, "a0/watched"), join(root, "a3/b3/unwatched")])
    } finally {
      restore()
    }
  })

  test("with no inotify instance to be had (the user's all taken), walks go by stamps, and watch once one can be had", () => {
    const root = tree()
    Watched.reset()
    // Every instance the user may have, taken.
    const taken: Array<number> = []
    const numbers = Native.numbers!
    try {
      for (let made = 0; made >= 0 && taken.length < 100_000; ) {
        made = Native.syscall(numbers.inotifyInit1, 0)
        if (made >= 0) taken.push(made)
      }
      init(join(root, "a0/b0/r"))
      expect(watch([root])).toEqual([join(root, "a0/b0/r")])
      expect(folders(root).some(Watched.watching)).toBe(false)
    } finally {
      for (const fd of taken) closeSync(fd)
    }
    init(join(root, "a3/b3/s"))
    expect(found(root)).toEqual([join(root, "a0/b0/r"), join(root, "a3/b3/s")])
    expect(folders(root).filter(Watched.watching).length).toBeGreaterThan(0)
  })

  // A mount changes what a path leads to with no change in any folder: core's own mount namespace is polled. Run in a
  // mount namespace of its own (root, or a user namespace), so that the mounts stay there.
  test("a mount in core's namespace makes every folder looked at again, and watched again; a file system not known to report every change (ramfs, an overlay whose layer is written) is not watched", () => {
    const root = tree()
    const script = join(tempDir("core-watched-script-"), "child.ts")
    writeFileSync(
      script,
      `import { Repositories } from ${JSON.stringify(join(import.meta.dir, "../../src/shell/repositories"))}
import { Watched } from ${JSON.stringify(join(import.meta.dir, "../../src/shell/watched"))}
const root = process.argv[2]
const say = (what: unknown) => console.log(JSON.stringify(what))
// Searched as a long-lived host searches, until what it lists is watched.
for (let walk = 0; walk < 3; walk++) Repositories.under([root])
say(Repositories.under([root]).repositories)
// Past the time a folder's stamp is distrusted for, so that only its watch can have it read again.
await Bun.sleep(250)
const mount = (...args: string[]) => Bun.spawnSync(["mount", ...args]).exitCode
say(mount("-t", "tmpfs", "none", root + "/a1/b1"))
say(Bun.spawnSync(["git", "init", "-q", root + "/a1/b1/under-mount"]).exitCode)
say(Repositories.under([root]).repositories)
// ramfs: local, but not among the file systems core trusts the watches of: its folders are not watched.
say(mount("-t", "ramfs", "none", root + "/a2/b2"))
Bun.spawnSync(["mkdir", "-p", root + "/a2/b2/x/y"])
Repositories.under([root])
say([root + "/a2", root + "/a2/b2", root + "/a2/b2/x"].map(Watched.watching))
// A device number says nothing lasting: tmpfs's, once unmounted, goes to the next file system mounted.
say(mount("-t", "tmpfs", "none", root + "/a0/b0"))
Bun.spawnSync(["mkdir", root + "/a0/b0/d"])
Repositories.under([root])
say(Watched.watching(root + "/a0/b0/d"))
say(Bun.spawnSync(["umount", root + "/a0/b0"]).exitCode)
say(mount("-t", "ramfs", "none", root + "/a0/b0"))
Bun.spawnSync(["mkdir", root + "/a0/b0/d"])
Repositories.under([root])
say([root + "/a0/b0", root + "/a0/b0/d"].map(Watched.watching))
// An overlay's layers can be written directly, with no report on the overlay's folders: not watched.
const layers = process.argv[3]
Bun.spawnSync(["mkdir", "-p", layers + "/lower/sub", layers + "/upper", layers + "/work", root + "/a3/ov"])
say(mount("-t", "overlay", "overlay", "-o", "lowerdir=" + layers + "/lower,upperdir=" + layers + "/upper,workdir=" + layers + "/work", root + "/a3/ov"))
Repositories.under([root])
await Bun.sleep(250)
Repositories.under([root])
say(Bun.spawnSync(["git", "init", "-q", layers + "/lower/sub/repo"]).exitCode)
say(Repositories.under([root]).repositories)
`,
    )
    const namespace = process.getuid?.() === 0 ? ["unshare", "-m", "--propagation", "private"] : ["unshare", "-rm", "--propagation", "private"]
    const run = Bun.spawnSync([...namespace, process.execPath, script, root, tempDir("core-watched-layers-")], { stderr: "pipe" })
    expect(run.stderr.toString()).toBe("")
    const lines = run.stdout.toString().trim().split("\n").map((line) => JSON.parse(line))
    expect(lines).toEqual([
      [],
      0,
      0,
      [join(root, "a1/b1/under-mount")],
      0,
      [true, false, false],
      0,
      true,
      0,
      0,
      [false, false],
      0,
      0,
      [join(root, "a1/b1/under-mount"), join(root, "a3/ov/sub/repo")],
    ])
  })
})
