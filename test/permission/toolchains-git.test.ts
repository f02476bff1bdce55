// The files the user's git config names for git to read (Toolchains.readable): key lines read as the pattern this reader
// replaced read them, and a long hostile line read at once.

import { describe, expect, test } from "bun:test"
import { realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Toolchains } from "../../src/permission/toolchains"
import { tempDir } from "../support/temp"
import { inChild } from "../support/in-child"

/** What ~/.gitconfig holding `text` names, relative to the home. */
const named = (text: string) => {
  const home = realpathSync(tempDir("core-git-home-"))
  writeFileSync(join(home, ".gitconfig"), text)
  return Toolchains.readable(home)
    .slice(Toolchains.HOME.length)
    .map((path) => path.slice(home.length))
}

describe("Toolchains.readable reads the user's git config lines", () => {
  test("core.excludesFile, core.attributesFile and include paths, quoted or not; a line with # or ; after its value is not read", () => {
    expect(named("[core]\n\texcludesFile = ~/.my-ignore\n\tattributesfile=\"~/.attrs\"  \n")).toEqual(["/.my-ignore", "/.attrs"])
    expect(named("[include]\n\tpath = a b \n[includeIf \"gitdir:/\"]\n\tpath = c\n")).toEqual(["/a b", "/c"])
    expect(named("[include]\n\tpath = a b # note\n[includeIf \"gitdir:/\"]\n\tpath = c;x\n")).toEqual([])
    expect(named("[core] excludesFile = ~/.inline\n")).toEqual(["/.inline"])
    expect(named('[core]\n\texcludesFile = "~/.open\n\texcludesFile = ~/.x" y\n\texcludesFile = ""\n')).toEqual(["/.open"])
    expect(named("[user]\n\tname = Dev\n[core]\n\tpager = less\n")).toEqual([])
  })

  // No test timeout stops synchronous code, so the cases run in a child process killed after 20 s.
  test("a long hostile line is read at once, and rightly", async () => {
    const home = realpathSync(tempDir("core-git-home-"))
    expect(
      await inChild(`
        import { writeFileSync } from "node:fs"
        import { Toolchains } from ${JSON.stringify(join(import.meta.dir, "../../src/permission/toolchains.ts"))}
        const home = ${JSON.stringify(home)}
        const tabs = "\\t".repeat(20_000)
        writeFileSync(home + "/.gitconfig", "[core]\\n\\texcludesFile=" + tabs + "=" + tabs + '"[\\n\\tattributesFile = x' + " ".repeat(100_000) + "y\\n")
        console.log(JSON.stringify(Toolchains.readable(home).slice(Toolchains.HOME.length).map((path) => path.length - home.length)))
        `),
    ).toEqual([100_003])
  }, 30_000)
})
