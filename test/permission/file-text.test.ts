import { describe, expect, test } from "bun:test"
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { FileText } from "../../src/permission/file-text"
import { tempDir } from "../support/temp"

describe("FileText.read: a file core's checks follow, read as a command may have left it", () => {
  test("a regular file's text, through a link; LARGE past the bound, and read at it", () => {
    const root = tempDir("core-text-")
    writeFileSync(join(root, "a.ts"), 'import "./b"\n')
    symlinkSync(join(root, "a.ts"), join(root, "link.ts"))
    expect(FileText.read(join(root, "a.ts"), 1_024)).toBe('import "./b"\n')
    expect(FileText.read(join(root, "link.ts"), 1_024)).toBe('import "./b"\n')
    writeFileSync(join(root, "big.ts"), "")
    truncateSync(join(root, "big.ts"), 10_001)
    expect(FileText.read(join(root, "big.ts"), 10_000)).toBe(FileText.LARGE)
    truncateSync(join(root, "big.ts"), 10_000)
    expect((FileText.read(join(root, "big.ts"), 10_000) as string).length).toBe(10_000)
  })

  test("nothing for a directory, a missing file, a dangling link, and a FIFO, which it opens without waiting for a writer", () => {
    const root = tempDir("core-text-")
    mkdirSync(join(root, "dir"))
    symlinkSync(join(root, "gone"), join(root, "dangling.ts"))
    expect(Bun.spawnSync(["mkfifo", join(root, "pipe.ts")]).exitCode).toBe(0)
    for (const name of ["dir", "missing.ts", "dangling.ts", "pipe.ts"]) expect([name, FileText.read(join(root, name), 1_024)]).toEqual([name, undefined])
  })

  test("a file of /proc, which says size 0, is read to its end; and is LARGE when that passes the bound", () => {
    const status = FileText.read("/proc/self/status", 1_000_000)
    expect(status).toContain(`Pid:\t${process.pid}\n`)
    expect(FileText.read("/proc/self/status", 16)).toBe(FileText.LARGE)
  })
})
