// The list built-in settled in a real Location: the tree's order and layout, what it leaves out (default ignores,
// ignore globs, .gitignore, .git) and what it keeps (hidden files), the entry cap with its exact counts, and the
// errors and permission checks.

import { describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { List } from "../../src/builtin/list"
import { harness, textOf } from "../support/builtin"
import { tempDir } from "../support/temp"

describe("list", () => {
  test("shows the Location's tree, directories first, then files, each by name", async () => {
    const h = harness({ files: { "b.txt": "", "a.txt": "", "src/z.ts": "", "src/lib/y.ts": "", "docs/x.md": "" } })
    const { settlement } = await h.settle("list", {})
    expect(settlement.status).toBe("success")
    expect(textOf(settlement)).toBe(
      ["./", "  docs/", "    x.md", "  src/", "    lib/", "      y.ts", "    z.ts", "  a.txt", "  b.txt"].join("\n"),
    )
    expect(settlement.structured).toEqual({
      path: ".",
      entries: [
        { path: "docs/" },
        { path: "docs/x.md" },
        { path: "src/" },
        { path: "src/lib/" },
        { path: "src/lib/y.ts" },
        { path: "src/z.ts" },
        { path: "a.txt" },
        { path: "b.txt" },
      ],
      total: 8,
      notShown: 0,
    })
  })

  test("lists a subdirectory given as path", async () => {
    const h = harness({ files: { "src/lib/y.ts": "", "src/z.ts": "", "other.txt": "" } })
    const { settlement } = await h.settle("list", { path: "src" })
    expect(textOf(settlement)).toBe("src/\n  lib/\n    y.ts\n  z.ts")
  })

  test("leaves out dependency, build and cache directories, .gitignore'd files and .git, but keeps hidden files", async () => {
    const h = harness({
      files: {
        "node_modules/dep/index.js": "",
        "dist/out.js": "",
        ".venv/lib.py": "",
        "__pycache__/m.pyc": "",
        ".cache/x": "",
        "target/debug/app": "",
        ".git/HEAD": "",
        ".gitignore": "secret.env\n",
        "secret.env": "",
        ".hidden.json": "",
        "src/app.ts": "",
      },
    })
    const { settlement } = await h.settle("list", {})
    expect((settlement.structured as List.Output).entries.map((entry) => entry.path)).toEqual([
      "src/",
      "src/app.ts",
      ".gitignore",
      ".hidden.json",
    ])
  })

  test("honours .gitignore in a Location that is not a git repository", async () => {
    const h = harness({ files: { ".gitignore": "*.tmp\n", "a.tmp": "", "b.ts": "" } })
    const { settlement } = await h.settle("list", {})
    expect((settlement.structured as List.Output).entries.map((entry) => entry.path)).toEqual([".gitignore", "b.ts"])
  })

  test("lists a default-ignored directory when it is asked for by path", async () => {
    const h = harness({ files: { "node_modules/dep/index.js": "" } })
    const { settlement } = await h.settle("list", { path: "node_modules" })
    expect(textOf(settlement)).toBe("node_modules/\n  dep/\n    index.js")
  })

  test("ignore adds globs to leave out", async () => {
    const h = harness({ files: { "a.log": "", "logs/b.log": "", "fixtures/x.json": "", "keep.ts": "" } })
    const { settlement } = await h.settle("list", { ignore: ["*.log", "fixtures/"] })
    expect((settlement.structured as List.Output).entries.map((entry) => entry.path)).toEqual(["keep.ts"])
  })

  test("shows 100 entries breadth first and counts exactly what it left out, per directory and in all", async () => {
    const files: Record<string, string> = {}
    for (let index = 0; index < 60; index++) files[`a/f${String(index).padStart(2, "0")}`] = ""
    for (let index = 0; index < 60; index++) files[`b/g${String(index).padStart(2, "0")}`] = ""
    files["top.txt"] = ""
    const h = harness({ files })
    const { settlement } = await h.settle("list", {})
    const output = settlement.structured as List.Output
    // 2 directories + 1 file + 123 files under them = 123 entries; the first level, then 97 of the next.
    expect(output).toMatchObject({ total: 123, notShown: 23 })
    expect(output.entries).toHaveLength(List.MAX_ENTRIES)
    expect(output.entries[0]).toEqual({ path: "a/" })
    expect(output.entries.find((entry) => entry.path === "b/")).toEqual({ path: "b/", notShown: 23 })
    expect(output.entries.filter((entry) => entry.path.startsWith("b/g"))).toHaveLength(37)
    expect(output.entries[output.entries.length - 1]).toEqual({ path: "top.txt" })
    const text = textOf(settlement)
    expect(text).toContain("\n  b/  (23 more not shown)\n")
    expect(text).toEndWith(
      "(100 of 123 entries shown; 23 not shown. List a subdirectory with path to see more, or find files by name with glob.)",
    )
  })

  test("says so when a directory has no files", async () => {
    const h = harness()
    const { settlement } = await h.settle("list", {})
    expect(settlement.structured).toEqual({ path: ".", entries: [], total: 0, notShown: 0 })
    expect(textOf(settlement)).toBe("./ (no files)")
  })

  test("a file, or a missing path, is a clear failure", async () => {
    const h = harness({ files: { "a.txt": "" } })
    const file = await h.settle("list", { path: "a.txt" })
    expect(file.settlement.error?.message).toBe("a.txt is a file, not a directory. Use read to read a file, or list its parent directory.")
    const missing = await h.settle("list", { path: "nope" })
    expect(missing.settlement.error?.message).toBe(
      "Directory not found: nope. Give an existing directory, or leave path out to list the project.",
    )
  })

  test("a denied directory is not listed, and one outside the Location asks external_directory", async () => {
    const outside = tempDir()
    writeFileSync(join(outside, "x.txt"), "")
    const h = harness({ files: { "private/a.txt": "" }, rules: [{ action: "list", resource: "private", effect: "deny" }] })
    const denied = await h.settle("list", { path: "private" })
    expect(denied.settlement.error?.kind).toBe("denied")
    const { settlement, asks } = await h.settle("list", { path: outside })
    expect(settlement.status).toBe("declined")
    expect(asks).toEqual([{ action: "external_directory", resources: [`${outside}/*`], save: [`${outside}/*`] }])
    const approved = await h.settle("list", { path: outside }, { reply: { reply: "once" } })
    expect(textOf(approved.settlement)).toBe(`${outside}/\n  x.txt`)
  })
})
