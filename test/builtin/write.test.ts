// The write built-in settled in a real Location: creating and overwriting, what an overwrite keeps (BOM, CRLF,
// mode), atomic replacement, the errors that change nothing, and its permission checks (denial, paths outside
// the Location, symlinks leading out).

import { describe, expect, test } from "bun:test"
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync, lstatSync } from "node:fs"
import { join } from "node:path"
import { Effect, Exit } from "effect"
import { Text } from "../../src/builtin/text"
import { harness, textOf } from "../support/builtin"
import { tempDir } from "../support/temp"

const BOM = "\uFEFF"

describe("write", () => {
  test("creates a file and its missing parent directories, reporting the relative path and counts", async () => {
    const h = harness()
    const { settlement } = await h.settle("write", { filePath: "deep/er/a.txt", content: "one\ntwo\n" })
    expect(settlement.status).toBe("success")
    expect(settlement.structured).toEqual({ path: "deep/er/a.txt", created: true, lines: 2, bytes: 8, lineEnding: "lf", bom: false })
    expect(textOf(settlement)).toBe("Created deep/er/a.txt (2 lines, 8 bytes).")
    expect(readFileSync(join(h.directory, "deep/er/a.txt"), "utf8")).toBe("one\ntwo\n")
  })

  test("overwrites an existing file and says so", async () => {
    const h = harness({ files: { "a.txt": "old content\n" } })
    await h.settle("read", { filePath: "a.txt" })
    const { settlement } = await h.settle("write", { filePath: "a.txt", content: "new" })
    expect(settlement.structured).toMatchObject({ path: "a.txt", created: false, lines: 1, bytes: 3, replaced: { lines: 1, bytes: 12 } })
    expect(textOf(settlement)).toBe("Overwrote a.txt (1 line, 3 bytes; it held 1 line, 12 bytes).")
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("new")
  })

  test("over a file that is not UTF-8 text, says how many lines it held by its line feeds", async () => {
    const h = harness({ files: { "l1.txt": Buffer.from("caf\xe9\nplain\n", "latin1"), "tail.bin": Buffer.from("a\nb\xff", "latin1") }, readBeforeWrite: false })
    const latin1 = await h.settle("write", { filePath: "l1.txt", content: "x\n" })
    expect(textOf(latin1.settlement)).toBe("Overwrote l1.txt (1 line, 2 bytes; it held 2 lines, 11 bytes).")
    const tail = await h.settle("write", { filePath: "tail.bin", content: "x\n" })
    expect(tail.settlement.structured).toMatchObject({ replaced: { lines: 2, bytes: 4 } })
  })

  test("keeps a CRLF file's line endings when the new content uses LF", async () => {
    const h = harness({ files: { "win.txt": "a\r\nb\r\n" }, readBeforeWrite: false })
    const { settlement } = await h.settle("write", { filePath: "win.txt", content: "x\ny\nz\n" })
    expect(readFileSync(join(h.directory, "win.txt"), "utf8")).toBe("x\r\ny\r\nz\r\n")
    expect(settlement.structured).toMatchObject({ lineEnding: "crlf", lines: 3 })
    expect(textOf(settlement)).toContain("written with CRLF line endings")
  })

  test("keeps an LF file's line endings when the new content uses CRLF", async () => {
    const h = harness({ files: { "unix.txt": "a\nb\n" }, readBeforeWrite: false })
    await h.settle("write", { filePath: "unix.txt", content: "x\r\ny\r\n" })
    expect(readFileSync(join(h.directory, "unix.txt"), "utf8")).toBe("x\ny\n")
  })

  test("keeps a byte order mark, without doubling one the content brings", async () => {
    const h = harness({ files: { "bom.txt": `${BOM}old\n`, "bom2.txt": `${BOM}old\n` }, readBeforeWrite: false })
    const { settlement } = await h.settle("write", { filePath: "bom.txt", content: "new\n" })
    expect(settlement.structured).toMatchObject({ bom: true, bytes: 7 })
    expect([...readFileSync(join(h.directory, "bom.txt"))]).toEqual([0xef, 0xbb, 0xbf, ...Buffer.from("new\n")])
    await h.settle("write", { filePath: "bom2.txt", content: `${BOM}new\n` })
    expect([...readFileSync(join(h.directory, "bom2.txt"))]).toEqual([0xef, 0xbb, 0xbf, ...Buffer.from("new\n")])
  })

  test("keeps the mode of an overwritten file and leaves no temp file behind", async () => {
    const h = harness({ files: { "run.sh": "#!/bin/sh\n" } })
    chmodSync(join(h.directory, "run.sh"), 0o767)
    await h.settle("read", { filePath: "run.sh" })
    const { settlement } = await h.settle("write", { filePath: "run.sh", content: "#!/bin/sh\necho hi\n" })
    expect(settlement.status).toBe("success")
    expect(readFileSync(join(h.directory, "run.sh"), "utf8")).toBe("#!/bin/sh\necho hi\n")
    expect(statSync(join(h.directory, "run.sh")).mode & 0o7777).toBe(0o767)
    expect(readdirSync(h.directory)).toEqual(["run.sh"])
  })

  test("writes through a symlink inside the Location to its target, keeping the link", async () => {
    const h = harness({ files: { "real.txt": "old" } })
    symlinkSync(join(h.directory, "real.txt"), join(h.directory, "link.txt"))
    await h.settle("read", { filePath: "link.txt" })
    const { settlement } = await h.settle("write", { filePath: "link.txt", content: "new" })
    expect(settlement.structured).toMatchObject({ path: "real.txt", created: false })
    expect(lstatSync(join(h.directory, "link.txt")).isSymbolicLink()).toBe(true)
    expect(readFileSync(join(h.directory, "real.txt"), "utf8")).toBe("new")
  })
})

describe("write errors change nothing", () => {
  test("a directory path", async () => {
    const h = harness({ files: { "dir/keep.txt": "kept" } })
    const { settlement } = await h.settle("write", { filePath: "dir", content: "x" })
    expect(settlement).toMatchObject({ status: "error", error: { kind: "failure" } })
    expect(settlement.error?.message).toBe("Cannot write dir: it is a directory. Give the path of a file, such as dir/name.txt.")
    expect(readdirSync(join(h.directory, "dir"))).toEqual(["keep.txt"])
  })

  test("a path ending with / (or /. or /..) names a directory and is refused, whatever is on disk", async () => {
    const h = harness({ files: { "a.txt": "plain" } })
    for (const filePath of ["newdir/", "newdir/.", "new/dir/..", "a.txt/", "a.txt/."]) {
      const { settlement } = await h.settle("write", { filePath, content: "x" })
      expect(settlement).toMatchObject({ status: "error", error: { kind: "failure" } })
      const ending = filePath.slice(filePath.lastIndexOf("/"))
      expect(settlement.error?.message).toBe(
        `Cannot write ${filePath}: it ends with "${ending}", so it names a directory. Give a file path (without the trailing "${ending}", or with a file name after it).`,
      )
    }
    expect(readdirSync(h.directory)).toEqual(["a.txt"])
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("plain")
  })

  // "." was refused as a change of all the Location holds, core.json among it, for a person to make.
  test('".", ".." and a directory of the Location however named: refused as such, asking no one, by write and edit', async () => {
    const h = harness({ files: { "core.json": "{}\n", "tools/x.ts": "export {}\n" } })
    for (const [tool, input, example] of [
      ["write", { filePath: ".", content: "x" }, "name.txt"],
      ["write", { filePath: "..", content: "x" }, "name.txt"],
      ["edit", { filePath: ".", oldString: "a", newString: "b" }, "name.txt"],
      ["write", { filePath: h.directory, content: "x" }, "./name.txt"],
      ["write", { filePath: "tools", content: "x" }, "tools/name.txt"],
    ] as const) {
      const { settlement, asks } = await h.settle(tool, input)
      expect(asks).toEqual([])
      expect(settlement.error?.message).toBe(`Cannot ${tool} ${input.filePath}: it is a directory. Give the path of a file, such as ${example}.`)
    }
  })

  test("a path through a file used as a directory", async () => {
    const h = harness({ files: { "a.txt": "plain" } })
    const { settlement } = await h.settle("write", { filePath: "a.txt/b.txt", content: "x" })
    expect(settlement).toMatchObject({ status: "error", error: { kind: "failure" } })
    expect(settlement.error?.message).toContain("a.txt is a file, not a directory")
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("plain")
  })

  test("a target that cannot be written", async () => {
    // As root, file permissions do not stop a write; /sys refuses new files whoever asks.
    const root = process.getuid?.() === 0
    const h = harness({ files: { "locked/a.txt": "locked" } })
    const target = root ? "/sys/core-write-test.txt" : "locked/a.txt"
    if (!root) chmodSync(join(h.directory, "locked"), 0o555)
    const { settlement } = await h.settle("write", { filePath: target, content: "x" }, { reply: { reply: "once" } })
    if (!root) chmodSync(join(h.directory, "locked"), 0o755)
    expect(settlement).toMatchObject({ status: "error", error: { kind: "failure" } })
    expect(settlement.error?.message).toMatch(/^Cannot write .*: permission denied \(EACCES\)\. Nothing was changed/)
    if (root) expect(existsSync(target)).toBe(false)
    else expect(readdirSync(join(h.directory, "locked"))).toEqual(["a.txt"])
    expect(readFileSync(join(h.directory, "locked/a.txt"), "utf8")).toBe("locked")
  })

  test("a failed rename removes its temp file and leaves the target as it was", async () => {
    const directory = tempDir()
    const target = join(directory, "target")
    mkdirSync(join(target, "inside"), { recursive: true })
    const exit = await Effect.runPromiseExit(Text.write({ path: target, bytes: new TextEncoder().encode("x"), shown: "target" }))
    expect(Exit.isFailure(exit)).toBe(true)
    expect(String(exit)).toContain("Cannot write target")
    expect(readdirSync(directory)).toEqual(["target"])
    expect(readdirSync(target)).toEqual(["inside"])
  })
})

describe("write permissions", () => {
  test("a denied path is never written", async () => {
    const h = harness({ files: { "secret.txt": "keep" }, rules: [{ action: "edit", resource: "secret*", effect: "deny" }] })
    for (const filePath of ["secret.txt", "secret-new.txt"]) {
      const { settlement } = await h.settle("write", { filePath, content: "overwritten" })
      expect(settlement).toMatchObject({ status: "error", error: { kind: "denied" } })
    }
    expect(readFileSync(join(h.directory, "secret.txt"), "utf8")).toBe("keep")
    expect(existsSync(join(h.directory, "secret-new.txt"))).toBe(false)
  })

  test("a path outside the Location asks external_directory first, and a refusal writes nothing", async () => {
    const h = harness()
    const outside = tempDir("core-outside-")
    const declined = await h.settle("write", { filePath: join(outside, "x.txt"), content: "x" })
    expect(declined.settlement.status).toBe("declined")
    expect(declined.asks).toEqual([{ action: "external_directory", resources: [`${outside}/*`], save: [`${outside}/*`] }])
    expect(existsSync(join(outside, "x.txt"))).toBe(false)
    const approved = await h.settle("write", { filePath: join(outside, "x.txt"), content: "x" }, { reply: { reply: "once" } })
    expect(approved.settlement.structured).toMatchObject({ path: join(outside, "x.txt"), created: true })
    expect(readFileSync(join(outside, "x.txt"), "utf8")).toBe("x")
  })

  test("a symlink leading out of the Location is checked where it leads", async () => {
    const outside = tempDir("core-outside-")
    writeFileSync(join(outside, "target.txt"), "outside")
    const h = harness()
    symlinkSync(join(outside, "target.txt"), join(h.directory, "escape.txt"))
    const { settlement, asks } = await h.settle("write", { filePath: "escape.txt", content: "changed" })
    expect(settlement.status).toBe("declined")
    expect(asks[0]).toMatchObject({ action: "external_directory", resources: [`${outside}/*`] })
    expect(readFileSync(join(outside, "target.txt"), "utf8")).toBe("outside")
  })
})
