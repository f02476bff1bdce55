// The edit built-in settled in a real Location: replacements and their report (matcher, diff), what it keeps
// (CRLF, BOM, untouched lines), the errors that help the next attempt, the check that the file did not change
// while the edit was being made, and its permission checks (denial before anything is read, paths outside the
// Location, symlinks leading out).

import { describe, expect, test } from "bun:test"
import { chmodSync, chownSync, lstatSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Exit } from "effect"
import { Text } from "../../src/builtin/text"
import { harness, textOf } from "../support/builtin"
import { tempDir } from "../support/temp"

const NUMBERS = Array.from({ length: 10 }, (_, index) => `${index + 1}`).join("\n") + "\n"

describe("edit", () => {
  test("replaces the one exact match and reports a unified diff with context", async () => {
    const h = harness({ files: { "n.txt": NUMBERS } })
    const { settlement } = await h.settle("edit", { filePath: "n.txt", oldString: "5\n", newString: "five\n" })
    expect(settlement.status).toBe("success")
    const diff = ["--- a/n.txt", "+++ b/n.txt", "@@ -2,7 +2,7 @@", " 2", " 3", " 4", "-5", "+five", " 6", " 7", " 8"].join("\n")
    expect(settlement.structured).toEqual({ path: "n.txt", replacements: 1, matcher: "exact", added: 1, removed: 1, diff })
    expect(textOf(settlement)).toBe(`Edited n.txt: 1 replacement, +1 -1 lines.\n\n${diff}`)
    expect(readFileSync(join(h.directory, "n.txt"), "utf8")).toBe(NUMBERS.replace("5\n", "five\n"))
  })

  // The diff is what the model checks its edit by: it must say what was written, a line the replacement joined to its
  // own last line and a first line that is empty included.
  test("the diff says what was written where a replacement joins the next line, and from a file's first line", async () => {
    const cases = [
      { file: "a\nb\nc\n", oldString: "b\n", newString: "B", written: "a\nBc\n", counts: { added: 1, removed: 2 }, diff: ["@@ -1,3 +1,2 @@", " a", "-b", "-c", "+Bc"] },
      { file: "\nx\nz\n", oldString: "\nx", newString: "y", written: "y\nz\n", counts: { added: 1, removed: 2 }, diff: ["@@ -1,3 +1,2 @@", "-", "-x", "+y", " z"] },
      { file: "a\n\nb\n", oldString: "a\n ", newString: "X\nY", written: "X\nY\nb\n", counts: { added: 2, removed: 2 }, diff: ["@@ -1,3 +1,3 @@", "-a", "-", "+X", "+Y", " b"] },
      { file: "a\nb\nc\n", oldString: "b\n", newString: "B\n", written: "a\nB\nc\n", counts: { added: 1, removed: 1 }, diff: ["@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"] },
    ]
    for (const { file, oldString, newString, written, counts, diff } of cases) {
      const h = harness({ files: { "f.txt": file }, readBeforeWrite: false })
      const { settlement } = await h.settle("edit", { filePath: "f.txt", oldString, newString })
      expect(readFileSync(join(h.directory, "f.txt"), "utf8")).toBe(written)
      expect({ file, ...(settlement.structured as object) }).toMatchObject({ file, ...counts, diff: ["--- a/f.txt", "+++ b/f.txt", ...diff].join("\n") })
    }
  })

  // JSON carries half a character ("\ude00"): matched, it split the emoji in the file, and what was written held
  // U+FFFD; written, it became U+FFFD.
  test("text holding half of a character is refused by edit, write and apply_patch, and the file is left as it was", async () => {
    const file = "x\u{1F600}y\n"
    const h = harness({ files: { "s.txt": file }, readBeforeWrite: false })
    const calls = [
      ["edit", { filePath: "s.txt", oldString: "\ude00", newString: "Z" }, "oldString", "\\ude00 at position 0"],
      ["edit", { filePath: "s.txt", oldString: "x", newString: "a\ud83db" }, "newString", "\\ud83d at position 1"],
      ["write", { filePath: "s.txt", content: "\ud83d" }, "content", "\\ud83d at position 0"],
      ["write", { filePath: "new.txt", content: "ok\ude00" }, "content", "\\ude00 at position 2"],
      ["apply_patch", { patchText: "*** Begin Patch\n*** Update File: s.txt\n@@\n-x\ud83d\ude00y\n+x\ud83dy\n*** End Patch" }, "patchText", "\\ud83d at position"],
    ] as const
    for (const [tool, input, field, where] of calls) {
      const { settlement } = await h.settle(tool, input)
      expect({ tool, field, status: settlement.status }).toEqual({ tool, field, status: "error" })
      expect(settlement.error?.message).toStartWith(`${field} holds half of a character (the UTF-16 surrogate `)
      expect(settlement.error?.message).toContain(where)
    }
    expect(readFileSync(join(h.directory, "s.txt"), "utf8")).toBe(file)
    expect(readdirSync(h.directory)).not.toContain("new.txt")
  })

  test("a file outside the Location has its absolute path after a/ and b/ in the diff, with no second slash", async () => {
    const outside = realpathSync(tempDir("core-edit-outside-"))
    writeFileSync(join(outside, "o.txt"), "one\n")
    const h = harness({ rules: [{ action: "external_directory", resource: "*", effect: "allow" }], readBeforeWrite: false })
    const { settlement } = await h.settle("edit", { filePath: join(outside, "o.txt"), oldString: "one", newString: "two" })
    expect((settlement.structured as { diff: string }).diff.split("\n").slice(0, 2)).toEqual([`--- a${outside}/o.txt`, `+++ b${outside}/o.txt`])
  })

  test("replaceAll replaces every occurrence, with one hunk per distant change", async () => {
    const content = ["x = old", ...Array.from({ length: 12 }, (_, index) => `line ${index}`), "y = old", ""].join("\n")
    const h = harness({ files: { "a.txt": content } })
    const { settlement } = await h.settle("edit", { filePath: "a.txt", oldString: "old", newString: "new", replaceAll: true })
    expect(settlement.structured).toMatchObject({ replacements: 2, added: 2, removed: 2 })
    const diff = (settlement.structured as { diff: string }).diff
    expect(diff.split("\n").filter((line) => line.startsWith("@@"))).toEqual(["@@ -1,4 +1,4 @@", "@@ -11,4 +11,4 @@"])
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe(content.replaceAll("old", "new"))
  })

  test("names the tolerant matcher that matched and re-indents for indentation-flexible", async () => {
    const h = harness({ files: { "a.py": "def f():\n    if x:\n        go()\n" } })
    const { settlement } = await h.settle("edit", {
      filePath: "a.py",
      oldString: "if x:\n    go()",
      newString: "if x:\n    stop()\n    go()",
    })
    expect(settlement.structured).toMatchObject({ matcher: "indentation-flexible", replacements: 1 })
    expect(textOf(settlement)).toContain("matched the same lines at another indentation")
    expect(readFileSync(join(h.directory, "a.py"), "utf8")).toBe("def f():\n    if x:\n        stop()\n        go()\n")
  })

  test("keeps CRLF line endings: newString is written with the file's endings", async () => {
    const h = harness({ files: { "win.txt": "a\r\nb\r\nc\r\n" } })
    const { settlement } = await h.settle("edit", { filePath: "win.txt", oldString: "b\nc", newString: "B\nC\nD" })
    expect(settlement.status).toBe("success")
    expect(readFileSync(join(h.directory, "win.txt"), "utf8")).toBe("a\r\nB\r\nC\r\nD\r\n")
  })

  test("leaves the line endings of untouched lines byte for byte in a mixed file", async () => {
    const h = harness({ files: { "mixed.txt": "a\nb\r\nc\nd\n" } })
    await h.settle("edit", { filePath: "mixed.txt", oldString: "c", newString: "C" })
    expect(readFileSync(join(h.directory, "mixed.txt"), "utf8")).toBe("a\nb\r\nC\nd\n")
  })

  test("keeps a byte order mark", async () => {
    const h = harness({ files: { "bom.txt": "\uFEFFhello world\n" } })
    await h.settle("edit", { filePath: "bom.txt", oldString: "world", newString: "there" })
    expect([...readFileSync(join(h.directory, "bom.txt"))]).toEqual([0xef, 0xbb, 0xbf, ...Buffer.from("hello there\n")])
  })

  test("writes through a symlink inside the Location, keeping the link", async () => {
    const h = harness({ files: { "real.txt": "a b" } })
    symlinkSync(join(h.directory, "real.txt"), join(h.directory, "link.txt"))
    const { settlement } = await h.settle("edit", { filePath: "link.txt", oldString: "a", newString: "c" })
    expect(settlement.structured).toMatchObject({ path: "real.txt" })
    expect(lstatSync(join(h.directory, "link.txt")).isSymbolicLink()).toBe(true)
    expect(readFileSync(join(h.directory, "real.txt"), "utf8")).toBe("c b")
  })
})

// A changed file is a new one renamed over the old: it must keep the old one's mode, owner and group. Core run as
// root (a container, a CI job) handed the user's files to root, and their owner could no longer read them.
describe("a file changed keeps its mode, owner and group", () => {
  const root = process.getuid?.() === 0
  // As root, a file of another user; otherwise the user's own (nothing to give away, but nothing may change either).
  const owner = root ? { uid: 1000, gid: 1000 } : { uid: process.getuid!(), gid: process.getgid!() }

  test(`edit, write, and apply_patch's update and move${root ? " (as root, of a file of uid 1000)" : ""}`, async () => {
    const h = harness({ files: { "e.txt": "own\n", "w.txt": "own\n", "p.txt": "own\n", "m.txt": "own\n" } })
    for (const name of ["e.txt", "w.txt", "p.txt", "m.txt"]) {
      chownSync(join(h.directory, name), owner.uid, owner.gid)
      chmodSync(join(h.directory, name), 0o640)
    }
    const calls: ReadonlyArray<readonly [string, unknown]> = [
      ["edit", { filePath: "e.txt", oldString: "own", newString: "OWN" }],
      ["read", { filePath: "w.txt" }],
      ["write", { filePath: "w.txt", content: "OWN\n" }],
      ["apply_patch", { patchText: "*** Begin Patch\n*** Update File: p.txt\n@@\n-own\n+OWN\n*** Update File: m.txt\n*** Move to: moved.txt\n@@\n-own\n+OWN\n*** End Patch" }],
    ]
    for (const [name, input] of calls) expect([name, (await h.settle(name, input)).settlement.status]).toEqual([name, "success"])
    for (const name of ["e.txt", "w.txt", "p.txt", "moved.txt"]) {
      const stats = lstatSync(join(h.directory, name))
      expect([name, readFileSync(join(h.directory, name), "utf8"), stats.uid, stats.gid, stats.mode & 0o7777]).toEqual([name, "OWN\n", owner.uid, owner.gid, 0o640])
    }
  })
})

// A failed file operation says what to do about its own cause: a full disk is no matter of permissions.
describe("Text.io: what a failed file operation tells the model", () => {
  const failure = (code: string) =>
    Effect.runPromise(Effect.flip(Text.io("write", "a.txt", () => Promise.reject(Object.assign(new Error(code), { code })))))
  test("a full disk, a read-only file system and a denied permission each say what to do", async () => {
    expect((await failure("ENOSPC")).message).toBe(
      "Cannot write a.txt: no space is left on the device (ENOSPC). Nothing was changed; free space there (or ask the user to), then try again.",
    )
    expect((await failure("EROFS")).message).toContain("(EROFS). Nothing was changed; nothing on that file system can change")
    expect((await failure("EACCES")).message).toContain("(EACCES). Nothing was changed; check the path and its permissions")
  })
})

describe("edit errors", () => {
  test("a long quote of a line the file repeats thousands of times: not found, saying the tolerant matchers stopped", async () => {
    const h = harness({ files: { "braces.txt": "  }\n".repeat(200_000) } })
    const { settlement } = await h.settle("edit", { filePath: "braces.txt", oldString: `${"  }\n".repeat(1000)}  x`, newString: "y" })
    expect(settlement.error?.kind).toBe("failure")
    expect(settlement.error?.message).toStartWith("oldString was not found in braces.txt exactly, and the tolerant matchers stopped at trimmed-line-ends")
  })


  const failureOf = async (files: Record<string, string | Uint8Array>, input: Record<string, unknown>) => {
    const h = harness({ files })
    const { settlement } = await h.settle("edit", input)
    expect(settlement).toMatchObject({ status: "error", error: { kind: "failure" } })
    for (const [path, content] of Object.entries(files)) {
      expect(readFileSync(join(h.directory, path))).toEqual(Buffer.from(content))
    }
    return settlement.error!.message
  }

  test("no match shows the most similar region with line numbers", async () => {
    const content = ["import x", "", "const total = compute(items)", "log(total)", "", "export default total", ""].join("\n")
    const message = await failureOf({ "a.ts": content }, {
      filePath: "a.ts",
      oldString: "const totals = computeAll(items)\nlog(totals)",
      newString: "x",
    })
    expect(message).toStartWith("oldString was not found in a.ts, neither exactly nor by a tolerant matcher.")
    expect(message).toMatch(/The most similar region is lines 3-4 \(\d+% similar\):\n3\| const total = compute\(items\)\n4\| log\(total\)/)
    expect(message).toEndWith("Read the file again and copy oldString exactly from it, including indentation, then retry.")
  })

  test("a whitespace-only oldString that is not in the file says so, without a phantom similar region", async () => {
    const message = await failureOf({ "a.txt": "one-line\n" }, { filePath: "a.txt", oldString: " ", newString: "x" })
    expect(message).toBe(
      "oldString, which is only whitespace, does not occur in a.txt exactly; the tolerant matchers ignore whitespace, " +
        "so they cannot find it. Quote the lines around the whitespace to change (with their text), and put them " +
        "with the change in newString.",
    )
  })

  test("a whitespace-only oldString that occurs exactly is replaced", async () => {
    const h = harness({ files: { "a.txt": "a\n\n\nb\n" } })
    const { settlement } = await h.settle("edit", { filePath: "a.txt", oldString: "\n\n\n", newString: "\n\n" })
    expect(settlement.status).toBe("success")
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("a\n\nb\n")
  })

  test("a refused disproportionate match is explained", async () => {
    const content = ["begin {", ...Array.from({ length: 20 }, (_, index) => `  step${index}()`), "} end", ""].join("\n")
    const message = await failureOf({ "a.txt": content }, { filePath: "a.txt", oldString: "begin {\n  other()\n} end", newString: "x" })
    expect(message).toContain("A block-anchors match at line 1 was refused: it spans 22 lines")
  })

  test("several matches name their lines and suggest more context or replaceAll", async () => {
    const message = await failureOf({ "a.txt": "x\ny\nx\ny\nx\n" }, { filePath: "a.txt", oldString: "x", newString: "z" })
    expect(message).toBe(
      "oldString occurs 3 times in a.txt (at lines 1, 3, 5). Include more surrounding lines in oldString so that it matches exactly one place, or set replaceAll: true to replace every occurrence.",
    )
  })

  test("several tolerant matches name the matcher and their lines", async () => {
    const message = await failureOf({ "a.txt": "a  \nb\na \nb\n" }, { filePath: "a.txt", oldString: "a\nb", newString: "z" })
    expect(message).toContain("(trimmed-line-ends) finds 2 places (at lines 1, 3)")
  })

  test("identical oldString and newString are refused", async () => {
    const message = await failureOf({ "a.txt": "a" }, { filePath: "a.txt", oldString: "a", newString: "a" })
    expect(message).toBe("oldString and newString are identical, so the edit would change nothing. Put the new text in newString.")
  })

  test("an edit that changes nothing once line endings are normalised is refused", async () => {
    const message = await failureOf({ "a.txt": "a\nb\n" }, { filePath: "a.txt", oldString: "a\r\nb", newString: "a\nb" })
    expect(message).toStartWith("The edit would leave a.txt unchanged")
  })

  test("an empty oldString is refused, pointing at write", async () => {
    const message = await failureOf({ "a.txt": "a" }, { filePath: "a.txt", oldString: "", newString: "b" })
    expect(message).toContain("oldString is empty")
    expect(message).toContain("use write")
  })

  test("a missing file suggests write", async () => {
    const message = await failureOf({}, { filePath: "nope.txt", oldString: "a", newString: "b" })
    expect(message).toBe("File not found: nope.txt. edit changes existing files; to create this one, use write.")
  })

  test("a directory is refused", async () => {
    const h = harness({ files: { "dir/a.txt": "a" } })
    const { settlement } = await h.settle("edit", { filePath: "dir", oldString: "a", newString: "b" })
    expect(settlement.error?.message).toBe("Cannot edit dir: it is a directory. Give the path of a file, such as dir/name.txt.")
  })

  test("a path ending with / names a directory and is refused, even when it leads to a file", async () => {
    const h = harness({ files: { "a.txt": "one\n" } })
    for (const filePath of ["a.txt/", "a.txt/."]) {
      const { settlement } = await h.settle("edit", { filePath, oldString: "one", newString: "two" })
      const ending = filePath.slice(filePath.lastIndexOf("/"))
      expect(settlement.error?.message).toBe(
        `Cannot edit ${filePath}: it ends with "${ending}", so it names a directory. Give a file path (without the trailing "${ending}", or with a file name after it).`,
      )
    }
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("one\n")
  })

  test("a file that is not UTF-8 is refused and left alone", async () => {
    const latin1 = new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a])
    const message = await failureOf({ "latin1.txt": latin1 }, { filePath: "latin1.txt", oldString: "caf", newString: "bar" })
    expect(message).toStartWith("Cannot change latin1.txt with edit: it is not valid UTF-8 text (invalid byte at offset 3).")
  })

  test("a binary file with NUL bytes is refused", async () => {
    const message = await failureOf({ "b.bin": new Uint8Array([0x61, 0x00, 0x62]) }, { filePath: "b.bin", oldString: "a", newString: "c" })
    expect(message).toContain("it contains a NUL byte (at offset 1), so it is binary")
  })
})

describe("unchanged while the change is made", () => {
  test("a file changed between reading and writing is not overwritten", async () => {
    const directory = tempDir()
    const path = join(directory, "a.txt")
    writeFileSync(path, "original\n")
    const outcome = await Effect.runPromise(
      Effect.gen(function* () {
        const snapshot = yield* Text.read(path, "a.txt")
        // Another writer, between edit's read and its rename.
        writeFileSync(path, "concurrent change\n")
        return yield* Effect.exit(
          Text.write({ path, bytes: new TextEncoder().encode("edited\n"), shown: "a.txt", expected: snapshot }),
        )
      }),
    )
    expect(Exit.isFailure(outcome)).toBe(true)
    expect(String(outcome)).toContain("a.txt changed on disk while the change was being made")
    expect(readFileSync(path, "utf8")).toBe("concurrent change\n")
    expect(readdirSync(directory)).toEqual(["a.txt"])
  })

  test("edit reports its progress once, and redoes the change against content another writer changed meanwhile", async () => {
    const h = harness({ files: { "a.txt": "one\ntwo\n" } })
    const { settlement, progress } = await h.settle(
      "edit",
      { filePath: "a.txt", oldString: "two", newString: "TWO" },
      // edit has read the file and made the change when it reports; another writer changes the file then.
      { onProgress: () => writeFileSync(join(h.directory, "a.txt"), "zero\none\ntwo\nthree\n") },
    )
    expect(progress).toEqual([
      { message: "Writing a.txt: 1 replacement", metadata: { path: "a.txt", replacements: 1, matcher: "exact" } },
    ])
    expect(settlement.status).toBe("success")
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("zero\none\nTWO\nthree\n")
    expect(readdirSync(h.directory)).toEqual(["a.txt"])
  })

  test("edit redone against changed content that no longer holds oldString fails and keeps the other writer's change", async () => {
    const h = harness({ files: { "a.txt": "one\ntwo\n" } })
    const { settlement } = await h.settle(
      "edit",
      { filePath: "a.txt", oldString: "two", newString: "TWO" },
      { onProgress: () => writeFileSync(join(h.directory, "a.txt"), "one\nsomething else\n") },
    )
    expect(settlement.status).toBe("error")
    expect(settlement.error?.message).toContain("oldString was not found in a.txt")
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("one\nsomething else\n")
    expect(readdirSync(h.directory)).toEqual(["a.txt"])
  })

  test("a same-size rewrite and a removal are noticed; an untouched file passes", async () => {
    const directory = tempDir()
    const path = join(directory, "a.txt")
    writeFileSync(path, "abc")
    const [untouched, rewritten, removed] = await Effect.runPromise(
      Effect.gen(function* () {
        const snapshot = yield* Text.read(path, "a.txt")
        const untouched = yield* Text.unchanged(path, snapshot, "a.txt")
        writeFileSync(path, "xyz")
        const rewritten = yield* Text.unchanged(path, snapshot, "a.txt")
        const again = yield* Text.read(path, "a.txt")
        rmSync(path)
        return [untouched, rewritten, yield* Text.unchanged(path, again, "a.txt")] as const
      }),
    )
    expect(untouched).toBe(true)
    expect(rewritten).toBe(false)
    expect(removed).toBe(false)
  })
})

describe("edit permissions", () => {
  test("a denied path is refused before it is read: not 'not found', not 'not UTF-8', and unchanged", async () => {
    const binary = new Uint8Array([0xff, 0xfe, 0x00])
    const h = harness({ files: { "secret.txt": "token", "secret.bin": binary }, rules: [{ action: "edit", resource: "secret*", effect: "deny" }] })
    for (const filePath of ["secret.txt", "secret.bin", "secret-missing.txt"]) {
      const { settlement } = await h.settle("edit", { filePath, oldString: "token", newString: "x" })
      expect(settlement).toMatchObject({ status: "error", error: { kind: "denied" } })
    }
    expect(readFileSync(join(h.directory, "secret.txt"), "utf8")).toBe("token")
    expect(new Uint8Array(readFileSync(join(h.directory, "secret.bin")))).toEqual(binary)
  })

  test("a path outside the Location asks external_directory first", async () => {
    const outside = tempDir("core-outside-")
    writeFileSync(join(outside, "o.txt"), "before")
    const h = harness()
    const declined = await h.settle("edit", { filePath: join(outside, "o.txt"), oldString: "before", newString: "after" })
    expect(declined.settlement.status).toBe("declined")
    expect(declined.asks).toEqual([{ action: "external_directory", resources: [`${outside}/*`], save: [`${outside}/*`] }])
    expect(readFileSync(join(outside, "o.txt"), "utf8")).toBe("before")
    const approved = await h.settle(
      "edit",
      { filePath: join(outside, "o.txt"), oldString: "before", newString: "after" },
      { reply: { reply: "once" } },
    )
    expect(approved.settlement.structured).toMatchObject({ path: join(outside, "o.txt") })
    expect(readFileSync(join(outside, "o.txt"), "utf8")).toBe("after")
  })

  test("a symlink leading out of the Location is checked where it leads", async () => {
    const outside = tempDir("core-outside-")
    writeFileSync(join(outside, "target.txt"), "outside")
    const h = harness()
    symlinkSync(join(outside, "target.txt"), join(h.directory, "escape.txt"))
    const { settlement, asks } = await h.settle("edit", { filePath: "escape.txt", oldString: "outside", newString: "in" })
    expect(settlement.status).toBe("declined")
    expect(asks[0]).toMatchObject({ action: "external_directory", resources: [`${outside}/*`] })
    expect(readFileSync(join(outside, "target.txt"), "utf8")).toBe("outside")
  })
})

// A cancel that comes while the edit is being written cannot stop it: the file is replaced whole or not at all, and
// the call says what happened. It was settled `cancelled` with the file changed (a host would edit it again), and a
// cancel while the new content was staged left a temp file of the file's size in the user's tree.
describe("edit cancelled while it writes", () => {
  test("settles with the edit it made, and leaves no temp file", async () => {
    const big = "y\n".repeat(2_000_000)
    const h = harness({ files: { "big.txt": `${big}needle\n` } })
    await h.settle("read", { filePath: "big.txt" }, { session: "ses_cancel" })
    const outcome = await h.settle("edit", { filePath: "big.txt", oldString: "needle", newString: "thread" }, { interruptAt: "Writing", session: "ses_cancel" })
    expect(outcome.settlement).toMatchObject({ status: "success", structured: { path: "big.txt", replacements: 1 } })
    expect(readFileSync(join(h.directory, "big.txt"), "utf8").endsWith("y\nthread\n")).toBe(true)
    expect(readdirSync(h.directory)).toEqual(["big.txt"])
  })
})

describe("a file too large to change whole", () => {
  test("write, edit and apply_patch refuse a file over 16 MiB before reading it, saying how to change it instead", async () => {
    const h = harness({ files: { "big.txt": "" }, readBeforeWrite: false })
    // Sparse: 17 MiB that take no disk.
    const big = join(h.directory, "big.txt")
    truncateSync(big, 17 * 1024 * 1024)
    const calls = [
      ["edit", { filePath: "big.txt", oldString: "a", newString: "b" }],
      ["write", { filePath: "big.txt", content: "small\n" }],
      ["apply_patch", { patchText: "*** Begin Patch\n*** Update File: big.txt\n@@\n-a\n+b\n*** End Patch" }],
    ] as const
    for (const [tool, input] of calls) {
      const { settlement } = await h.settle(tool, input)
      expect([tool, settlement.status]).toEqual([tool, "error"])
      expect(textOf(settlement)).toContain("big.txt is 17.0 MiB: write, edit and apply_patch change files of at most 16 MiB")
    }
    expect(statSync(big).size).toBe(17 * 1024 * 1024)
    // At the bound it is still changed.
    truncateSync(big, 0)
    writeFileSync(big, `${"x".repeat(1023)}\n`.repeat(16 * 1024 - 1) + "a\n")
    expect((await h.settle("edit", { filePath: "big.txt", oldString: "a\n", newString: "b\n" })).settlement.status).toBe("success")
  }, 60_000)

  // A short oldString replaced everywhere by a long newString made a 2 MB file 600 MB, and core serve ran out of
  // memory making it: what an edit would make is held to the same 16 MiB, before it is made, and nothing is written.
  test("an edit that would make the file larger than 16 MiB is refused, and the file is left as it was", async () => {
    const original = "a".repeat(2_000_000)
    const h = harness({ files: { "grow.txt": original }, readBeforeWrite: false })
    const { settlement } = await h.settle("edit", { filePath: "grow.txt", oldString: "a", newString: "b".repeat(300), replaceAll: true })
    expect(settlement.status).toBe("error")
    expect(textOf(settlement)).toBe(
      "The edit would make grow.txt at least 600000000 bytes, over the 16777216 bytes (16 MiB) the file tools change at " +
        "once; nothing was changed. Replace fewer places, or a shorter text, per edit.",
    )
    expect(readFileSync(join(h.directory, "grow.txt"), "utf8")).toBe(original)
    // Multi-byte text under the bound in characters, over it in bytes: refused once encoded.
    const { settlement: wide } = await h.settle("edit", { filePath: "grow.txt", oldString: "a", newString: "éé€€", replaceAll: true })
    expect(textOf(wide)).toBe(
      "The edit would make grow.txt 20000000 bytes, over the 16777216 bytes (16 MiB) the file tools change at once; " +
        "nothing was changed. Replace fewer places, or a shorter text, per edit.",
    )
    expect(readFileSync(join(h.directory, "grow.txt"), "utf8")).toBe(original)
  }, 60_000)
})
