import { describe, expect, test } from "bun:test"
import { linkSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Protected } from "../../src/permission/protected"
import { tempDir } from "../support/temp"

const setup = () => {
  const root = realpathSync(tempDir("core-protected-paths-"))
  const location = join(root, "project")
  const home = join(root, "home")
  const dataDir = join(root, "data")
  mkdirSync(join(location, "lib"), { recursive: true })
  mkdirSync(join(dataDir, "outputs"), { recursive: true })
  writeFileSync(join(location, "core.json"), "{}")
  writeFileSync(join(dataDir, "core.db"), "store")
  writeFileSync(join(dataDir, "outputs", "out_1"), "kept")
  const roots = Protected.roots({ location, home, dataDir, readable: [join(dataDir, "outputs")] })
  return { root, location, home, dataDir, roots }
}

describe("Protected.change", () => {
  test("names what a change would touch, by path, case, symlinked entry and hard link; nothing for other paths", () => {
    const { root, location, home, dataDir, roots } = setup()
    expect(Protected.change(roots, join(location, "core.json"))).toContain("core.json of the Location")
    expect(Protected.change(roots, join(location, "Core.JSON"))).toContain("core.json")
    expect(Protected.change(roots, join(location, "tools", "new", "x.ts"))).toContain("tools/")
    expect(Protected.change(roots, join(home, "plugins", "p.ts"))).toContain("$CORE_HOME")
    expect(Protected.change(roots, join(dataDir, "outputs", "out_1"))).toContain("$CORE_DATA_DIR")
    expect(Protected.change(roots, join(location, "lib", "x.ts"))).toBeUndefined()
    expect(Protected.change(roots, join(location, "tools.ts"))).toBeUndefined()
    expect(Protected.change(roots, join(root, "elsewhere", "core.json"))).toBeUndefined()

    // tools/ made a symlink to another directory: changing that directory changes tools/.
    const target = join(root, "shared-tools")
    mkdirSync(target)
    symlinkSync(target, join(location, "tools"))
    expect(Protected.change(roots, join(target, "x.ts"))).toContain("tools/")

    // Other names of protected files: core.json itself (the same file), one under plugins/ (found by looking).
    linkSync(join(location, "core.json"), join(location, "lib", "alias.json"))
    expect(Protected.change(roots, join(location, "lib", "alias.json"))).toContain("core.json")
    mkdirSync(join(location, "plugins", "deep"), { recursive: true })
    writeFileSync(join(location, "plugins", "deep", "p.ts"), "export {}")
    linkSync(join(location, "plugins", "deep", "p.ts"), join(location, "lib", "p.ts"))
    expect(Protected.change(roots, join(location, "lib", "p.ts"))).toContain("through a hard link")
  })

  test("a directory holding a protected place counts only when asked to (encloses)", () => {
    const { root, location, roots } = setup()
    expect(Protected.change(roots, location)).toBeUndefined()
    expect(Protected.change(roots, location, { encloses: true })).toContain("which holds")
    expect(Protected.change(roots, root, { encloses: true })).toContain("which holds")
    expect(Protected.change(roots, join(location, "lib"), { encloses: true })).toBeUndefined()
  })
})

describe("Protected.changeMatching", () => {
  test("a glob's pattern reads wider than the shell's (any first character, any case), never narrower", () => {
    const matches = (pattern: string, name: string) => Protected.globMatcher(pattern)!(name)
    expect(matches("*.txt", "a.txt")).toBe(true)
    expect(matches("*.txt", "core.json")).toBe(false)
    expect(matches("*", ".core")).toBe(true)
    expect(matches("?ore.[j]son", "CORE.JSON")).toBe(true)
    expect(matches("[!a]*", "core.json")).toBe(true)
    expect(matches("[!c]*", "core.json")).toBe(false)
    expect(matches("[]c]ore.json", "core.json")).toBe(true)
    expect(matches("[a-d]ore.json", "core.json")).toBe(true)
    expect(matches("core.j[", "core.j[")).toBe(true)
    // What it does not read exactly is left to the folder as a whole.
    for (const pattern of ["\\*", "{a,b}*", "@(core).json", "!(x)", "*(x)", "[[:alpha:]]*", "[z-a]*"]) expect(Protected.globMatcher(pattern)).toBeUndefined()
  })

  test("judges the entries a glob names now: core.json when it matches, by a link or another name too; the folder past the bound", () => {
    const { location, roots } = setup()
    writeFileSync(join(location, "a.txt"), "")
    expect(Protected.changeMatching(roots, location, "*.txt", { encloses: true })).toBeUndefined()
    expect(Protected.changeMatching(roots, location, "*.j*", { encloses: true })).toContain("core.json")
    // `.*` and `?` name `.` and `..` too, where bash's globskipdots is off: the folder, and the one above.
    expect(Protected.changeMatching(roots, location, ".*", { encloses: true })).toContain("which holds")
    expect(Protected.changeMatching(roots, join(location, "lib"), ".?", { encloses: true })).toContain("which holds")
    expect(Protected.changeMatching(roots, join(location, "tools"), "*.ts", { encloses: true })).toContain("tools/")
    symlinkSync(join(location, "core.json"), join(location, "link.txt"))
    expect(Protected.changeMatching(roots, location, "*.txt", { encloses: true })).toContain("core.json")
    const many = join(location, "lib", "many")
    mkdirSync(many)
    for (let index = 0; index <= Protected.MAX_GLOBBED; index++) writeFileSync(join(many, `${index}.txt`), "")
    expect(Protected.changeMatching(roots, many, "*.txt", { encloses: true })).toBeUndefined()
    // Past the bound, the folder as a whole: the Location's root holds core.json.
    for (let index = 0; index <= Protected.MAX_GLOBBED; index++) writeFileSync(join(location, `${index}.o`), "")
    expect(Protected.changeMatching(roots, location, "*.o", { encloses: true })).toContain("which holds")
  })
})

describe("Protected.secret", () => {
  test("the store is secret, managed outputs are not, and neither is anything else", () => {
    const { location, dataDir, roots } = setup()
    expect(Protected.secret(roots, join(dataDir, "core.db"))).toBe(true)
    expect(Protected.secret(roots, join(dataDir, "bin", "rg"))).toBe(true)
    expect(Protected.secret(roots, join(dataDir, "outputs", "out_1"))).toBe(false)
    expect(Protected.secret(roots, join(location, "core.json"))).toBe(false)
    linkSync(join(dataDir, "core.db"), join(location, "copy.db"))
    expect(Protected.secret(roots, join(location, "copy.db"))).toBe(true)
  })
})

describe("Protected.readsOnly", () => {
  // A command's words as the shell gives them: "?" stands for one known only when it runs (an expansion, a pattern).
  const words = (command: string) => command.split(" ").map((word) => (word === "?" ? undefined : word))
  test("knows the commands that only read, and takes any other as one that may change what it names", () => {
    for (const command of ["cat core.json", "ls tools", "/usr/bin/head -n 3 a", "cat ?", "find . -name x", "git diff core.json", "echo core.json",
      "sort -u core.json", "uniq core.json", "uniq -c core.json", "uniq -", "uniq",
      "/bin/cat a", "git --no-pager log --oneline core.json", "git -P diff --stat", "git log --output-indicator-new=+ x"]) {
      expect(Protected.readsOnly(words(command))).toBe(true)
    }
    for (const command of [
      "cp a b", "sed -i s/a/b/ x", "find . -delete", "find . -exec rm {} ;", "git checkout core.json", "sudo cat x", "python3 x.py", "",
      // sort and uniq where they may write: an output or temporary directory (abbreviated, grouped), a second operand.
      "sort -o x y", "sort -uo x y", "sort --out=x y", "sort --t x y", "sort -Tdir y", "uniq a b", "uniq - b", "uniq --group a b", "uniq -- a",
      // A word after uniq's first operand is one more, option-like or not (POSIXLY_CORRECT=1 uniq a -w/../b).
      "uniq a -w/../b", "uniq -f 1 a",
      // A word known only when it runs may be any option: sort -$X, uniq -${X} b, find . $ACTION, git $SUB.
      "sort ? y", "uniq ? b", "uniq ?", "find . ?", "sed ? x", "git ? core.json",
      // A program named by a path other than the system's (a script named cat); git given another repository, or
      // told to write a file or run a program (by any start of the option's name, or in a group of short ones).
      "bin/cat core.json", "./cat core.json", "/tmp/x/cat core.json", "git --git-dir=g status", "git -C sub diff core.json",
      "git diff --output=/dev/stdin", "git log --outp=x", "git grep -hOsh x", "git grep --open-files-in-pager=sh x", "git grep --open=sh x",
    ]) {
      expect(Protected.readsOnly(words(command).filter((word, index) => index > 0 || word !== ""))).toBe(false)
    }
  })
})
