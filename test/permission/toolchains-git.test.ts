// The files the user's git config names for git to read (Toolchains.readable): key lines read as the pattern this reader
// replaced read them, and a long hostile line read at once.

import { describe, expect, test } from "bun:test"
import { realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Toolchains } from "../../src/permission/toolchains"
import { tempDir } from "../support/temp"
import { inChild } from "../support/in-child"

/** What ~/.gitconfig holding `text` names, relative to the home. */
const named = (text: string, home = realpathSync(tempDir("core-git-home-"))) => {
  writeFileSync(join(home, ".gitconfig"), text)
  return Toolchains.readable(home)
    .slice(Toolchains.HOME.length)
    .map((path) => path.slice(home.length))
}

describe("Toolchains.readable reads the user's git config lines", () => {
  // An included file may lie where a command can leave a FIFO: opening it to read would wait for a writer for ever.
  test("an included file that is a FIFO is named and not read, and what follows it still is", () => {
    const home = realpathSync(tempDir("core-git-home-"))
    expect(Bun.spawnSync(["mkfifo", join(home, "inc")]).exitCode).toBe(0)
    expect(named("[include]\n\tpath = inc\n[core]\n\texcludesFile = ~/.after\n", home)).toEqual(["/inc", "/.after"])
  })

  test("core.excludesFile, core.attributesFile and include paths, read as git reads a value: quotes, escapes, comments", () => {
    expect(named("[core]\n\texcludesFile = ~/.my-ignore\n\tattributesfile=\"~/.attrs\"  \n")).toEqual(["/.my-ignore", "/.attrs"])
    expect(named("[include]\n\tpath = a b \n[includeIf \"gitdir:/\"]\n\tpath = c\n")).toEqual(["/a b", "/c"])
    // A comment after the value, as git takes it: the include is still of `a b` and `c`.
    expect(named("[include]\n\tpath = a b # note\n[includeIf \"gitdir:/\"]\n\tpath = c;x\n")).toEqual(["/a b", "/c"])
    expect(named("[core] excludesFile = ~/.inline\n")).toEqual(["/.inline"])
    expect(named('[include]\n\tpath = "my "config" # not a comment"\n\tpath = x\\\"y\\\\z\n')).toEqual(['/my config # not a comment', '/x"y\\z'])
    // A quote left open (git refuses the file) is read to the end of its line; an empty value names no file.
    expect(named('[core]\n\texcludesFile = "~/.open\n\texcludesFile = ~/.x" y\n\texcludesFile = ""\n')).toEqual(["/.open", "/.x y"])
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
    ).toEqual([20_003, 100_003])
  }, 30_000)
})

describe("Toolchains.change: the programs the user's git config runs by their path", () => {
  test("every key whose value git runs, under the home or elsewhere; an alias or submodule update only with !", () => {
    const home = realpathSync(tempDir("core-git-home-"))
    const tools = realpathSync(tempDir("core-git-tools-"))
    const location = realpathSync(tempDir("core-git-location-"))
    writeFileSync(
      join(home, ".gitconfig"),
      [
        "[core]",
        `\tpager = ${tools}/pager.sh -R`,
        `\teditor = "${tools}/editor.sh" -w`,
        "[init]",
        `\ttemplateDir = ${tools}/templates`,
        "[diff]",
        "\texternal = ~/scripts/diff.sh",
        '[diff "pdf"]',
        `\ttextconv = ${tools}/pdf2text`,
        '[filter "lfs"]',
        `\tclean = ${tools}/clean %f`,
        "[credential]",
        `\thelper = !${tools}/credential.sh`,
        "[gpg]",
        `\tprogram = ${tools}/gpg`,
        "[pager]",
        `\tlog = ${tools}/log-pager`,
        '[mergetool "mine"]',
        `\tcmd = '${tools}/merge tool' $BASE`,
        "[alias]",
        `\tup = !${tools}/up.sh --all`,
        `\tst = ${tools}/not-a-program`,
        "[credential]",
        "\thelper = store",
        "",
      ].join("\n"),
    )
    const reason = (path: string) => Toolchains.change(home, path, path, location, "/usr/bin:/bin")
    for (const path of [
      `${tools}/pager.sh`,
      `${tools}/editor.sh`,
      `${tools}/templates/hooks/post-checkout`,
      `${home}/scripts/diff.sh`,
      `${tools}/pdf2text`,
      `${tools}/clean`,
      `${tools}/credential.sh`,
      `${tools}/gpg`,
      `${tools}/log-pager`,
      `${tools}/merge tool`,
      `${tools}/up.sh`,
    ]) {
      expect([path, reason(path)?.includes("the user's own toolchains")]).toEqual([path, true])
    }
    // Not programs: an alias git runs as its own command, a helper named (git-credential-store, found on PATH), and
    // the rest of the folder beside the programs.
    for (const path of [`${tools}/not-a-program`, `${tools}/notes.txt`, `${location}/src/app.ts`]) expect([path, reason(path)]).toEqual([path, undefined])
  })

  test("a config naming / or the home itself as a file makes neither the user's programs", () => {
    const home = realpathSync(tempDir("core-git-home-"))
    writeFileSync(join(home, ".gitconfig"), "[core]\n\thooksPath = /\n\tpager = ~\n[diff]\n\texternal = /\n")
    const location = realpathSync(tempDir("core-git-location-"))
    for (const path of [`${location}/a.txt`, `${home}/notes.txt`]) {
      expect([path, Toolchains.change(home, path, path, location, "/usr/bin:/bin")]).toEqual([path, undefined])
    }
  })
})

describe("Toolchains.environmentPlaces: what the user's environment names", () => {
  test("files shells and interpreters run, moved toolchain folders, load paths, paths in options, XDG's moved folders, and GIT_CONFIG_GLOBAL's programs", () => {
    const home = realpathSync(tempDir("core-env-home-"))
    const tools = realpathSync(tempDir("core-env-tools-"))
    writeFileSync(join(tools, "gitconfig"), `[core]\n\tpager = ${tools}/pager.sh\n`)
    const places = Toolchains.environmentPlaces(
      {
        BASH_ENV: `${tools}/bashenv`,
        PYTHONSTARTUP: `${tools}/startup.py`,
        CARGO_HOME: `${tools}/cargo`,
        ZDOTDIR: `${tools}/zsh`,
        PYTHONPATH: `${tools}/pylib:relative/src::/`,
        NODE_OPTIONS: `--require "${tools}/my dir/hook.js" --max-old-space-size=4096`,
        JAVA_TOOL_OPTIONS: `-javaagent:${tools}/agent.jar`,
        LD_PRELOAD: `${tools}/libhook.so`,
        XDG_CONFIG_HOME: `${home}/dotconfig`,
        GIT_CONFIG_GLOBAL: `${tools}/gitconfig`,
        GOPATH: home,
        EDITOR: `${tools}/editor.sh -w`,
        PAGER: `LESS=R ${tools}/pager.sh`,
        LD_AUDIT: `${tools}/audit.so`,
        GIT_CONFIG_COUNT: "2",
        GIT_CONFIG_KEY_0: "core.sshCommand",
        GIT_CONFIG_VALUE_0: `ssh -F ${tools}/ssh_config`,
        GIT_CONFIG_KEY_1: "alias.st",
        GIT_CONFIG_VALUE_1: `${tools}/not-a-program`,
        GIT_CONFIG_SYSTEM: `${tools}/system.cfg`,
        NODE_REPL_HISTORY: `${tools}/not-named`,
      },
      home,
    )
    for (const path of [
      `${tools}/bashenv`,
      `${tools}/startup.py`,
      `${tools}/cargo`,
      `${tools}/zsh`,
      `${tools}/pylib`,
      `${tools}/my dir/hook.js`,
      `${tools}/agent.jar`,
      `${tools}/editor.sh`,
      `${tools}/pager.sh`,
      `${tools}/audit.so`,
      `${tools}/ssh_config`,
      `${tools}/system.cfg`,
      `${tools}/libhook.so`,
      `${home}/dotconfig/git`,
      `${home}/dotconfig/nvim`,
      `${home}/dotconfig/direnv`,
      `${tools}/gitconfig`,
      `${tools}/pager.sh`,
    ]) {
      expect([path, places.includes(path)]).toEqual([path, true])
    }
    // Relative entries, `/`, the home itself and variables that name nothing run at start are none.
    for (const path of ["/", home, `${tools}/not-named`, `${tools}/not-a-program`, "relative/src"]) {
      expect([path, places.includes(path)]).toEqual([path, false])
    }
    expect(Toolchains.environmentPlaces({}, home)).toEqual([])
  })
})
