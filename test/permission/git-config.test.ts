// Git's config files read as git reads them (Git.configEntries), checked against git itself (`git config --list`
// of the same file): what core protects (the programs and files a user's git config names) must be what git runs.
// Read line by line, a value continued onto the next line with a backslash hid `core.pager = /srv/pa\⏎ger.sh`,
// and a continuation ending in `[foo]` moved what followed into another section.

import { describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { Git } from "../../src/permission/git"
import { Toolchains } from "../../src/permission/toolchains"
import { tempDir } from "../support/temp"

/** `section[.subsection].key=value` lines, as `git config --list` prints them. */
const listed = (entries: ReadonlyArray<Git.ConfigEntry>) =>
  entries.map(({ section, subsection, key, value, bare }) => `${section}${subsection === undefined ? "" : `.${subsection}`}.${key}${bare ? "" : `=${value}`}`)

const CONFIGS = [
  "[core]\n\tpager = /srv/pa\\\nger.sh\n\tx = y \\\n[foo]\n\tpager = /srv/swpager\n",
  "[core]\n\tpager = \\\n/srv/p2\n[include]\n\tpath = /srv/in\\\nc.cfg\n",
  '[core]\n\teditor = "/srv/my tools/ed.sh" -w # a comment\n\tpager = less ; another\n\tsshCommand = ssh -i "~/.ssh/k\\"ey"\n',
  '[filter "lfs"]\n\tclean = git-lfs clean -- %f\n[includeIf "gitdir:/work/"]\n\tpath = ~/work.cfg\n[gpg.ssh]\n\tprogram = /opt/ssh-keygen\n',
  '[credential "https://[::1]"] helper = /srv/c6\n[alias]\n\tst\n\tup = "!f() { /srv/up \\"$@\\"; }; f"\n',
  "[Core]\n\tPager = /srv/upper\n  [core]  \n   hooksPath=/srv/hooks\n\tempty =\n\tquoted = \"\"\n\ttabs = a\\tb\\nc\n",
]

describe("Git.configEntries reads a config as git does", () => {
  for (const [index, text] of CONFIGS.entries()) {
    test(`config ${index + 1}`, () => {
      const file = join(tempDir("core-git-config-"), "config")
      writeFileSync(file, text)
      // -z: each entry ends with a NUL, its value after the first line feed (none for a bare key).
      const git = Bun.spawnSync(["git", "config", "--file", file, "--list", "-z"], { env: { ...process.env, HOME: tempDir() } })
      expect(git.exitCode).toBe(0)
      const gits = git.stdout.toString().split("\0").slice(0, -1).map((entry) => entry.replace("\n", "="))
      expect(listed(Git.configEntries(text))).toEqual(gits)
    })
  }
})

describe("Toolchains.commandPaths: the paths a command git or a shell runs names", () => {
  test("every word and part of one that is a path, quotes, escapes and $HOME undone", () => {
    const home = "/home/dev"
    expect(Toolchains.commandPaths("LESS=R /srv/pager.sh -R", home)).toEqual(["/srv/pager.sh"])
    expect(Toolchains.commandPaths("$HOME/../srv/p3.sh", home)).toEqual(["/home/srv/p3.sh"])
    expect(Toolchains.commandPaths("${HOME}/bin/x ~/y", home)).toEqual(["/home/dev/bin/x", "/home/dev/y"])
    expect(Toolchains.commandPaths("!sh -c '/srv/alias.sh'", home)).toEqual(["/srv/alias.sh"])
    expect(Toolchains.commandPaths('!f() { /srv/cred "$@"; }; f', home)).toEqual(["/srv/cred"])
    expect(Toolchains.commandPaths("/srv/my\\ tools/ed.sh", home)).toEqual(["/srv/my tools/ed.sh"])
    expect(Toolchains.commandPaths('--require "/srv/my dir/x.js" --max-old-space-size=4096', home)).toEqual(["/srv/my dir/x.js"])
    expect(Toolchains.commandPaths("-javaagent:/opt/agent.jar -Dx=/opt/y", home)).toEqual(["/opt/agent.jar", "/opt/y"])
    expect(Toolchains.commandPaths("|/usr/bin/lesspipe %s", home)).toEqual(["/usr/bin/lesspipe"])
    expect(Toolchains.commandPaths("@/srv/init.lua", home)).toEqual(["/srv/init.lua"])
    // No path, `/` and the home itself name nothing of the user's programs.
    expect(Toolchains.commandPaths("less -R", home)).toEqual([])
    expect(Toolchains.commandPaths("cd / && cd ~ && cd $HOME", home)).toEqual([])
  })
})
