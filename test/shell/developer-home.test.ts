// The sandbox on a home like a developer's, through the compiled binary: git and the toolchains on PATH work as in
// the user's terminal (reading ~/.gitconfig, ~/.config/git and their own data), while no credential store under the
// home can be read by any means a script under allow-all rules tries; core.json grants and hides more; a refused
// path is named as the sandbox's, with the key that grants it. Landlock is required: where the kernel lacks it
// these tests are skipped and say so in their names.

import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { exec, type Sandbox, sandbox, settlementOf, write } from "../cli/fixture"
import { Landlock } from "../../src/shell/landlock"
import { Supervised } from "../../src/shell/supervised"
import type { Run } from "../support/binary"
import { developerHome } from "../support/home"
import { tempDir } from "../support/temp"

const LANDLOCK = Landlock.abi() > 0
const needs = LANDLOCK ? "" : " (SKIPPED: this kernel has no Landlock)"

const ALLOW_ALL = JSON.stringify({ permission: { "*": "allow" } })

/** Runs `command` through the bash tool in the box's Location and answers the run and the tool's structured output. */
const bash = async (box: Sandbox, command: string) => {
  const run = await exec(box, "bash", { command })
  const settlement = settlementOf(run)
  expect(settlement.status).toBe("success")
  const output = settlement.structured as { exitCode: number; stdout: string; stderr: string; sandboxed?: Array<string>; stores?: Array<string> }
  const text = settlement.content.map((part) => (part.type === "text" ? part.text : "")).join("\n")
  return { run, output, text }
}

/** Every marker secret found anywhere in `texts` (an empty list when none leaked). */
const leaked = (box: Sandbox, texts: ReadonlyArray<string>): ReadonlyArray<string> =>
  box.user.secrets.filter(({ marker }) => texts.some((text) => text.includes(marker))).map(({ path }) => path)

/** Every file's text under `root` (the Location after a command that tried to copy secrets into it). */
const filesUnder = (root: string): Array<string> =>
  readdirSync(root, { recursive: true, encoding: "utf8" })
    .map((name) => join(root, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => readFileSync(path, "latin1"))

const all = (run: Run): Array<string> => [run.stdout, run.stderr]

describe("the sandbox on a developer's home", () => {
  // Bun.spawn's "pipe" is a socket, which Linux will not open again by name: `echo x > /dev/stderr` failed with
  // ENXIO ("No such device or address") in every command, as `tee /dev/stdout` and Python's open("/dev/stdout") did.
  test("a command opens its stdout and stderr again by name (/dev/stdout, /dev/stderr, /dev/fd/1), in the sandbox and out of it", async () => {
    const command = "echo out > /dev/stdout && echo err > /dev/stderr && echo both | tee /dev/stderr && echo fd > /dev/fd/1 && stat -L -c %F /proc/self/fd/2"
    for (const sandbox_ of ["auto", "off"] as const) {
      const box = sandbox({ "core.json": JSON.stringify({ permission: { "*": "allow" }, shell: { sandbox: sandbox_ } }) })
      const { output } = await bash(box, command)
      expect([sandbox_, output.exitCode, output.stdout, output.stderr]).toEqual([sandbox_, 0, "out\nboth\nfd\nfifo\n", "err\nboth\n"])
    }
  })
  test.skipIf(!LANDLOCK)(`git status, add, commit, log and diff work in a repository Location with the user's git config${needs}`, async () => {
    const box = sandbox({ "core.json": ALLOW_ALL, "a.txt": "one\n", "a.swp": "swap\n" })
    const { output } = await bash(
      box,
      "git init -q && git status --short && git add -A && git commit -qm first && git log --format='%an <%ae> %s' && " +
        "echo two >> a.txt && git diff --stat && git config --global user.name && git config color.ui",
    )
    expect(output.stderr).toBe("")
    expect(output.exitCode).toBe(0)
    const lines = output.stdout.split("\n")
    // ~/.config/git/ignore (core.excludesFile in ~/.gitconfig) keeps a.swp out; ~/.gitconfig names the author.
    expect(lines).toContain("?? a.txt")
    expect(lines).not.toContain("?? a.swp")
    expect(lines).toContain("Dev Eloper <dev@example.com> first")
    expect(lines).toContain(" 1 file changed, 1 insertion(+)")
    expect(lines).toContain("Dev Eloper")
    expect(lines).toContain("false")
  })

  test.skipIf(!LANDLOCK)(`git reads the files ~/.gitconfig includes, but an include of a credential store leaks nothing${needs}`, async () => {
    const box = sandbox({ "core.json": ALLOW_ALL, "a.txt": "one\n" })
    const home = box.user.home
    writeFileSync(join(home, ".gitconfig"), "[user]\n\tname = Dev Eloper\n[include]\n\tpath = .gitconfig.local\n")
    writeFileSync(join(home, ".gitconfig.local"), '[includeIf "gitdir:/"]\n\tpath = ~/.config/git-work\n')
    writeFileSync(join(home, ".config/git-work"), "[user]\n\temail = work@example.com\n")
    const { output } = await bash(box, "git init -q && git config user.name && git config user.email && git status --short")
    expect(output.stdout).toBe("Dev Eloper\nwork@example.com\n?? a.txt\n?? core.json\n")
    // A config that pulls a credential store in: git refuses to go on rather than read it.
    writeFileSync(join(home, ".config/git-work"), "[include]\n\tpath = ~/.git-credentials\n")
    const { run } = await bash(box, "git config --global --list; git config --list --show-origin")
    expect(leaked(box, all(run))).toEqual([])
  })

  // Debian's /etc/profile sets PATH anew, and the login files that add the toolchains to it are unreadable in the
  // sandbox: `bash -lc cargo` said "command not found".
  test.skipIf(!LANDLOCK)(`a login shell (bash -lc) finds the toolchains on the command's PATH; a plain one's PATH stays as given${needs}`, async () => {
    const box = sandbox({ "core.json": ALLOW_ALL })
    writeFileSync(join(box.user.home, ".profile"), "export GITHUB_TOKEN=CORE-SECRET-profile\n")
    const { run, output, text } = await bash(box, `bash -lc rustc-dev && bash -l -c 'command -v dev-tool' && bash -c 'printf %s "$PATH"'`)
    const lines = output.stdout.split("\n")
    expect(lines[0]).toBe("rust-stable")
    expect(lines[1]).toBe(join(box.user.home, ".local/bin/dev-tool"))
    expect(lines[2]).toBe(box.env.PATH)
    expect(output.exitCode).toBe(0)
    expect(leaked(box, all(run))).toEqual([])
    // The shell's own start reached for ~/.profile, not the command: the model reads that, not that it tried a
    // credential store and must not try another way.
    expect(output.stderr).toContain(`bash: ${join(box.user.home, ".profile")}: Permission denied`)
    expect(text).toContain(`${join(box.user.home, ".profile")}: the user's login file, which a login shell (bash -l) reads as it starts`)
    expect(text).toContain("use bash -c rather than bash -lc")
    expect(text).not.toContain("Do not try to read it another way")

    // A program that reads one is told it reached a credential store; so is bash running one as a script, which
    // prints what a login shell's start does.
    write(box.location, { "read.sh": "cat ~/.profile\n", "run.sh": "bash ~/.profile\n" })
    for (const command of ["bash -lc 'sh read.sh'", "sh run.sh"]) {
      const read = await bash(box, command)
      expect(read.text).toContain(`: ${join(box.user.home, ".profile")}: Permission denied`)
      expect(read.text).toContain("in a credential store (keys, tokens, passwords)")
      expect(read.text).not.toContain("the user's login file")
      expect(leaked(box, all(read.run))).toEqual([])
    }
  })

  test.skipIf(!LANDLOCK)(`plain commands read ~/.gitconfig and the toolchains' own files${needs}`, async () => {
    const box = sandbox({ "core.json": ALLOW_ALL })
    const { output } = await bash(box, "cat ~/.gitconfig ~/.cargo/config.toml ~/.rustup/toolchains/stable/lib/version ~/.npm/_cacache/index-v5/entry")
    expect(output.exitCode).toBe(0)
    expect(output.stdout).toContain("name = Dev Eloper")
    expect(output.stdout).toContain("jobs = 2")
    expect(output.stdout).toContain("rust-stable")
  })

  test.skipIf(!LANDLOCK)(`no credential store is readable by a script under allow-all rules, whatever it uses${needs}`, async () => {
    const box = sandbox({ "core.json": ALLOW_ALL })
    const stores = box.user.secrets.map(({ path }) => path)
    write(box.location, {
      "steal.sh": [
        "mkdir -p loot",
        ...stores.flatMap((path, index) => [
          `cat "$HOME/${path}"`,
          `head -c 200 "$HOME/${path}"`,
          // Quiet: their refusals would only make the output too long to come back whole.
          `python3 -c 'import sys; print(open(sys.argv[1]).read())' "$HOME/${path}" 2>/dev/null`,
          `cp "$HOME/${path}" loot/${index} 2>/dev/null`,
          `cp -r "$HOME/${path.split("/")[0]}" loot/dir-${index} 2>/dev/null`,
        ]),
        'grep -r CORE-SECRET "$HOME"',
        'tar cf - -C "$HOME" . 2>/dev/null | strings | grep CORE-SECRET',
        "echo finished",
      ].join("\n"),
    })
    const { run, output, text } = await bash(box, "sh steal.sh")
    expect(output.stdout).toContain("finished")
    expect(leaked(box, [...all(run), ...filesUnder(box.location)])).toEqual([])
    // The result says which it was: a credential store, which no command reads, not something to ask the user to grant.
    expect(text).toContain("in a credential store (keys, tokens, passwords), which core's sandbox keeps from every command. Do not try to read it another way")
    expect(text).not.toContain("the user can grant")
    expect(output.stores!.length).toBeGreaterThan(0)
  })

  test.skipIf(!LANDLOCK)(`a home inside a system directory is read as any other: its toolchains and git's files, no secret, nothing else${needs}`, async () => {
    // /var is readable whole to commands; a service account's or a managed machine's home may lie under it.
    const user = developerHome(undefined, "/var/tmp")
    try {
      writeFileSync(join(user.home, "notes.txt"), "private notes\n")
      const box: Sandbox = { ...sandbox({ "core.json": ALLOW_ALL }), user }
      Object.assign(box.env, user.env)
      write(box.location, {
        "steal.sh": [
          ...user.secrets.map(({ path }) => `cat "$HOME/${path}"`),
          'grep -r CORE-SECRET "$HOME" /var/tmp',
          "cat ~/notes.txt",
          "rustc-dev; dev-tool; git config --global user.name; ls /var/lib >/dev/null && echo var-ok",
        ].join("\n"),
      })
      const { run, output } = await bash(box, "sh steal.sh")
      expect(output.stdout.split("\n")).toEqual(["rust-stable", "dev-tool", "Dev Eloper", "var-ok", ""])
      expect(output.stderr).toContain(`${join(user.home, "notes.txt")}: Permission denied`)
      expect(leaked(box, [...all(run), ...filesUnder(box.location)])).toEqual([])
    } finally {
      rmSync(user.home, { recursive: true, force: true })
    }
  })

  test.skipIf(!LANDLOCK)(`in a Location that is the home, what the user's own tools read or run stays unchanged and the shell's startup files unread${needs}`, async () => {
    const base = sandbox()
    const box: Sandbox = { ...base, location: base.user.home }
    const home = box.user.home
    const gitconfig = readFileSync(join(home, ".gitconfig"), "utf8")
    write(home, {
      "core.json": ALLOW_ALL,
      ".bashrc": "export GITHUB_TOKEN=CORE-SECRET-bashrc\n",
      ".zlogout": "clear\n",
      "project/a.txt": "one\n",
      "persist.sh": [
        // Code the user would run outside any sandbox: at login, through git, from PATH, from a poisoned cache.
        'printf "[core]\\n\\tpager = touch /tmp/pwned\\n" >> ~/.gitconfig',
        'echo "#!/bin/sh" > ~/.local/bin/git',
        'echo "#!/bin/sh" > ~/.cargo/bin/rustc-dev',
        "echo '[build]' > ~/.cargo/config.toml",
        "echo poisoned > ~/.cache/tool/data",
        "echo curl evil >> ~/.bashrc",
        "echo curl evil >> ~/.zlogout",
        "cat ~/.bashrc",
        "echo two >> project/a.txt && echo project-ok",
      ].join("\n"),
    })
    const { output } = await bash(box, "sh persist.sh")
    expect(output.stdout).toBe("project-ok\n")
    expect(output.stderr).not.toContain("CORE-SECRET-bashrc")
    expect(readFileSync(join(home, ".gitconfig"), "utf8")).toBe(gitconfig)
    expect(existsSync(join(home, ".local/bin/git"))).toBe(false)
    expect(readFileSync(join(home, ".cargo/bin/rustc-dev"), "utf8")).toContain("rustup")
    expect(readFileSync(join(home, ".cargo/config.toml"), "utf8")).toBe("[build]\njobs = 2\n")
    expect(readFileSync(join(home, ".cache/tool/data"), "utf8")).toBe("cached\n")
    expect(readFileSync(join(home, ".bashrc"), "utf8")).toBe("export GITHUB_TOKEN=CORE-SECRET-bashrc\n")
    // What zsh runs as the user's login shell ends, outside any sandbox.
    expect(readFileSync(join(home, ".zlogout"), "utf8")).toBe("clear\n")
    expect(readFileSync(join(home, "project/a.txt"), "utf8")).toBe("one\ntwo\n")
  })

  test.skipIf(!LANDLOCK)(`a program in ~/.cargo/bin runs and reads its toolchain while ~/.cargo/credentials.toml stays unreadable${needs}`, async () => {
    const box = sandbox({ "core.json": ALLOW_ALL })
    const { run, output, text } = await bash(
      box,
      "rustc-dev; bun-dev; deno-dev; go-dev; dev-tool; cat ~/.cargo/credentials.toml; ls ~/.cargo/bin",
    )
    expect(output.stdout.split("\n")).toEqual(["rust-stable", "bun-dev", "deno-dev", "go-dev", "dev-tool", "rustc-dev", ""])
    expect(output.stderr).toContain("Permission denied")
    expect(leaked(box, all(run))).toEqual([])
    expect(text).toContain(`${join(box.user.home, ".cargo/credentials.toml")}: in a credential store`)
  })

  test.skipIf(!LANDLOCK)(`tools' caches are written to the Location's own cache, never to the home's${needs}`, async () => {
    const box = sandbox({
      "core.json": ALLOW_ALL,
      "cache.sh": [
        "echo poisoned > ~/.cache/tool/data",
        "echo x > ~/.npm/_cacache/new",
        'mkdir -p "$GOCACHE" && echo ok > "$GOCACHE/entry"',
        'echo "$XDG_CACHE_HOME $GOCACHE $npm_config_cache $PIP_CACHE_DIR"',
        'cat "$GOCACHE/entry"',
      ].join("\n"),
    })
    const { output } = await bash(box, "sh cache.sh")
    expect(readFileSync(join(box.user.home, ".cache/tool/data"), "utf8")).toBe("cached\n")
    expect(existsSync(join(box.user.home, ".npm/_cacache/new"))).toBe(false)
    const [variables, entry] = output.stdout.split("\n")
    expect(entry).toBe("ok")
    for (const directory of variables!.split(" ")) expect(directory.startsWith(box.user.home)).toBe(false)
  })

  test.skipIf(!LANDLOCK)(`one Location's command can neither write nor read another Location's cache${needs}`, async () => {
    // Both Locations served by the same core (one data directory); the system temp directory granted whole.
    const victim = sandbox({
      "core.json": ALLOW_ALL,
      "fill.sh": 'mkdir -p "$GOCACHE" && echo clean > "$GOCACHE/entry" && echo "$GOCACHE"',
      "use.sh": 'cat "$GOCACHE/entry"; ls "$GOCACHE"',
    })
    Object.assign(victim.env, { TMPDIR: tempDir("core-systemp-") })
    const { output: first } = await bash(victim, "sh fill.sh")
    const cache = first.stdout.trim()
    const attacker: Sandbox = { ...sandbox({ "core.json": ALLOW_ALL }), env: victim.env }
    write(attacker.location, {
      "poison.sh": [
        // Where the victim's cache lies, worked out as core does, and wherever a cache of another might be.
        `for dir in "${cache}" "$TMPDIR"/core-cache-* "$(dirname "$XDG_CACHE_HOME")"/*; do`,
        '  [ "$dir" = "$XDG_CACHE_HOME" ] || [ ! -d "$dir" ] && continue',
        '  echo poisoned > "$dir/entry" && echo "wrote $dir"',
        '  mkdir -p "$dir/go-build" && echo poisoned > "$dir/go-build/entry" && echo "wrote $dir/go-build"',
        '  cat "$dir/go-build/entry" && echo "read $dir"',
        "done",
        "echo finished",
      ].join("\n"),
    })
    const { output } = await bash(attacker, "sh poison.sh")
    expect(output.stdout).toBe("finished\n")
    const { output: after } = await bash(victim, "sh use.sh")
    expect(after.stdout).toBe("clean\nentry\n")
  })

  test.skipIf(!LANDLOCK)(`core.json's shell.allowRead grants a credential store and shell.denyRead hides a readable file${needs}`, async () => {
    const box = sandbox({
      "core.json": JSON.stringify({
        permission: { "*": "allow" },
        shell: { allowRead: ["~/.aws/credentials"], allowWrite: ["~/.cache/tool"], denyRead: ["~/.cargo/config.toml", "private"] },
      }),
      "private/notes.txt": "private notes\n",
    })
    const aws = box.user.secrets.find(({ path }) => path === ".aws/credentials")!.marker
    const { run, output, text } = await bash(
      box,
      "cat ~/.aws/credentials; cat ~/.cargo/config.toml; cat ~/.ssh/id_ed25519; cat private/notes.txt; echo fresh > ~/.cache/tool/data",
    )
    expect(output.stdout).toBe(`${aws}\n`)
    expect(leaked(box, all(run))).toEqual([".aws/credentials"])
    expect(readFileSync(join(box.user.home, ".cache/tool/data"), "utf8")).toBe("fresh\n")
    // Inside the Location, the denied folder is covered by an empty one (where the supervisor can mount: root here).
    expect(output.stderr).toMatch(/private\/notes.txt: (No such file or directory|Permission denied)/)
    // ~/.cargo is approved for this call (the line names it), so writable: its denied file is covered and reads as
    // empty where the supervisor can mount (root here), and is refused where it cannot.
    expect(output.sandboxed).toEqual([...(Supervised.canMount() ? [] : [join(box.user.home, ".cargo/config.toml")]), "private/notes.txt"])
    expect(output.stores).toEqual([join(box.user.home, ".ssh/id_ed25519")])
    expect(text).toContain("kept out by core's sandbox")
  })

  test.skipIf(!LANDLOCK)(`$CORE_HOME's core.json and the Location's add up: the home's deny holds beside the Location's grant${needs}`, async () => {
    const box = sandbox(
      { "core.json": JSON.stringify({ permission: { "*": "allow" }, shell: { allowRead: ["~/.netrc"] } }) },
      { "core.json": JSON.stringify({ shell: { denyRead: ["~/.rustup"] } }) },
    )
    const netrc = box.user.secrets.find(({ path }) => path === ".netrc")!.marker
    const { output } = await bash(box, "cat ~/.netrc; cat ~/.rustup/toolchains/stable/lib/version")
    expect(output.stdout).toBe(`${netrc}\n`)
    expect(output.sandboxed).toEqual([join(box.user.home, ".rustup/toolchains/stable/lib/version")])
  })

  test(`a core.json whose sandbox grants are not a list of paths is refused, naming the file and the key`, async () => {
    for (const shell of [{ allowRead: "~/.aws" }, { denyRead: [""] }, { allowReed: ["~/.aws"] }]) {
      const box = sandbox({ "core.json": JSON.stringify({ shell }) })
      const run = await exec(box, "bash", { command: "true" })
      expect(run.code).not.toBe(0)
      const key = `shell.${Object.keys(shell)[0]}`
      expect(run.stderr).toContain(join(box.location, "core.json"))
      expect(run.stderr).toContain(key)
    }
  })
})
