// Two changes made at the same time, in two core processes, that together make a folder a git repository: each was
// checked against the disk alone, where the other's file was not yet, so `write D/HEAD` beside `D/config` (a
// core.fsmonitor in it) and `write D/objects/…` both went through (3 runs of 8), and the user's next `git status`
// in D ran the fsmonitor. A file that would make a folder a repository with another is now checked and made while
// holding that folder's `HEAD` and `objects` names (FileLock.committing): here the other process is the test, holding
// `objects`'s lock and making `objects/` while the core waits for it, deterministically.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { exec, sandbox, settlementOf } from "../cli/fixture"
import { FileLock } from "../../src/builtin/file-lock"
import { Git } from "../../src/permission/git"
import { Owner } from "../../src/store/owner"

const ALLOW = JSON.stringify({ permission: { "*": "allow" } })
const CONFIG = '[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfsmonitor = "touch pwned; false"\n'

/** Waits until `path` exists (the core took that lock, and waits for the next), for at most 20 s. */
const appears = async (path: string) => {
  const deadline = Date.now() + 20_000
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} never appeared`)
    await Bun.sleep(5)
  }
}

describe("a git repository made by two changes at the same time", () => {
  test("Git.repositoryNames: a folder's HEAD and objects for a file that is its HEAD or in its objects, at every level", () => {
    expect(Git.repositoryNames("/p/vendor/HEAD")).toEqual(["/p/vendor/HEAD", "/p/vendor/objects"])
    expect(Git.repositoryNames("/p/vendor/objects/info/packs")).toEqual(["/p/vendor/HEAD", "/p/vendor/objects"])
    expect(Git.repositoryNames("/p/objects/x/HEAD")).toEqual(["/p/objects/x/HEAD", "/p/objects/x/objects", "/p/HEAD", "/p/objects"])
    expect(Git.repositoryNames("/p/src/head.ts")).toEqual([])
    expect(Git.repositoryNames("/p/src/objects.ts")).toEqual([])
  })

  for (const tool of ["write", "apply_patch"] as const) {
    test(`${tool} of a folder's HEAD is not made once another process has made its objects/ meanwhile`, async () => {
      const box = sandbox({ "core.json": ALLOW, "vendor/config": CONFIG })
      const vendor = join(box.location, "vendor")
      // The other process, in the middle of its commit of vendor/objects/…: its lock held.
      const objectsLock = FileLock.lockPath(join(vendor, "objects"))
      writeFileSync(objectsLock, Owner.current)
      const input =
        tool === "write"
          ? { filePath: "vendor/HEAD", content: "ref: refs/heads/main\n" }
          : { patchText: "*** Begin Patch\n*** Add File: vendor/HEAD\n+ref: refs/heads/main\n*** End Patch" }
      const running = exec(box, tool, input)
      // Checked and authorized with no objects/ beside it; it now holds HEAD's lock and waits for objects's.
      await appears(FileLock.lockPath(join(vendor, "HEAD")))
      mkdirSync(join(vendor, "objects/info"), { recursive: true })
      writeFileSync(join(vendor, "objects/info/packs"), "\n")
      rmSync(objectsLock)
      const settlement = settlementOf(await running)
      expect(settlement.status).toBe("error")
      expect(settlement.error?.message).toContain("with a change made at the same time (another core process's)")
      expect(settlement.error?.message).toContain(`${vendor}, which it would make a git repository`)
      expect(existsSync(join(vendor, "HEAD"))).toBe(false)
      expect(Git.isGitDirectory(vendor)).toBe(false)
      // Alone, the same change is the model's as before.
      rmSync(join(vendor, "objects"), { recursive: true })
      expect(settlementOf(await exec(box, tool, input)).status).toBe("success")
    }, 60_000)
  }
  // The other order, found attacking the first version: the write of objects/… made its folders before taking the
  // locks, so the other's HEAD made D a repository already, into whose objects/ a write is ordinary.
  for (const tool of ["write", "apply_patch"] as const) {
    test(`${tool} into a folder's objects/ is not made once another process has made its HEAD meanwhile`, async () => {
      const box = sandbox({ "core.json": ALLOW, "vendor/config": CONFIG })
      const vendor = join(box.location, "vendor")
      const headLock = FileLock.lockPath(join(vendor, "HEAD"))
      writeFileSync(headLock, Owner.current)
      const input =
        tool === "write"
          ? { filePath: "vendor/objects/info/packs", content: "\n" }
          : { patchText: "*** Begin Patch\n*** Add File: vendor/objects/info/packs\n+\n*** End Patch" }
      const running = exec(box, tool, input)
      // Its folders made, it waits for HEAD's lock.
      await appears(join(vendor, "objects/info"))
      writeFileSync(join(vendor, "HEAD"), "ref: refs/heads/main\n")
      rmSync(headLock)
      const settlement = settlementOf(await running)
      expect(settlement.status).toBe("error")
      expect(settlement.error?.message).toContain(`${vendor}, which it would make a git repository`)
      expect(existsSync(join(vendor, "objects"))).toBe(false)
      expect(Git.isGitDirectory(vendor)).toBe(false)
    }, 60_000)
  }
})
