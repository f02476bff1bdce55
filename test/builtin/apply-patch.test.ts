// The apply_patch built-in settled in a real Location: the patch format (heredoc wrappers, markers, @@ headers,
// End of File, hunks in order), tolerant context matching, what an update keeps (CRLF, BOM), parse errors by
// line, the all-or-nothing transaction (a failing hunk, an unwritable file, a failure part-way through the
// commit), and permissions asked for every path before anything is read.

import { describe, expect, test } from "bun:test"
import { chmodSync, existsSync, linkSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { harness, textOf } from "../support/builtin"
import { tempDir } from "../support/temp"

const patch = (...lines: ReadonlyArray<string>) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n")

const read = (directory: string, path: string) => readFileSync(join(directory, path), "utf8")

/** Every file under a directory with its content, to show that nothing changed. */
const tree = (directory: string): Record<string, string> => {
  const files: Record<string, string> = {}
  for (const entry of readdirSync(directory, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files[join(entry.parentPath, entry.name).slice(directory.length + 1)] = readFileSync(join(entry.parentPath, entry.name), "utf8")
  }
  return files
}

describe("apply_patch", () => {
  test("adds, updates, moves and deletes files, reporting each with its line counts", async () => {
    const h = harness({
      files: {
        "src/app.ts": "import a\n\nfunction main() {\n  run()\n}\n",
        "old/name.ts": "export const x = 1\n",
        "gone.txt": "one\ntwo\nthree\n",
      },
    })
    const { settlement } = await h.settle("apply_patch", {
      patchText: patch(
        "*** Add File: docs/new.md",
        "+# Title",
        "+",
        "+Body",
        "*** Update File: src/app.ts",
        "@@ function main() {",
        "-  run()",
        "+  setup()",
        "+  run()",
        " }",
        "*** Update File: old/name.ts",
        "*** Move to: new/name.ts",
        "@@",
        "-export const x = 1",
        "+export const x = 2",
        "*** Delete File: gone.txt",
      ),
    })
    expect(settlement.status).toBe("success")
    expect(settlement.structured).toEqual({
      files: [
        { path: "docs/new.md", action: "added", added: 3, removed: 0 },
        { path: "src/app.ts", action: "updated", added: 1, removed: 0 },
        { path: "new/name.ts", action: "moved", from: "old/name.ts", added: 1, removed: 1 },
        { path: "gone.txt", action: "deleted", added: 0, removed: 3 },
      ],
    })
    expect(textOf(settlement)).toBe(
      "Applied the patch to 4 files:\nA docs/new.md (+3)\nM src/app.ts (+1)\nR old/name.ts -> new/name.ts (+1 -1)\nD gone.txt (-3)",
    )
    expect(tree(h.directory)).toEqual({
      "docs/new.md": "# Title\n\nBody\n",
      "src/app.ts": "import a\n\nfunction main() {\n  setup()\n  run()\n}\n",
      "new/name.ts": "export const x = 2\n",
    })
  })

  test("a move without hunks renames the file", async () => {
    const h = harness({ files: { "a.txt": "keep\n" } })
    const { settlement } = await h.settle("apply_patch", { patchText: patch("*** Update File: a.txt", "*** Move to: b/c.txt") })
    expect(settlement.structured).toEqual({ files: [{ path: "b/c.txt", action: "moved", from: "a.txt", added: 0, removed: 0 }] })
    expect(tree(h.directory)).toEqual({ "b/c.txt": "keep\n" })
  })

  test("keeps an updated file's CRLF line endings, its byte order mark and a missing final line break", async () => {
    const h = harness({ files: { "win.txt": "\uFEFFa\r\nb\r\nc" } })
    await h.settle("apply_patch", { patchText: patch("*** Update File: win.txt", " a", "-b", "+B", "+B2", " c") })
    expect(readFileSync(join(h.directory, "win.txt"))).toEqual(Buffer.from("\uFEFFa\r\nB\r\nB2\r\nc"))
  })

  test("a line added after the last line of a file without a final line break goes on a line of its own", async () => {
    const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, string]> = [
      ["a\nb", ["@@", " b", "+c"], "a\nb\nc"],
      ["a\nb", ["@@ b", "+c"], "a\nb\nc"],
      ["a\nb", ["+c"], "a\nb\nc"],
      ["a\nb", ["@@ a", "+x"], "a\nx\nb"],
      ["a\r\nb", ["@@", " b", "+c"], "a\r\nb\r\nc"],
      ["a\r\nb", ["@@ b", "+c", "+d"], "a\r\nb\r\nc\r\nd"],
      ["a\r\nb", ["+c"], "a\r\nb\r\nc"],
      // A file that ends with a line break keeps it.
      ["a\nb\n", ["@@ b", "+c"], "a\nb\nc\n"],
    ]
    for (const [content, hunk, expected] of cases) {
      const h = harness({ files: { "a.txt": content } })
      const { settlement } = await h.settle("apply_patch", { patchText: patch("*** Update File: a.txt", ...hunk) })
      expect(settlement.status).toBe("success")
      expect(read(h.directory, "a.txt")).toBe(expected)
    }
  })

  test("tolerates a heredoc around the patch", async () => {
    for (const [open, close] of [["cat <<'EOF'", "EOF"], ['apply_patch <<"EOF"', "EOF"], ["<<PATCH", "PATCH"]] as const) {
      const h = harness({ files: { "a.txt": "x\n" } })
      const { settlement } = await h.settle("apply_patch", {
        patchText: `${open}\n${patch("*** Update File: a.txt", "-x", "+y")}\n${close}\n`,
      })
      expect(settlement.status).toBe("success")
      expect(read(h.directory, "a.txt")).toBe("y\n")
    }
  })

  test("tolerates trailing whitespace on markers and on context lines", async () => {
    const h = harness({ files: { "a.txt": "one   \ntwo\nthree\n" } })
    const { settlement } = await h.settle("apply_patch", {
      patchText: ["*** Begin Patch  ", "*** Update File: a.txt   ", " one", "-two  ", "+TWO", " three", "*** End Patch \t"].join("\n"),
    })
    expect(settlement.status).toBe("success")
    expect(read(h.directory, "a.txt")).toBe("one   \nTWO\nthree\n")
  })

  test("matches context despite curly quotes, dashes and non-breaking spaces", async () => {
    const h = harness({ files: { "a.txt": `say("it's -- fine")\nnext\n`, "b.txt": "“quoted” — text\n" } })
    const { settlement } = await h.settle("apply_patch", {
      patchText: patch(
        "*** Update File: a.txt",
        "-say(“it’s –– fine”)",
        "+say(\"changed\")",
        " next",
        "*** Update File: b.txt",
        '-"quoted"\u00A0- text',
        "+plain",
      ),
    })
    expect(settlement.status).toBe("success")
    expect(read(h.directory, "a.txt")).toBe('say("changed")\nnext\n')
    expect(read(h.directory, "b.txt")).toBe("plain\n")
  })

  test("finds hunks in order: repeated context matches the next occurrence", async () => {
    const h = harness({ files: { "a.txt": "x = 0\ny\nx = 0\ny\n" } })
    await h.settle("apply_patch", { patchText: patch("*** Update File: a.txt", "@@", "-x = 0", "+x = 1", "@@", "-x = 0", "+x = 2") })
    expect(read(h.directory, "a.txt")).toBe("x = 1\ny\nx = 2\ny\n")
  })

  test("an @@ line places the hunk after it; unified-diff ranges after @@ are ignored", async () => {
    const file = "def a():\n    return 0\n\ndef b():\n    return 0\n"
    const h = harness({ files: { "a.py": file, "b.py": file } })
    await h.settle("apply_patch", {
      patchText: patch(
        "*** Update File: a.py",
        "@@ def b():",
        "-    return 0",
        "+    return 2",
        "*** Update File: b.py",
        "@@ -1,2 +1,2 @@",
        "-    return 0",
        "+    return 1",
      ),
    })
    expect(read(h.directory, "a.py")).toBe("def a():\n    return 0\n\ndef b():\n    return 2\n")
    expect(read(h.directory, "b.py")).toBe("def a():\n    return 1\n\ndef b():\n    return 0\n")
  })

  test("*** End of File anchors a hunk at the end of the file", async () => {
    const h = harness({ files: { "a.txt": "end\nmiddle\nend\n" } })
    await h.settle("apply_patch", { patchText: patch("*** Update File: a.txt", "-end", "+END", "*** End of File") })
    expect(read(h.directory, "a.txt")).toBe("end\nmiddle\nEND\n")
  })
})

describe("apply_patch errors", () => {
  const failureOf = async (files: Record<string, string>, patchText: string) => {
    const h = harness({ files })
    const { settlement } = await h.settle("apply_patch", { patchText })
    expect(settlement).toMatchObject({ status: "error", error: { kind: "failure" } })
    expect(tree(h.directory)).toEqual(files)
    return settlement.error!.message
  }

  test("parse errors name the line and what was expected", async () => {
    expect(await failureOf({}, "*** Update File: a.txt\n*** End Patch")).toBe(
      'The patch could not be read. Line 1: expected "*** Begin Patch", found "*** Update File: a.txt". Nothing was changed.',
    )
    expect(await failureOf({ "a.txt": "x\n" }, patch("*** Update File: a.txt", " x", "oops"))).toContain(
      'Line 4: expected a hunk line starting with " " (context), "-" (removed) or "+" (added)',
    )
    expect(await failureOf({}, patch("*** Add File: a.txt", "no plus"))).toContain(
      'Line 3: expected an added line starting with "+" (the content of a.txt)',
    )
    expect(await failureOf({}, "*** Begin Patch\n*** Add File: a.txt\n+x")).toContain(
      'Line 3: the patch ends without "*** End Patch"',
    )
    expect(await failureOf({}, patch("*** Rename File: a.txt"))).toContain('Line 2: expected "*** Add File: <path>"')
    expect(await failureOf({ "a.txt": "x\n" }, patch("*** Update File: a.txt"))).toContain('Line 2: "*** Update File: a.txt" has no hunks')
  })

  test("adding a file that exists, or updating or deleting one that does not, is an error", async () => {
    expect(await failureOf({ "a.txt": "x\n" }, patch("*** Add File: a.txt", "+y"))).toBe(
      'Cannot add a.txt (patch line 2): it already exists. Use "*** Update File: a.txt" to change it. Nothing was changed.',
    )
    expect(await failureOf({}, patch("*** Update File: a.txt", "-x", "+y"))).toBe(
      'Cannot update a.txt (patch line 2): the file does not exist. To create it, use "*** Add File: a.txt". Nothing was changed.',
    )
    expect(await failureOf({}, patch("*** Delete File: a.txt"))).toBe(
      "Cannot delete a.txt (patch line 2): the file does not exist. Nothing was changed.",
    )
  })

  test("a hunk that does not match names the hunk and its lines, and shows the closest region with line numbers", async () => {
    const message = await failureOf({ "a.txt": "one\ntwo\n" }, patch("*** Update File: a.txt", " one", "-three", "+four"))
    expect(message).toBe(
      "Cannot apply hunk 1 of 1 to a.txt (patch line 3): could not find these lines:\n  one\n  three\nThe most similar region is lines 1-2 (50% similar):\n1| one\n2| two\nRead the file again and make the hunk's context and removed lines match it. Nothing was changed.",
    )
  })

  test("a file that is not UTF-8 is refused and left alone", async () => {
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a])
    const h = harness({ files: { "a.txt": latin1 } })
    const { settlement } = await h.settle("apply_patch", { patchText: patch("*** Update File: a.txt", "-café", "+cafe") })
    expect(settlement.error?.message).toStartWith("Cannot change a.txt with apply_patch: it is not valid UTF-8 text (invalid byte at offset 3).")
    expect(readFileSync(join(h.directory, "a.txt"))).toEqual(latin1)
  })

  test("a path ending with / names a directory and is refused, naming its patch line", async () => {
    const files = { "a.txt": "x\n" }
    expect(await failureOf(files, patch("*** Add File: newdir/", "+y"))).toBe(
      'Cannot use newdir/ (patch line 2): it ends with "/", so it names a directory. Give a file path (without the trailing "/", or with a file name after it). Nothing was changed.',
    )
    expect(await failureOf(files, patch("*** Update File: a.txt", "-x", "+y", "*** Update File: a.txt/", "-x", "+z"))).toStartWith(
      'Cannot use a.txt/ (patch line 5): it ends with "/"',
    )
    expect(await failureOf(files, patch("*** Update File: a.txt", "*** Move to: b/."))).toStartWith(
      'Cannot use b/. (patch line 2): it ends with "/."',
    )
    expect(await failureOf(files, patch("*** Delete File: a.txt/"))).toStartWith('Cannot use a.txt/ (patch line 2)')
  })

  test("a file changed twice, or moved onto an existing file the patch does not delete, is refused", async () => {
    expect(await failureOf({ "a.txt": "x\n" }, patch("*** Update File: a.txt", "-x", "+y", "*** Delete File: a.txt"))).toContain(
      "The patch changes a.txt twice (sections at lines 2 and 5)",
    )
    expect(await failureOf({ "a.txt": "x\n", "b.txt": "b\n" }, patch("*** Update File: a.txt", "*** Move to: b.txt"))).toContain(
      'Cannot move a.txt to b.txt (patch line 2): b.txt already exists. To replace it, delete it in the same patch ("*** Delete File: b.txt")',
    )
    expect(
      await failureOf(
        { "a.txt": "x\n", "b.txt": "b\n", "c.txt": "c\n" },
        patch("*** Delete File: b.txt", "*** Update File: a.txt", "*** Move to: b.txt", "*** Update File: c.txt", "*** Move to: b.txt"),
      ),
    ).toContain("The patch changes b.txt twice")
  })

  // Two names of one file (hard links) were two files to the patch: each name got half of it, in two files after.
  test("two names of one file (hard links) are one file: changing both is refused, and nothing changes", async () => {
    const h = harness({ files: { "f.txt": "x\ny\n" } })
    linkSync(join(h.directory, "f.txt"), join(h.directory, "hard.txt"))
    const { settlement } = await h.settle("apply_patch", {
      patchText: patch("*** Update File: f.txt", "@@", "-x", "+X", "*** Update File: hard.txt", "@@", "-y", "+Y"),
    })
    expect(settlement.error?.message).toBe(
      "The patch changes hard.txt twice (hard.txt and f.txt are one file: hard links, two names of it) (sections at lines 2 and 6). " +
        "Put all changes to a file in one section. Nothing was changed.",
    )
    expect(readFileSync(join(h.directory, "f.txt"), "utf8")).toBe("x\ny\n")
    expect(statSync(join(h.directory, "hard.txt")).ino).toBe(statSync(join(h.directory, "f.txt")).ino)
    // Moved onto its own other name: one file, said so, not "twice … at lines 2 and 2".
    expect((await h.settle("apply_patch", { patchText: patch("*** Update File: f.txt", "*** Move to: hard.txt") })).settlement.error?.message).toBe(
      "Cannot move f.txt to hard.txt (patch line 2): they are one file under two names (hard links). Update it under one " +
        "name; remove the other name with a command if it should go. Nothing was changed.",
    )
    // A move onto a name the patch deletes, which is another name of a file the patch deletes too: refused at once,
    // not at the commit as "created by someone else".
    writeFileSync(join(h.directory, "c.txt"), "c\n")
    const moved = await h.settle("apply_patch", {
      patchText: patch("*** Delete File: f.txt", "*** Update File: c.txt", "*** Move to: hard.txt"),
    })
    expect(moved.settlement.error?.message).toContain("The patch changes hard.txt twice (hard.txt and f.txt are one file: hard links, two names of it)")
    // One section through one name is applied as any write is (the new file replaces that name; the other keeps the
    // old content, as the answer says).
    const once = await h.settle("apply_patch", { patchText: patch("*** Update File: hard.txt", "@@", "-x", "+X", " y") })
    expect(once.settlement.status).toBe("success")
    expect(textOf(once.settlement)).toContain("its other hard link: that name still holds the old content")
    expect(readFileSync(join(h.directory, "hard.txt"), "utf8")).toBe("X\ny\n")
  })

  test("a unified diff is refused with a reminder of the format, changing nothing", async () => {
    const message = await failureOf(
      { "a.txt": "one\n" },
      ["--- a/a.txt", "+++ b/a.txt", "@@ -1,1 +1,1 @@", "-one", "+two", ""].join("\n"),
    )
    expect(message).toContain("Line 1: this is a unified diff")
    expect(message).toContain('"*** Update File: <path>"')
    expect(message).toContain("Nothing was changed.")
  })
})

describe("apply_patch moves, spacing and line endings", () => {
  test("moves a file onto one the same patch deletes, in either order", async () => {
    for (const order of ["delete first", "move first"]) {
      const h = harness({ files: { "a.txt": "one\ntwo\n", "b.txt": "old b\n" } })
      const remove = ["*** Delete File: b.txt"]
      const move = ["*** Update File: a.txt", "*** Move to: b.txt", "@@", " one", "-two", "+TWO"]
      const { settlement } = await h.settle("apply_patch", {
        patchText: patch(...(order === "delete first" ? [...remove, ...move] : [...move, ...remove])),
      })
      expect(settlement.status).toBe("success")
      expect(tree(h.directory)).toEqual({ "b.txt": "one\nTWO\n" })
      expect(textOf(settlement)).toContain("D b.txt")
      expect(textOf(settlement)).toContain("R a.txt -> b.txt")
    }
  })

  test("blank lines after *** End of File and after *** End Patch are ignored", async () => {
    const h = harness({ files: { "a.txt": "one\ntwo\n" } })
    const { settlement } = await h.settle("apply_patch", {
      patchText: ["*** Begin Patch", "*** Update File: a.txt", " one", "-two", "+2", "*** End of File", "", "", "*** End Patch", "", ""].join("\n"),
    })
    expect(settlement.status).toBe("success")
    expect(read(h.directory, "a.txt")).toBe("one\n2\n")
  })

  test("empty lines between a hunk and the next section are not context", async () => {
    const h = harness({ files: { "a.txt": "one\ntwo\n", "b.txt": "x\n" } })
    const { settlement } = await h.settle("apply_patch", {
      patchText: patch("*** Update File: a.txt", " one", "-two", "+2", "", "", "*** Update File: b.txt", "-x", "+y"),
    })
    expect(settlement.status).toBe("success")
    expect(tree(h.directory)).toEqual({ "a.txt": "one\n2\n", "b.txt": "y\n" })
  })

  test("in a file with mixed line endings, unchanged lines keep theirs and new lines take their neighbours'", async () => {
    const h = harness({ files: { "m.txt": "a\r\nb\nc\r\nd\ne\n" } })
    const { settlement } = await h.settle("apply_patch", {
      patchText: patch("*** Update File: m.txt", " a", " b", "-c", "+C", "+C2", " d"),
    })
    expect(settlement.status).toBe("success")
    // c ended in CRLF, so its replacements do; the context lines a, b and d keep their own.
    expect(read(h.directory, "m.txt")).toBe("a\r\nb\nC\r\nC2\r\nd\ne\n")
  })

  // The splice starts at the hunk's first context line: its ending was taken for the replaced line's.
  test("a replaced line's ending is its own, not the hunk's first context line's; an added line takes the line before it", async () => {
    const h = harness({ files: { "r.txt": "a\r\nb\nc\n", "i.txt": "a\r\nb\nc\n", "j.txt": "a\nb\r\nc\r\n" } })
    const { settlement } = await h.settle("apply_patch", {
      patchText: patch(
        "*** Update File: r.txt", " a", "-b", "+B", " c",
        "*** Update File: i.txt", " a", "+X", " b",
        "*** Update File: j.txt", " a", "+X", " b",
      ),
    })
    expect(settlement.status).toBe("success")
    expect(read(h.directory, "r.txt")).toBe("a\r\nB\nc\n")
    expect(read(h.directory, "i.txt")).toBe("a\r\nX\r\nb\nc\n")
    expect(read(h.directory, "j.txt")).toBe("a\nX\nb\r\nc\r\n")
  })

  test("lines added at the end of a mixed file take the last line's ending", async () => {
    const h = harness({ files: { "m.txt": "a\nb\nc\r\n" } })
    await h.settle("apply_patch", { patchText: patch("*** Update File: m.txt", "@@", "+d") })
    expect(read(h.directory, "m.txt")).toBe("a\nb\nc\r\nd\r\n")
  })
})

describe("apply_patch is all or nothing", () => {
  test("a later hunk that does not apply leaves earlier files untouched", async () => {
    const files = { "a.txt": "a\n", "b.txt": "b\n" }
    const h = harness({ files })
    const { settlement } = await h.settle("apply_patch", {
      patchText: patch("*** Add File: new/n.txt", "+n", "*** Update File: a.txt", "-a", "+A", "*** Update File: b.txt", "-missing", "+B"),
    })
    expect(settlement.error?.message).toStartWith("Cannot apply hunk 1 of 1 to b.txt")
    expect(tree(h.directory)).toEqual(files)
    expect(existsSync(join(h.directory, "new"))).toBe(false)
  })

  test("a later file that cannot be written leaves earlier files untouched", async () => {
    const root = process.getuid?.() === 0
    const h = harness({ files: { "a.txt": "a\n", "locked/keep.txt": "k\n" } })
    // As root, file permissions do not stop a write; /sys refuses new files whoever asks.
    const target = root ? "/sys/core-patch-test.txt" : "locked/new.txt"
    if (!root) chmodSync(join(h.directory, "locked"), 0o555)
    const { settlement } = await h.settle(
      "apply_patch",
      { patchText: patch("*** Update File: a.txt", "-a", "+A", `*** Add File: ${target}`, "+n") },
      { reply: { reply: "once" } },
    )
    if (!root) chmodSync(join(h.directory, "locked"), 0o755)
    expect(settlement.error?.message).toMatch(/^Cannot write .*: permission denied \(EACCES\)\./)
    expect(settlement.error?.message).toContain("The patch was not applied: no file was changed")
    expect(tree(h.directory)).toEqual({ "a.txt": "a\n", "locked/keep.txt": "k\n" })
    if (root) expect(existsSync(target)).toBe(false)
  })

  test("a failure part-way through the commit restores the files already changed", async () => {
    const files = { "a.txt": "a\n", "d.txt": "delete me\n", "m.txt": "move me\n", "z.txt": "z\n" }
    const h = harness({ files })
    const { settlement } = await h.settle(
      "apply_patch",
      {
        patchText: patch(
          "*** Update File: a.txt",
          "-a",
          "+A",
          "*** Delete File: d.txt",
          "*** Update File: m.txt",
          "*** Move to: moved/m.txt",
          "*** Add File: added.txt",
          "+new",
          "*** Update File: z.txt",
          "-z",
          "+Z",
        ),
      },
      // Everything is staged when progress is reported; another writer then changes the last file.
      { onProgress: () => writeFileSync(join(h.directory, "z.txt"), "someone else\n") },
    )
    expect(settlement).toMatchObject({ status: "error", error: { kind: "failure" } })
    expect(settlement.error?.message).toContain("z.txt changed on disk while the change was being made")
    expect(settlement.error?.message).toContain("files already written were restored")
    expect(tree(h.directory)).toEqual({ ...files, "z.txt": "someone else\n" })
    expect(existsSync(join(h.directory, "moved"))).toBe(false)
  })
})

describe("apply_patch permissions", () => {
  test("every path is authorized before any file is read: a refusal comes before a missing file", async () => {
    const outside = tempDir("core-outside-")
    const h = harness({ files: { "a.txt": "a\n" } })
    const { settlement, asks } = await h.settle("apply_patch", {
      patchText: patch("*** Update File: missing.txt", "-x", "+y", `*** Add File: ${join(outside, "n.txt")}`, "+n"),
    })
    expect(settlement.status).toBe("declined")
    expect(asks).toEqual([{ action: "external_directory", resources: [`${outside}/*`], save: [`${outside}/*`] }])
    expect(existsSync(join(outside, "n.txt"))).toBe(false)
  })

  test("a denied path is never read or written, whatever the other files", async () => {
    const files = { "open.txt": "o\n", "secret.txt": "s\n" }
    const h = harness({ files, rules: [{ action: "edit", resource: "secret*", effect: "deny" }] })
    const { settlement } = await h.settle("apply_patch", {
      patchText: patch("*** Update File: open.txt", "-o", "+O", "*** Update File: secret.txt", "-does not match", "+x"),
    })
    expect(settlement).toMatchObject({ status: "error", error: { kind: "denied" } })
    expect(tree(h.directory)).toEqual(files)
  })

  test("a move target outside the Location asks external_directory", async () => {
    const outside = tempDir("core-outside-")
    const h = harness({ files: { "a.txt": "a\n" } })
    const declined = await h.settle("apply_patch", {
      patchText: patch("*** Update File: a.txt", `*** Move to: ${join(outside, "a.txt")}`),
    })
    expect(declined.settlement.status).toBe("declined")
    expect(declined.asks[0]).toMatchObject({ action: "external_directory", resources: [`${outside}/*`] })
    expect(tree(h.directory)).toEqual({ "a.txt": "a\n" })
    const approved = await h.settle(
      "apply_patch",
      { patchText: patch("*** Update File: a.txt", `*** Move to: ${join(outside, "a.txt")}`) },
      { reply: { reply: "once" } },
    )
    expect(approved.settlement.structured).toEqual({
      files: [{ path: join(outside, "a.txt"), action: "moved", from: "a.txt", added: 0, removed: 0 }],
    })
    expect(read(outside, "a.txt")).toBe("a\n")
    expect(tree(h.directory)).toEqual({})
  })

  test("a symlink leading out of the Location is checked where it leads", async () => {
    const outside = tempDir("core-outside-")
    writeFileSync(join(outside, "target.txt"), "outside\n")
    const h = harness()
    symlinkSync(join(outside, "target.txt"), join(h.directory, "escape.txt"))
    const { settlement, asks } = await h.settle("apply_patch", {
      patchText: patch("*** Update File: escape.txt", "-outside", "+inside"),
    })
    expect(settlement.status).toBe("declined")
    expect(asks[0]).toMatchObject({ action: "external_directory", resources: [`${outside}/*`] })
    expect(read(outside, "target.txt")).toBe("outside\n")
  })
})

// A cancel that comes while the patch is being committed cannot stop it (a commit half done would leave the files
// half patched): the patch is applied in full, and the call says so. It was settled `cancelled` ("may have done part
// of its work"), a host retried it, and the patch went in twice.
describe("apply_patch cancelled while it commits", () => {
  test("settles with the patch it applied, recorded so, and leaves no temp file", async () => {
    const big = "x\n".repeat(2_000_000)
    const h = harness({ files: { "big.txt": `${big}THE END\n`, "small.txt": "a\n" } })
    const outcome = await h.settle(
      "apply_patch",
      { patchText: patch("*** Update File: big.txt", "@@", "-THE END", "+THE END", "+more", "*** Update File: small.txt", "-a", "+b") },
      { interruptAt: "Applying the patch", session: "ses_cancel", call: "call_cancel" },
    )
    expect(outcome.settlement).toMatchObject({ status: "success", structured: { files: [{ path: "big.txt" }, { path: "small.txt" }] } })
    expect(read(h.directory, "big.txt").endsWith("THE END\nmore\n")).toBe(true)
    expect(read(h.directory, "small.txt")).toBe("b\n")
    expect(readdirSync(h.directory).sort()).toEqual(["big.txt", "small.txt"])
  })
})
