// The bash tool's per-command checks through the compiled `core exec` and `core check`, written as a hostile model
// would try them: shells that only run literal code are judged as that code, expansions that evaluate code are
// asked, options that hand a program a command are checked as that command, a quoted name is that literal program,
// xargs cannot rename a program, every spelling of a flag meets the same rule, and what plants code for the user's
// own git is asked of a person. Each row's marker file tells whether the command ran.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { core, exec, sandbox, settlementOf, type Sandbox } from "../cli/fixture"

const config = (bash?: Record<string, string>) =>
  `${JSON.stringify({ permission: { "*": "allow", ...(bash === undefined ? {} : { bash }) } })}\n`

/** A Location with `v.txt` and the given rules. */
const location = (rules: string): Sandbox => sandbox({ "core.json": rules, "v.txt": "v\n", "a.txt": "foo\n" })

/** What `core check bash` decides for a command line. */
const checked = async (box: Sandbox, command: string) => {
  const result = await core(box, ["check", "bash", "--input", JSON.stringify({ command }), "--location", box.location])
  expect(result.code).toBe(0)
  return JSON.parse(result.stdout) as { decision: string; checks: Array<{ decision: string; alwaysAsked?: boolean; protected?: string }> }
}

const run = async (box: Sandbox, command: string, extra: ReadonlyArray<string> = []) =>
  settlementOf(await exec(box, "bash", { command }, extra))

describe("core exec bash: a shell running literal code is judged as that code", () => {
  test("under allow-all, sh -c, bash -c, bash -lc, bash -l -c, env bash -c and dash -c run, and core check allows them", async () => {
    const box = location(config())
    for (const command of [
      "sh -c 'grep -rn foo .'",
      "bash -c 'ls .'",
      "bash -lc 'find . -name x'",
      "bash -l -c 'ls .'",
      "env bash -c 'ls .'",
      "dash -c 'ls .' zero one",
      "CI=1 sh -c 'grep -rn foo .'",
    ]) {
      const settlement = await run(box, command)
      expect([command, settlement.status]).toEqual([command, "success"])
      expect((await checked(box, command)).decision).toBe("allow")
    }
  }, 180_000)

  test('under "rm *": "deny", the wrapped rm is denied like rm itself, and nothing runs', async () => {
    const box = location(config({ "rm *": "deny" }))
    for (const command of ["bash -c 'rm v.txt'", "sh -lc 'rm v.txt'", "env bash -c 'rm v.txt'", "zsh -c 'rm v.txt'", "nohup bash -c 'rm v.txt'"]) {
      const settlement = await run(box, command)
      expect([command, settlement.error?.kind]).toEqual([command, "denied"])
      expect((await checked(box, command)).decision).toBe("deny")
    }
    expect(existsSync(join(box.location, "v.txt"))).toBe(true)
  }, 180_000)

  test("a shell whose code is not a literal string stays asked", async () => {
    const box = location(config())
    const settlement = await run(box, "X='touch ran'; bash -c \"$X\"")
    expect(settlement.status).toBe("declined")
    expect(existsSync(join(box.location, "ran"))).toBe(false)
  }, 60_000)
})

describe("core exec bash: expansions that evaluate code are asked", () => {
  const lines = [
    "v='$(touch ran)'; echo ${v@P}",
    "v='$(touch ran)'; printf '%s' \"${v@P}\"",
    "a='x[$(touch ran)]'; cat <<EOF\n$((a))\nEOF",
    "x='$(touch ran)'; a=([$x]=1)",
    "x='($(touch ran))'; declare -a a=$x",
    "a=(); declare 'a=($(touch ran))'",
    "compgen -W '$(touch ran)' x",
    "a=(1); x='$(touch ran)'; [[ -v a[$x] ]]",
    "x='a[$(touch ran)]'; printf -v \"$x\" 1",
  ]
  test("each is declined without a person, core check says ask, and nothing ran", async () => {
    const box = location(config())
    for (const command of lines) {
      const settlement = await run(box, command)
      expect([command, settlement.status]).toEqual([command, "declined"])
      expect([command, (await checked(box, command)).decision]).toEqual([command, "ask"])
    }
    expect(existsSync(join(box.location, "ran"))).toBe(false)
  }, 180_000)
})

describe("core exec bash: options that hand a program a command are checked as that command", () => {
  test('whatever rule allows the program, the command it runs meets its own rule ("rm *": deny)', async () => {
    const box = location(config({ "rg *": "allow", "fd *": "allow", "rm *": "deny" }))
    for (const command of ["rg --pre rm foo .", "rg --pre=rm foo .", "rg --hostname-bin rm foo", "fd . -x rm", "fd . --exec-batch rm {}"]) {
      const settlement = await run(box, command)
      expect([command, settlement.error?.kind]).toEqual([command, "denied"])
    }
    expect(existsSync(join(box.location, "v.txt"))).toBe(true)
  }, 180_000)

  test("a command that cannot be known statically is asked", async () => {
    const box = location(config({ "rg *": "allow", "rsync *": "allow", "ssh *": "allow" }))
    writeFileSync(join(box.location, "pre.sh"), "#!/bin/sh\ntouch ran\n", { mode: 0o755 })
    for (const command of [
      "rg --pre ./pre.sh foo .",
      "rsync -e 'sh -c \"touch ran\"' v.txt localhost:x",
      "ssh -F ./cfg host",
      "find . -name v.txt -exec ln -s {} zap \\;",
      "zip -TT ./pre.sh a.zip v.txt",
      "sort --compress-program=./pre.sh v.txt",
      "vim '+!touch ran' '+q' v.txt",
    ]) {
      const settlement = await run(box, command)
      // Asked (declined without a person), or refused outright where it may change core's configuration.
      expect([command, ["declined", "error"].includes(settlement.status)]).toEqual([command, true])
    }
    expect(existsSync(join(box.location, "ran"))).toBe(false)
    expect(existsSync(join(box.location, "zap"))).toBe(false)
  }, 180_000)
})

describe("core exec bash: a quoted name with a space is that literal program", () => {
  test('\'git status\' does not meet the rule "git status"', async () => {
    const box = location(config({ "*": "ask", "git status": "allow" }))
    for (const command of ["'git status'", "bash -lc \"'git status'\"", "g'it st'atus"]) {
      const settlement = await run(box, command)
      expect([command, settlement.status]).toEqual([command, "declined"])
      expect((await checked(box, command)).decision).toBe("ask")
    }
    expect((await run(box, "git status")).status).toBe("success")
  }, 120_000)
})

describe("core exec bash: xargs cannot rename a program through its input", () => {
  test('type -P rm | xargs -I{} ln -s {} zap; ./zap v.txt is not run under "rm *": "deny"', async () => {
    const box = location(config({ "rm *": "deny" }))
    for (const command of ["type -P rm | xargs -I{} ln -s {} zap; ./zap v.txt", "type -P rm | xargs -i cp {} zap; ./zap v.txt", "type -P rm | xargs --replace=@ cp @ zap", "cp \"$(type -P rm)\" zap; ./zap v.txt", "ln -s /bin/rm zap && ./zap v.txt"]) {
      const settlement = await run(box, command)
      expect([command, settlement.status]).not.toEqual([command, "success"])
    }
    expect(existsSync(join(box.location, "zap"))).toBe(false)
    expect(existsSync(join(box.location, "v.txt"))).toBe(true)
  }, 120_000)
})

describe("core exec bash: every spelling of the same flags meets the same rule", () => {
  test('"rm -rf *": "deny" denies -fr, -r -f, --recursive --force and -Rf, in exec and in core check', async () => {
    const box = location(config({ "rm -rf *": "deny" }))
    mkdirSync(join(box.location, "d"))
    for (const command of ["rm -fr d", "rm -r -f d", "rm --recursive --force d", "rm -Rf d", "rm -f -R d", "rm --force -r d", "D=d; rm -fr $D", "rm -vfr d"]) {
      const settlement = await run(box, command)
      expect([command, settlement.error?.kind]).toEqual([command, "denied"])
      expect((await checked(box, command)).decision).toBe("deny")
    }
    expect(existsSync(join(box.location, "d"))).toBe(true)
    // Other flags are other commands.
    expect((await run(box, "rm -f v.txt")).status).toBe("success")
  }, 180_000)

  test('"git push --force *": "deny" denies git push -f', async () => {
    const box = location(config({ "git push --force *": "deny" }))
    for (const command of ["git push -f origin main", "git push origin +main"]) {
      expect([command, (await run(box, command)).error?.kind]).toEqual([command, "denied"])
    }
  }, 60_000)
})

describe("core exec bash: code planted for the user's own git is asked of a person", () => {
  test("git config of code keys, hook templates and writes into .git/hooks or .git/config are refused, --yes or not", async () => {
    const box = location(config())
    const git = Bun.spawnSync(["git", "init", "-q", box.location])
    expect(git.exitCode).toBe(0)
    const before = readFileSync(join(box.location, ".git", "config"), "utf8")
    writeFileSync(join(box.location, "hook.sh"), "#!/bin/sh\ntouch ran\n")
    for (const command of [
      "git config core.hooksPath .",
      "git config core.fsmonitor ./hook.sh",
      "git config alias.st '!touch ran'",
      "git config --global core.pager 'touch ran'",
      "git config set filter.x.smudge 'touch ran'",
      "git config include.path ../x",
      "git -C . config diff.x.textconv ./hook.sh",
      "git init --template=./t q",
      "git clone -c core.sshCommand='touch ran' . c",
      "cp hook.sh .git/hooks/pre-commit",
      "echo '[core] fsmonitor = ./hook.sh' >> .git/config",
      "tee .git/info/attributes < hook.sh",
      "bash -c 'cat hook.sh > .git/hooks/post-checkout'",
      // Core's own configuration, through a transparent shell.
      "sh -c 'echo {} > core.json'",
      "bash -lc 'rm -rf tools'",
    ]) {
      const settlement = await run(box, command, ["--yes"])
      expect([command, settlement.status]).toEqual([command, "error"])
      expect(settlement.error?.message).toContain("A person must make that change")
      const explained = await checked(box, command)
      expect(explained.checks.some((check) => check.protected !== undefined && check.alwaysAsked === true)).toBe(true)
    }
    expect(readFileSync(join(box.location, ".git", "config"), "utf8")).toBe(before)
    expect(existsSync(join(box.location, ".git", "hooks", "pre-commit"))).toBe(false)
    expect(existsSync(join(box.location, "ran"))).toBe(false)
    // Reading git's configuration is not asked; a setting that runs nothing is asked as usual, and --yes approves it.
    for (const command of ["git config --get core.hooksPath", "cat .git/config", "sed -n 1p .git/config"]) {
      expect([command, (await run(box, command)).status]).toEqual([command, "success"])
    }
    expect((await run(box, "git config user.name tester")).status).toBe("declined")
    expect((await run(box, "git config user.name tester", ["--yes"])).status).toBe("success")
  }, 240_000)
})
