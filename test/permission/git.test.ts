// Reading a `.git` file for the git directory it points at (Git.repositoryOf): the first line starting `gitdir:`
// gives it, trimmed, as the pattern this reader replaced took it; and a model's long file of spaces is read at once.

import { describe, expect, test } from "bun:test"
import { realpathSync, writeFileSync } from "node:fs"
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

describe("Git.repositoryOf reads a .git file's gitdir line", () => {
  test("the first gitdir line's path, trimmed, absolute or from the file's directory", () => {
    expect(pointed("gitdir: /srv/repo/.git/worktrees/a\n")).toBe("/srv/repo/.git/worktrees/a")
    expect(pointed("gitdir:\tsub/.git/modules/x  \r\n")).toBe("/sub/.git/modules/x")
    expect(pointed("gitdir: inner/dir \n")).toBe("/inner/dir")
    expect(pointed("# note\ngitdir: /a b/c \t\ngitdir: /d\n")).toBe("/a b/c")
    expect(pointed("gitdir:\n\n  /next/line\n")).toBe("/next/line")
    expect(pointed(" gitdir: /indented\n")).toBeUndefined()
    expect(pointed("GITDIR: /upper\n")).toBeUndefined()
    expect(pointed("")).toBeUndefined()
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
          pointed("gitdir:/r" + "\\t".repeat(200_000) + "i"),
          pointed("gitdir: /r" + " ".repeat(200_000) + "\\n"),
        ]))
        `),
    ).toEqual(["/r" + "\t".repeat(200_000) + "i", "/r"])
  }, 30_000)
})
