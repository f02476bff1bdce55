// The walk that finds what a command's mount namespace must cover: denied files one by one, a directory whole only
// when the rules deny it, any name made in it and everything found in it (never a tree an allow rule reaches into,
// never a root), a link's denied target, every other name of a denied file, and the empty file covers are made of.

import { describe, expect, test } from "bun:test"
import { chmodSync, linkSync, mkdirSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import { Rule } from "../../src/permission/rule"
import { Covered } from "../../src/shell/covered"
import { tempDir } from "../support/temp"

/** A tree of files under a fresh real directory. */
const tree = (files: ReadonlyArray<string>): string => {
  const root = realpathSync(tempDir("core-covered-"))
  for (const file of files) {
    mkdirSync(join(root, file, ".."), { recursive: true })
    writeFileSync(join(root, file), "x")
  }
  return root
}

/** The agent's read rules as Builtin.readDenied makes them: relative inside `root`, absolute outside. */
const rules = (root: string, resources: Record<string, "allow" | "deny">) => {
  const denier = Rule.denier(
    [{ action: "*", resource: "*", effect: "allow" }, ...Object.entries(resources).map(([resource, effect]) => ({ action: "read", resource, effect }))],
    "read",
  )!
  const test = (real: string) => denier(real === root ? "." : real.startsWith(`${root}/`) ? relative(root, real) : real)
  return Object.assign(test, { key: `${root}\0${denier.key}` })
}

const names = (root: string, paths: ReadonlyArray<string>) => paths.map((path) => relative(root, path)).sort()

describe("Covered.walk", () => {
  test("covers each denied file, wherever it lies, and nothing else", () => {
    const root = tree(["app.env", "sub/deep.env", "sub/notes.txt", "a b\nc.env", "notes.txt"])
    const found = Covered.walk([root], rules(root, { "*.env": "deny" }))
    expect(names(root, found.files)).toEqual(["a b\nc.env", "app.env", "sub/deep.env"])
    expect(found.directories).toEqual([])
    expect(found.partial).toBe(false)
  })

  test("a directory the rules deny whole is one cover; one an allow rule reaches into is covered file by file", () => {
    const root = tree(["secrets/a.txt", "secrets/inner/b.txt", "mixed/a.txt", "mixed/public/p.txt", "keep.txt"])
    const found = Covered.walk([root], rules(root, { "secrets": "deny", "secrets/*": "deny", "mixed/*": "deny", "mixed/public/*": "allow" }))
    expect(names(root, found.directories)).toEqual(["secrets"])
    expect(names(root, found.files)).toEqual(["mixed/a.txt"])
  })

  test("a root is never covered whole, even when a rule denies everything", () => {
    const root = tree(["a.txt", "sub/b.txt"])
    const found = Covered.walk([root], rules(root, { "*": "deny" }))
    expect(names(root, found.directories)).toEqual(["sub"])
    expect(names(root, found.files)).toEqual(["a.txt"])
  })

  test("a link's denied target is covered, inside the tree or out of it; a link named like a denied file is not", () => {
    const root = tree(["app.env", "notes.txt"])
    const outside = tree(["far.env"])
    symlinkSync(join(root, "app.env"), join(root, "alias.txt"))
    symlinkSync(join(outside, "far.env"), join(root, "far.txt"))
    symlinkSync(join(root, "notes.txt"), join(root, "named.env"))
    symlinkSync(join(root, "missing.env"), join(root, "dangling.txt"))
    const found = Covered.walk([root], rules(root, { "*.env": "deny" }))
    expect(found.files.slice().sort()).toEqual([join(root, "app.env"), join(outside, "far.env")].sort())
  })

  test("every other name of a denied file made before the walk is covered too", () => {
    const root = tree(["app.env", "notes.txt"])
    linkSync(join(root, "app.env"), join(root, "copy.txt"))
    const found = Covered.walk([root], rules(root, { "*.env": "deny" }))
    expect(names(root, found.files)).toEqual(["app.env", "copy.txt"])
  })

  test("a missing root is passed over; past the entry limit the walk says it is partial", () => {
    const root = tree(["a/1.env", "b/2.env", "c/3.env"])
    const found = Covered.walk([root], rules(root, { "*.env": "deny" }), 4)
    expect(found.partial).toBe(true)
    const missing = Covered.walk([join(root, "nope")], rules(root, { "*.env": "deny" }))
    expect(found.files.length).toBeLessThan(3)
    expect(missing).toEqual({ files: [], directories: [], entries: 0, partial: false })
  })

  test("a folder it cannot list (moved past the longest path the kernel takes) stops the walk, as its bound does", () => {
    const root = tree(["a/1.env"])
    const name = "d".repeat(200)
    Bun.spawnSync(["bash", "-c", `for i in $(seq 22); do mkdir ${name} && cd ${name} || exit 1; done; echo s > deep.env`], { cwd: root })
    const found = Covered.walk([root], rules(root, { "*.env": "deny" }))
    expect(found.partial).toBe(true)
    expect(found.shut!.at.length).toBeGreaterThan(4096)
    expect(found.shut!.code).toBe("ENAMETOOLONG")
    rmSync(join(root, name), { recursive: true, force: true })
  })

  test("a name that is not UTF-8 (a file it would cover, a folder it would walk) stops the walk: no path core has leads to it", () => {
    for (const made of ["open(b'\\xfe.env', 'w').write('key')", "import os; os.mkdir(b'\\xff'); open(b'\\xff/deep.env', 'w').write('key')"]) {
      const root = tree(["a/1.env"])
      expect(Bun.spawnSync(["python3", "-c", made], { cwd: root }).exitCode).toBe(0)
      const found = Covered.walk([root], rules(root, { "*.env": "deny" }))
      expect(found.partial).toBe(true)
      expect(found.shut).toEqual({ at: expect.stringContaining("\uFFFD"), code: "EILSEQ" })
    }
    // Beside an entry whose name is U+FFFD written in UTF-8 (which a path made of the name read leads to), the same.
    const beside = tree(["k\uFFFD.env"])
    expect(Bun.spawnSync(["python3", "-c", "open(b'k\\xff.env', 'w').write('key')"], { cwd: beside }).exitCode).toBe(0)
    expect(Covered.walk([beside], rules(beside, { "*.env": "deny" })).shut).toEqual({ at: join(beside, "k\uFFFD.env"), code: "EILSEQ" })
    // One the rules would not deny by its name as read is passed over.
    const other = tree(["a/1.env"])
    expect(Bun.spawnSync(["python3", "-c", "open(b'notes\\xff.txt', 'w').write('x')"], { cwd: other }).exitCode).toBe(0)
    const passed = Covered.walk([other], rules(other, { "*.env": "deny" }))
    expect(passed.partial).toBe(false)
    expect(names(other, passed.files)).toEqual(["a/1.env"])
    // A name with U+FFFD written out in UTF-8 is a name like any other.
    const root = tree(["a/1.env", "\uFFFD/2.env", "\uFFFD.env"])
    expect(names(root, Covered.walk([root], rules(root, { "*.env": "deny" })).files).toSorted()).toEqual(["a/1.env", "\uFFFD.env", "\uFFFD/2.env"])
  })
})

describe("the rules' answers kept between walks", () => {
  test("are kept per set of rules: other rules in the same tree answer for themselves", () => {
    const root = tree(["app.env", "notes.txt", "key.pem"])
    const env = rules(root, { "*.env": "deny" })
    const pem = rules(root, { "*.pem": "deny" })
    expect((env as { key?: string }).key).toBeDefined()
    expect((env as { key?: string }).key).not.toBe((pem as { key?: string }).key)
    expect((env as { key?: string }).key).toBe((rules(root, { "*.env": "deny" }) as { key?: string }).key)
    expect(names(root, Covered.walk([root], env).files)).toEqual(["app.env"])
    expect(names(root, Covered.walk([root], pem).files)).toEqual(["key.pem"])
    expect(names(root, Covered.walk([root], env).files)).toEqual(["app.env"])
  })

  test("a file added to a folder already walked is found: the folder's listing is read again", () => {
    const root = tree(["sub/notes.txt"])
    const env = rules(root, { "*.env": "deny" })
    expect(Covered.walk([root], env).files).toEqual([])
    writeFileSync(join(root, "sub", "late.env"), "x")
    expect(names(root, Covered.walk([root], env).files)).toEqual(["sub/late.env"])
    // Deeper, in a new folder, and renamed into a denied name: each changes a folder the last walk looked at.
    mkdirSync(join(root, "sub", "new", "deeper"), { recursive: true })
    writeFileSync(join(root, "sub", "new", "deeper", "x.env"), "x")
    renameSync(join(root, "sub", "notes.txt"), join(root, "sub", "notes.env"))
    expect(names(root, Covered.walk([root], env).files)).toEqual(["sub/late.env", "sub/new/deeper/x.env", "sub/notes.env"])
    // A hard link made later, to a file already covered, in a folder already walked.
    linkSync(join(root, "sub", "late.env"), join(root, "sub", "new", "plain.txt"))
    expect(names(root, Covered.walk([root], env).files)).toContain("sub/new/plain.txt")
  })
})

describe("Covered.emptyIn", () => {
  test("makes an empty read-only file in the data directory, and makes it again if it was changed", () => {
    const data = join(tempDir("core-covered-data-"), "data")
    const path = Covered.emptyIn(data)!
    expect(path).toBe(join(data, Covered.EMPTY))
    expect(statSync(path).size).toBe(0)
    expect(statSync(path).mode & 0o777).toBe(0o444)
    chmodSync(path, 0o644)
    writeFileSync(path, "planted")
    expect(Covered.emptyIn(data)).toBe(path)
    expect(statSync(path).size).toBe(0)
    expect(Covered.emptyIn("/proc/nope")).toBeNull()
  })
})
