// A project's identity from its repository's config (Project.identityOf): the remote's URL is read from its
// `url = …` line as the pattern this reader replaced read it, and a long hostile line, which a model can write by
// setting a remote's URL, is read at once.

import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Project } from "../../src/store/project"
import { tempDir } from "../support/temp"
import { inChild } from "../support/in-child"

/** The identity of a repository whose config's origin has `line` for its url line. */
const identity = (line: string) => {
  const root = realpathSync(tempDir("core-project-"))
  mkdirSync(join(root, ".git"))
  writeFileSync(join(root, ".git", "config"), `[core]\n\tbare = false\n[remote "origin"]\n${line}\n`)
  return Project.identityOf(root).replace(root, "<root>")
}

describe("Project.identityOf reads the origin's url line", () => {
  test("the value after =, trimmed; a line that is not one leaves the path", () => {
    expect(identity("\turl = https://github.com/acme/shop.git")).toBe("git:github.com/acme/shop")
    expect(identity("url=git@github.com:acme/shop.git  \t")).toBe("git:github.com/acme/shop")
    expect(identity('\turl = "https://github.com/acme/shop"')).toBe("git:github.com/acme/shop")
    expect(identity("\turl = https://github.com/acme/shop\r")).toBe("git:github.com/acme/shop")
    expect(identity("\turl = https://github.com/acme/shop\rx")).toBe("path:<root>")
    expect(identity("\turlx = https://github.com/acme/shop")).toBe("path:<root>")
    expect(identity("\turl =")).toBe("path:<root>")
  })

  // Inner runs of slashes are one: `//` is what separates a Location's path inside its repository in an identity, and a
  // remote's own must not pass for it (`acme/shop//services/api` as the remote of another repository).
  test("a remote's trailing slashes are dropped, its inner runs of them made one", () => {
    expect(Project.normalizeRemote("git@github.com:acme//shop//")).toBe("github.com/acme/shop")
    expect(Project.normalizeRemote("https://github.com/acme/shop.git/")).toBe("github.com/acme/shop")
    expect(Project.normalizeRemote("file:///srv/shop.git//")).toBe("file:/srv/shop")
    expect(Project.normalizeRemote("/srv/shop///")).toBe("file:/srv/shop")
  })

  // No test timeout stops synchronous code, so the cases run in a child process killed after 20 s.
  test("a long hostile url line and remote are read at once, and rightly", async () => {
    const root = realpathSync(tempDir("core-project-"))
    mkdirSync(join(root, ".git"))
    expect(
      await inChild(`
        import { writeFileSync } from "node:fs"
        import { Project } from ${JSON.stringify(join(import.meta.dir, "../../src/store/project.ts"))}
        const root = ${JSON.stringify(root)}
        const identity = (line) => {
          writeFileSync(root + "/.git/config", '[remote "origin"]\\n' + line + "\\n")
          return Project.identityOf(root).replace(root, "<root>")
        }
        const spaces = " ".repeat(100_000)
        console.log(JSON.stringify([
          identity("\\turl =" + spaces + "https://github.com/acme/shop" + spaces + "\\r" + spaces + "x"),
          identity("\\turl =" + spaces + "https://github.com/acme/shop" + spaces + "\\r" + spaces),
          Project.normalizeRemote("git@github.com:acme" + "/".repeat(200_000) + "shop/").length,
          Project.normalizeRemote("/srv/acme" + "/".repeat(200_000) + "shop.git").length,
        ]))
        `),
    ).toEqual(["path:<root>", "git:github.com/acme/shop", "github.com/acme/shop".length, "file:/srv/acme/shop".length])
  }, 30_000)
})

describe("Project.machineOnly", () => {
  test("a path, a local repository and one on this machine's own address are this machine's; any other host is not", () => {
    const identity = (remote: string) => `git:${Project.normalizeRemote(remote)}`
    const mine = ["ssh://localhost/srv/git/shop.git", "git@localhost:shop.git", "ssh://[::1]/x/shop", "ssh://127.0.0.2/x", "https://dev.localhost/x", "ssh://git@LOCALHOST:22/x", "/srv/git/x.git", "file:///srv/git/x"]
    for (const remote of mine) expect({ remote, only: Project.machineOnly(identity(remote)) }).toEqual({ remote, only: true })
    expect(Project.machineOnly("path:/srv/shop")).toBe(true)
    const shared = ["https://github.com/a/b", "ssh://localhostx.com/a", "ssh://127.0.0.1.evil.com/a", "git@build-7:shop.git", "ssh://[2001:db8::1]/x"]
    for (const remote of shared) expect({ remote, only: Project.machineOnly(identity(remote)) }).toEqual({ remote, only: false })
  })
})
