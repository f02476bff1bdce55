// Where the user's own programs come from (their PATH folders, the toolchains' folders and settings under the home)
// through the compiled binary, on a home like a developer's, under rules that allow everything, outside the Location
// too: with `{ "*": "allow" }` the write tool put `~/.cargo/bin/git`, found before /usr/bin/git the next time the
// user typed `git`, and a line `echo … > ~/.cargo/bin/x` did the same. A change there is asked of a person each
// time (refused where none can be asked, --yes or not); a PATH folder inside the Location (a project's `.venv/bin`)
// and the files of a Location under a toolchain's folder (`~/go/src/app`) stay the project's.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { exec, type Sandbox, sandbox, settlementOf } from "../cli/fixture"
import { tempDir } from "../support/temp"

const ALLOW_EVERYWHERE = JSON.stringify({ permission: { "*": "allow", external_directory: "allow" } })
const PERSON = "A person must make that change"

/** The settlement of `name` with `input`, --yes given: what a model gets where every rule allows. */
const call = async (box: Sandbox, name: string, input: unknown) => settlementOf(await exec(box, name, input, ["--yes"]))

/** Expects `name` with `input` to be refused as a change only a person makes, naming `place`. */
const refused = async (box: Sandbox, name: string, input: unknown, place: string) => {
  const settlement = await call(box, name, input)
  expect([name, input, settlement.status, settlement.error?.message.includes(PERSON)]).toEqual([name, input, "error", true])
  expect(settlement.error?.message).toContain(`in ${place}`)
}

describe("the user's programs and toolchains", () => {
  test("the write and edit tools are refused a change in a PATH folder, a toolchain's folder or its settings, with every rule allowing it", async () => {
    const box = sandbox({ "core.json": ALLOW_EVERYWHERE })
    const home = box.user.home
    // A PATH folder outside the home, as /usr/local/bin is to a core run by root.
    const system = tempDir("core-system-bin-")
    box.env.PATH = `${system}:${box.env.PATH}`
    const program = "#!/bin/sh\ntouch /tmp/pwned\n"
    const cases: ReadonlyArray<readonly [path: string, place: string]> = [
      [join(home, ".cargo/bin/git"), join(home, ".cargo/bin")],
      [join(home, ".local/bin/ls"), join(home, ".local/bin")],
      [join(system, "git"), system],
      // Not on PATH yet: the login files of Debian and Ubuntu put it there once it exists.
      [join(home, "bin/git"), join(home, "bin")],
      [join(home, ".local/lib/python3.12/site-packages/evil.pth"), join(home, ".local/lib")],
      [join(home, ".cargo/config.toml"), join(home, ".cargo")],
      [join(home, ".rustup/toolchains/stable/bin/rustc"), join(home, ".rustup")],
      [join(home, ".nvm/versions/node/v22.11.0/bin/node"), join(home, ".nvm")],
      [join(home, ".config/git/ignore"), join(home, ".config/git")],
    ]
    for (const [filePath, place] of cases) await refused(box, "write", { filePath, content: program }, place)
    for (const [filePath] of cases) expect([filePath, existsSync(filePath)]).toEqual([filePath, filePath.endsWith("config.toml") || filePath.endsWith("ignore")])
    await refused(box, "edit", { filePath: join(home, ".cargo/config.toml"), oldString: "jobs = 2", newString: 'rustc-wrapper = "/tmp/evil"' }, join(home, ".cargo"))
    expect(readFileSync(join(home, ".cargo/config.toml"), "utf8")).toBe("[build]\njobs = 2\n")
    // A file the user's git config includes is git's configuration as much as ~/.gitconfig.
    writeFileSync(join(home, ".gitconfig"), `${readFileSync(join(home, ".gitconfig"), "utf8")}[include]\n\tpath = ~/.gitconfig.local\n`)
    await refused(box, "write", { filePath: join(home, ".gitconfig.local"), content: '[core]\n\tfsmonitor = "touch /tmp/pwned"\n' }, join(home, ".gitconfig.local"))
    expect(existsSync(join(home, ".gitconfig.local"))).toBe(false)
    // The rest of the home and of the machine stays as the rules say.
    for (const filePath of [join(home, "notes.txt"), join(tempDir("core-elsewhere-"), "notes.txt")]) {
      expect([filePath, (await call(box, "write", { filePath, content: "x\n" })).status]).toEqual([filePath, "success"])
    }
  }, 120_000)

  test("a bash line changing a file there is refused before it runs, whatever it uses", async () => {
    const box = sandbox({ "core.json": ALLOW_EVERYWHERE, "git": "#!/bin/sh\necho planted\n" })
    const home = box.user.home
    for (const command of [
      "echo '#!/bin/sh' > ~/.cargo/bin/git",
      `cp git ${home}/.local/bin/git`,
      "mkdir -p ~/bin && ln -s $PWD/git ~/bin/git",
      "printf x >> ~/.cargo/config.toml",
      "touch ~/go/bin/go-dev",
    ]) {
      const settlement = await call(box, "bash", { command })
      expect([command, settlement.status, settlement.error?.message.includes(PERSON)]).toEqual([command, "error", true])
    }
    for (const path of [".cargo/bin/git", ".local/bin/git", "bin"]) expect([path, existsSync(join(home, path))]).toEqual([path, false])
    expect(readFileSync(join(home, ".cargo/config.toml"), "utf8")).toBe("[build]\njobs = 2\n")
  }, 120_000)

  test("a PATH folder inside the Location and the files of a Location under a toolchain's folder stay the project's", async () => {
    const outer = sandbox()
    const home = outer.user.home
    // A Go project under ~/go, with its virtualenv's bin on PATH (activated where the user started core).
    const location = join(home, "go/src/app")
    mkdirSync(join(location, ".venv/bin"), { recursive: true })
    writeFileSync(join(location, "core.json"), ALLOW_EVERYWHERE)
    const box: Sandbox = { ...outer, location, env: { ...outer.env, PATH: `${join(location, ".venv/bin")}:${outer.env.PATH}` } }
    for (const filePath of ["main.go", ".venv/bin/tool"]) {
      expect([filePath, (await call(box, "write", { filePath, content: "x\n" })).status]).toEqual([filePath, "success"])
    }
    const command = "echo y > main.go && echo y > .venv/bin/tool && cat main.go .venv/bin/tool"
    expect((await call(box, "bash", { command })).structured).toMatchObject({ exitCode: 0, stdout: "y\ny\n" })
    // The rest of ~/go is not the project's: its bin is on PATH.
    await refused(box, "write", { filePath: join(home, "go/bin/go-dev"), content: "x\n" }, join(home, "go/bin"))
  }, 120_000)
})
