// Reading a `.git` file for the git directory it points at (Git.repositoryOf), as git reads it: `gitdir: ` at its very
// start, then the rest up to a NUL, less the line feeds and carriage returns that end it (spaces and inner line feeds
// are the path's); anything else names nothing, and git refuses the file. A reading of core's own that differed would
// let a command point git at a repository core never looks at. A model's long file is read at once.

import { describe, expect, test } from "bun:test"
import { mkdirSync, readdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Git } from "../../src/permission/git"
import { tempDir } from "../support/temp"
import { inChild } from "../support/in-child"

/** The git directory Git.repositoryOf finds for a Location whose `.git` file holds `text`. */
const pointed = (text: string) => {
  const location = realpathSync(tempDir("core-git-file-"))
  writeFileSync(join(location, ".git"), text)
  const found = Git.repositoryOf(location)?.gitDir
  return found === undefined ? undefined : found.startsWith(location) ? found.slice(location.length) : found
}

describe("Git.repositoryOf reads a .git file as git does", () => {
  test("`gitdir: ` at the start, the rest to its end less the line ends, absolute or from the file's directory", () => {
    expect(pointed("gitdir: /srv/repo/.git/worktrees/a\n")).toBe("/srv/repo/.git/worktrees/a")
    expect(pointed("gitdir: inner/dir \n")).toBe("/inner/dir ")
    expect(pointed("gitdir:  two\r\n\n")).toBe("/ two")
    expect(pointed("gitdir: /a\nb\n")).toBe("/a\nb")
    expect(pointed("gitdir: /nul\0/after\n")).toBe("/nul")
    expect(pointed("gitdir:\tsub/.git/modules/x\n")).toBeUndefined()
    expect(pointed("# note\ngitdir: /a b/c\n")).toBeUndefined()
    expect(pointed("gitdir:\n\n  /next/line\n")).toBeUndefined()
    expect(pointed(" gitdir: /indented\n")).toBeUndefined()
    expect(pointed("GITDIR: /upper\n")).toBeUndefined()
    expect(pointed("gitdir: \n")).toBeUndefined()
    expect(pointed("")).toBeUndefined()
  })

  test("git itself finds the same git directory: one whose name ends in a space", () => {
    const root = realpathSync(tempDir("core-git-file-"))
    expect(Bun.spawnSync(["git", "init", "-q", "--bare", join(root, "real ")]).exitCode).toBe(0)
    mkdirSync(join(root, "work"))
    writeFileSync(join(root, "work/.git"), "gitdir: ../real \n")
    const git = Bun.spawnSync(["git", "rev-parse", "--absolute-git-dir"], { cwd: join(root, "work"), stderr: "pipe" })
    expect(git.stdout.toString()).toBe(`${join(root, "real ")}\n`)
    expect(Git.repositoryOf(join(root, "work"))?.gitDir).toBe(join(root, "real "))
  })

  // No test timeout stops synchronous code, so the cases run in a child process killed after 20 s.
  test("a long hostile .git file is read at once, and rightly", async () => {
    const location = realpathSync(tempDir("core-git-file-"))
    expect(
      await inChild(`
        import { writeFileSync } from "node:fs"
        import { join } from "node:path"
        import { Git } from ${JSON.stringify(join(import.meta.dir, "../../src/permission/git.ts"))}
        const location = ${JSON.stringify(location)}
        const pointed = (text) => {
          writeFileSync(join(location, ".git"), text)
          return Git.repositoryOf(location)?.gitDir ?? null
        }
        console.log(JSON.stringify([
          pointed("gitdir: /r" + "\\t".repeat(200_000) + "i"),
          pointed("gitdir: /r" + " ".repeat(200_000) + "\\n"),
          pointed("gitdir: /r" + "\\n".repeat(500_000)),
          pointed("gitdir: /r" + "\\n".repeat(500_000) + "x"),
        ]))
        `),
    ).toEqual(["/r" + "\t".repeat(200_000) + "i", "/r" + " ".repeat(200_000), "/r", "/r" + "\n".repeat(500_000) + "x"])
  }, 30_000)
})

// The index as git writes it, read for its gitlinks (repositories checked out inside the work tree, which `git
// status` at the root looks into with their own config): versions 2, 3 (extended flags) and 4 (paths compressed),
// SHA-1 and SHA-256 object names; a path that would leave the work tree names nothing.
describe("Git.gitlinkEntries reads the gitlinks of the index", () => {
  const git = (cwd: string, ...args: ReadonlyArray<string>) => {
    const done = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null", ...args], { cwd, stderr: "pipe" })
    if (done.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${done.stderr.toString()}`)
  }
  const repository = (format: "sha1" | "sha256") => {
    const root = realpathSync(tempDir("core-gitlinks-"))
    git(root, "init", "-q", `--object-format=${format}`)
    for (const path of ["a.txt", "deep/dir/b.txt", "zz/c.txt"]) {
      const file = join(root, path)
      Bun.spawnSync(["mkdir", "-p", join(file, "..")])
      writeFileSync(file, path)
    }
    for (const link of ["vendor/lib", "deep/dir/sub", "zz/last"]) {
      git(root, "init", "-q", `--object-format=${format}`, link)
      git(join(root, link), "commit", "-q", "--allow-empty", "-m", "i")
    }
    git(root, "add", "-A")
    return root
  }
  for (const format of ["sha1", "sha256"] as const) {
    test(`index versions 2, 3 and 4 (${format})`, () => {
      const root = repository(format)
      const expected = ["deep/dir/sub", "vendor/lib", "zz/last"].map((link) => join(root, link, ".git"))
      expect(Git.gitlinkEntries(root)).toEqual(expected)
      git(root, "update-index", "--skip-worktree", "a.txt")
      git(root, "update-index", "--index-version", "3")
      expect(Git.gitlinkEntries(root)).toEqual(expected)
      git(root, "update-index", "--index-version", "4")
      expect(Git.gitlinkEntries(root)).toEqual(expected)
      // From a folder inside, the repository's.
      expect(Git.gitlinkEntries(join(root, "deep"))).toEqual(expected)
    })

    test(`a split index: its gitlinks in its shared index too, and one added since in its own (${format})`, () => {
      const root = repository(format)
      git(root, "update-index", "--split-index")
      const shared = readdirSync(join(root, ".git")).filter((name) => name.startsWith("sharedindex."))
      expect(shared).toHaveLength(1)
      expect(Git.gitlinkEntries(root).toSorted()).toEqual(["deep/dir/sub", "vendor/lib", "zz/last"].map((link) => join(root, link, ".git")))
      git(root, "init", "-q", `--object-format=${format}`, "later")
      git(join(root, "later"), "commit", "-q", "--allow-empty", "-m", "i")
      git(root, "add", "later")
      expect(Git.gitlinkEntries(root).toSorted()).toEqual(["deep/dir/sub", "later", "vendor/lib", "zz/last"].map((link) => join(root, link, ".git")))
    })
  }

  test("an index written to name paths outside the work tree names none of them; an unreadable one, nothing", () => {
    const entry = (path: string) => {
      const name = Buffer.from(path)
      const size = Math.ceil((62 + name.length + 1) / 8) * 8
      const bytes = Buffer.alloc(size)
      bytes.writeUInt32BE(0o160000, 24)
      bytes.writeUInt16BE(Math.min(name.length, 0xfff), 60)
      name.copy(bytes, 62)
      return bytes
    }
    const index = (paths: ReadonlyArray<string>) => {
      const header = Buffer.alloc(12)
      header.write("DIRC")
      header.writeUInt32BE(2, 4)
      header.writeUInt32BE(paths.length, 8)
      return Buffer.concat([header, ...paths.map(entry)])
    }
    expect(Git.gitlinksIn(index(["../../etc", "a/../../b", "/abs", "ok/sub"]))).toEqual(["../../etc", "a/../../b", "/abs", "ok/sub"])
    const root = realpathSync(tempDir("core-gitlinks-"))
    Bun.spawnSync(["git", "init", "-q"], { cwd: root })
    writeFileSync(join(root, ".git/index"), index(["../../etc", "a/../../b", "/abs", "./x", "ok/sub"]))
    expect(Git.gitlinkEntries(root)).toEqual([join(root, "ok/sub/.git")])
    writeFileSync(join(root, ".git/index"), "DIRC\u0000\u0000\u0000\u0009garbage")
    expect(Git.gitlinkEntries(root)).toEqual([])
    expect(Git.gitlinksIn(new Uint8Array([1, 2, 3]))).toEqual([])
  })

  // A command may write the index, and it is read at every command's start: a crafted one must cost its size once.
  test("a crafted index is read in time linear in its size: long shared paths, thousands of gitlinks", () => {
    const v4 = (entries: number, mode: number, added: number) => {
      const header = Buffer.alloc(12)
      header.write("DIRC")
      header.writeUInt32BE(4, 4)
      header.writeUInt32BE(entries, 8)
      const entry = Buffer.alloc(62 + 1 + added + 1)
      entry.writeUInt32BE(mode, 24)
      entry[62] = 0 // drop nothing of the previous path: each path is the last one, longer
      entry.fill("a", 63, 63 + added)
      return Buffer.concat([header, ...Array.from({ length: entries }, () => entry)])
    }
    const started = performance.now()
    expect(Git.gitlinksIn(v4(40_000, 0o100644, 64))).toEqual([])
    const links = Git.gitlinksIn(v4(8_000, 0o160000, 120))
    expect(links.length).toBeLessThanOrEqual(Git.MAX_NESTED)
    expect(Math.max(...links.map((link) => link.length))).toBeLessThanOrEqual(4096)
    expect(performance.now() - started).toBeLessThan(1_000)
  })
})

// A config's values as git reads them (Git.valuesOf): a carriage return inside a line is the value's whitespace, not
// where the line ends; what core keeps of a made repository's `core.worktree` depends on it.
describe("Git.valuesOf reads a value as git does", () => {
  test("a carriage return before a comment: the value git reads", () => {
    const root = realpathSync(tempDir("core-git-config-"))
    for (const text of ["[core]\n\tworktree = /tmp/w\r#\n", "[core] worktree = /tmp/w\r;x\n", "[core]\n\tworktree = \"/tmp/w\"\n"]) {
      writeFileSync(join(root, "config"), text)
      const git = Bun.spawnSync(["git", "config", "--file", join(root, "config"), "--get-all", "core.worktree"], { stderr: "pipe" })
      expect(Git.valuesOf(text, "core", "worktree")).toEqual(git.stdout.toString().split("\n").filter((line) => line !== ""))
      expect(Git.valuesOf(text, "core", "worktree")).toEqual(["/tmp/w"])
    }
  })
})

