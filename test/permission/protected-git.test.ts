// What the user's own git runs unasked (.git/hooks, .git/config, .git/info/attributes) is read-only to commands and
// asked of a person through the file tools (DESIGN §2 law 13), attacked through the compiled `core exec` as a model
// would, under rules that allow everything: a hook written and made executable, seen and through scripts the command
// parser cannot see into; hooksPath appended to the config; a hooks folder created where none was; a worktree whose
// `.git` is a file pointing at a repository elsewhere; and the write tool on each. Git then runs no planted code.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { exec, type Sandbox, sandbox, settlementOf } from "../cli/fixture"
import { git } from "../support/git"
import { tempDir } from "../support/temp"

const ALLOW = '{ "permission": { "*": "allow" } }\n'
const GIT = Bun.which("git")
const needs = GIT === null ? " (SKIPPED: git is not installed)" : ""

/** A Location that is a git repository with one commit. */
const repository = (): Sandbox => {
  const box = sandbox({ "core.json": ALLOW, "a.txt": "a\n" })
  git(box.location, "init", "-q")
  git(box.location, "add", ".")
  git(box.location, "commit", "-qm", "first")
  return box
}

/** A shell-quoted string. */
const quoted = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`

/** A command running `js` as a script the command parser cannot see into (written to a file, then run by node). */
const script = (js: string) => `printf %s ${quoted(js)} > .attack.js && node .attack.js`

/** What a hook does when it runs: leaves `pwned` where the test can see it. */
const hook = (box: Sandbox) => `#!/bin/sh\ntouch ${join(box.location, "pwned")}\n`

/** The user commits after the model's turn: no planted hook may run. */
const userCommits = (box: Sandbox, cwd = box.location) => {
  Bun.write(join(cwd, "b.txt"), `${Math.random()}`)
  git(cwd, "add", "b.txt")
  git(cwd, "commit", "-qm", "user")
  git(cwd, "status")
  expect(existsSync(join(box.location, "pwned"))).toBe(false)
}

describe("core exec: the user's own git is not a way out", () => {
  test.skipIf(GIT === null)(`a pre-commit hook written and made executable does not stay${needs}`, async () => {
    const box = repository()
    const path = ".git/hooks/pre-commit"
    for (const [command, extra] of [
      [`echo x > ${path}; chmod +x ${path}`, []],
      [`printf %s ${quoted(hook(box))} > ${path}; chmod +x ${path}`, []],
      [script(`require("fs").writeFileSync("${path}", ${JSON.stringify(hook(box))}, { mode: 0o755 })`), []],
      // Code the parser cannot read is asked: a person approving it does not approve planting a hook.
      [`python3 -c ${quoted(`import os\nopen("${path}", "w").write(${JSON.stringify(hook(box))})\nos.chmod("${path}", 0o755)`)}`, ["--yes"]],
    ] as const) {
      await exec(box, "bash", { command }, extra)
      expect(existsSync(join(box.location, path))).toBe(false)
    }
    userCommits(box)
  }, 120_000)

  test.skipIf(GIT === null)(`a hooks folder created where there was none is removed${needs}`, async () => {
    const box = repository()
    rmSync(join(box.location, ".git/hooks"), { recursive: true })
    await exec(box, "bash", {
      command: script(`const fs = require("fs"); fs.mkdirSync(".git/hooks"); fs.writeFileSync(".git/hooks/post-commit", ${JSON.stringify(hook(box))}, { mode: 0o755 })`),
    })
    expect(existsSync(join(box.location, ".git/hooks"))).toBe(false)
    userCommits(box)
  }, 120_000)

  test.skipIf(GIT === null)(`.git/config and .git/info/attributes cannot be changed by a command's script${needs}`, async () => {
    const box = repository()
    const config = readFileSync(join(box.location, ".git/config"), "utf8")
    const hooks = join(box.location, "planted")
    const append = `\n[core]\n\thooksPath = ${hooks}\n\tfsmonitor = ${join(hooks, "post-commit")}\n`
    const plant = `mkdir -p planted && printf %s ${quoted(hook(box))} > planted/post-commit && chmod +x planted/post-commit`
    await exec(box, "bash", { command: `${plant}; python3 -c ${quoted(`open(".git/config", "a").write(${JSON.stringify(append)})`)}` }, ["--yes"])
    // The command as a person would approve it: the config is read-only to it whatever approved it.
    await exec(box, "bash", { command: `git config core.hooksPath ${hooks}` }, ["--yes"])
    // Nor can a command change the remote, which names the project a fleet's team approvals belong to.
    await exec(box, "bash", { command: "git remote add origin https://example.com/another/project.git" }, ["--yes"])
    await exec(box, "bash", { command: script(`require("fs").appendFileSync(".git/config", ${JSON.stringify(append)})`) })
    await exec(box, "bash", { command: script(`const fs = require("fs"); fs.renameSync(".git/config", ".git/config.old"); fs.writeFileSync(".git/config", ${JSON.stringify(config + append)})`) })
    await exec(box, "bash", {
      command: script(`const fs = require("fs"); fs.mkdirSync(".git/info", { recursive: true }); fs.writeFileSync(".git/info/attributes", "* filter=x\\n")`),
    })
    expect(readFileSync(join(box.location, ".git/config"), "utf8")).toBe(config)
    expect(existsSync(join(box.location, ".git/info/attributes"))).toBe(false)
    userCommits(box)
  }, 120_000)

  test.skipIf(GIT === null)(`in a worktree, whose .git is a file, the repository's hooks and the pointer are kept${needs}`, async () => {
    // Both in the temp directory, which commands may write: the main repository is reachable from the worktree.
    const main = repository()
    const location = join(tempDir("core-wt-"), "wt")
    git(main.location, "worktree", "add", "-q", location)
    const box: Sandbox = { ...main, location }
    Bun.write(join(location, "core.json"), ALLOW)
    const pointer = readFileSync(join(location, ".git"), "utf8")
    const hookPath = join(main.location, ".git/hooks/pre-commit")
    await exec(box, "bash", { command: script(`require("fs").writeFileSync(${JSON.stringify(hookPath)}, ${JSON.stringify(hook(box))}, { mode: 0o755 })`) })
    expect(existsSync(hookPath)).toBe(false)
    const fake = join(location, "fake-git")
    await exec(box, "bash", {
      command: `cp -r ${join(main.location, ".git")} fake-git && ${script(`const fs = require("fs"); fs.writeFileSync("fake-git/hooks/pre-commit", ${JSON.stringify(hook(box))}, { mode: 0o755 }); fs.writeFileSync(".git", "gitdir: ${fake}\\n")`)}`,
    })
    expect(readFileSync(join(location, ".git"), "utf8")).toBe(pointer)
    userCommits(box, location)
  }, 120_000)

  test.skipIf(GIT === null)(`the write tool on .git/config or a hook asks a person: declined without one${needs}`, async () => {
    const box = repository()
    const config = readFileSync(join(box.location, ".git/config"), "utf8")
    for (const filePath of [".git/config", ".git/hooks/pre-commit", ".git/info/attributes"]) {
      for (const extra of [[], ["--yes"]]) {
        const result = await exec(box, "write", { filePath, content: "[core]\n\thooksPath = planted\n" }, extra)
        const settlement = settlementOf(result)
        expect(settlement.status).toBe("error")
        expect(settlement.error?.message).toContain("A person must make that change")
      }
    }
    expect(readFileSync(join(box.location, ".git/config"), "utf8")).toBe(config)
    expect(existsSync(join(box.location, ".git/hooks/pre-commit"))).toBe(false)
  }, 120_000)

  // Git reads `commondir` in any git directory: pointed at a folder the model filled (a config with core.fsmonitor),
  // the user's next `git status` ran the model's command outside any sandbox.
  test.skipIf(GIT === null)(`.git/commondir cannot be written: by the write tool (asked), nor by a command's script${needs}`, async () => {
    const box = repository()
    const planted = `[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch ${join(box.location, "pwned")}; false #"\n`
    for (const [filePath, content] of [["evil/objects/info/alternates", `${box.location}/.git/objects\n`], ["evil/refs/heads/.keep", ""], ["evil/config", planted]]) {
      expect(settlementOf(await exec(box, "write", { filePath, content: content! })).status).toBe("success")
    }
    for (const extra of [[], ["--yes"]]) {
      const settlement = settlementOf(await exec(box, "write", { filePath: ".git/commondir", content: "../evil\n" }, extra))
      expect(settlement.status).toBe("error")
      expect(settlement.error?.message).toContain("A person must make that change")
    }
    const result = await exec(box, "bash", { command: script(`require("fs").writeFileSync(".git/commondir", "../evil\\n")`) })
    expect(settlementOf(result).status).toBe("success")
    expect(existsSync(join(box.location, ".git/commondir"))).toBe(false)
    userCommits(box)
  }, 120_000)

  // The config names programs of the project for git to run (an fsmonitor hook, a filter, a credential helper):
  // edited, the next `git status` of the user ran the model's code, outside any sandbox, with nothing asked.
  test.skipIf(GIT === null)(`a program of the project the repository's config has git run is asked of a person, and a command cannot change it${needs}`, async () => {
    const box = repository()
    const programs = ["scripts/fsmon.sh", "scripts/clean.sh", "tools-git/cred.sh", "scripts/diff.sh"]
    for (const program of programs) {
      mkdirSync(join(box.location, program, ".."), { recursive: true })
      writeFileSync(join(box.location, program), "#!/bin/sh\nexit 1\n", { mode: 0o755 })
    }
    git(box.location, "config", "core.fsmonitor", "scripts/fsmon.sh")
    git(box.location, "config", "filter.x.clean", "sh ./scripts/clean.sh %f")
    git(box.location, "config", "credential.helper", "!tools-git/cred.sh")
    git(box.location, "config", "diff.x.textconv", "scripts/diff.sh")
    const planted = `#!/bin/sh\ntouch ${join(box.location, "pwned")}\nexit 1\n`
    for (const program of programs) {
      const edited = settlementOf(await exec(box, "edit", { filePath: program, oldString: "exit 1", newString: `touch ${join(box.location, "pwned")}` }, ["--yes"]))
      expect([program, edited.status, edited.error?.message.includes("A person must make that change")]).toEqual([program, "error", true])
      const written = settlementOf(await exec(box, "write", { filePath: program, content: planted }, ["--yes"]))
      expect([program, written.status]).toEqual([program, "error"])
      await exec(box, "bash", { command: script(`require("fs").writeFileSync(${JSON.stringify(program)}, ${JSON.stringify(planted)})`) })
      expect([program, readFileSync(join(box.location, program), "utf8")]).toEqual([program, "#!/bin/sh\nexit 1\n"])
    }
    // One the config would run but that is not there yet is asked by its name too.
    git(box.location, "config", "merge.x.driver", "./scripts/merge.sh %O %A %B")
    const made = settlementOf(await exec(box, "write", { filePath: "scripts/merge.sh", content: planted }, ["--yes"]))
    expect([made.status, made.error?.message.includes("A person must make that change")]).toEqual(["error", true])
    // A script the config does not name stays the model's.
    expect(settlementOf(await exec(box, "write", { filePath: "scripts/build.sh", content: "echo build\n" })).status).toBe("success")
    userCommits(box)
  }, 120_000)

  // husky: `core.hooksPath` is `.husky/_`, whose hooks each run the script of their name one folder up.
  test.skipIf(GIT === null)(`husky's hook scripts, in the folder above the hooks path, are asked of a person${needs}`, async () => {
    const box = repository()
    mkdirSync(join(box.location, ".husky/_"), { recursive: true })
    writeFileSync(join(box.location, ".husky/_/pre-commit"), '#!/bin/sh\n[ -f ".husky/pre-commit" ] && sh .husky/pre-commit\n', { mode: 0o755 })
    writeFileSync(join(box.location, ".husky/pre-commit"), "exit 0\n")
    git(box.location, "config", "core.hooksPath", ".husky/_")
    const written = settlementOf(await exec(box, "write", { filePath: ".husky/pre-commit", content: hook(box) }, ["--yes"]))
    expect([written.status, written.error?.message.includes("A person must make that change")]).toEqual(["error", true])
    expect(readFileSync(join(box.location, ".husky/pre-commit"), "utf8")).toBe("exit 0\n")
    userCommits(box)
  }, 120_000)

  // A repository the model makes where there was none (the Location itself, or a folder in it) is one the user's git
  // runs once the user works there: its config, hooks, attributes and a `.git` pointer file are asked by name.
  test(`where no repository is yet, the write tool asks for a .git config, hook, attributes or pointer file`, async () => {
    const box = sandbox({ "core.json": ALLOW, "a.txt": "a\n" })
    for (const filePath of [".git/config", ".git/hooks/post-checkout", ".git/info/attributes", ".git/commondir", "sub/.git/config", "sub/.git/hooks/pre-commit", "sub/.git", "sub/.GIT/config"]) {
      const settlement = settlementOf(await exec(box, "write", { filePath, content: "[core]\n\tfsmonitor = planted\n" }, ["--yes"]))
      expect([filePath, settlement.status, settlement.error?.message.includes("A person must make that change")]).toEqual([filePath, "error", true])
    }
    // What a repository holds besides runs nothing: it stays the model's, as files named like those elsewhere do.
    for (const filePath of [".git/HEAD", ".git/description", "config", "hooks/pre-commit", "sub/git/config", "sub/.github/config"]) {
      expect([filePath, settlementOf(await exec(box, "write", { filePath, content: "x\n" })).status]).toEqual([filePath, "success"])
    }
  }, 120_000)

  // A bare repository is a folder with a HEAD and objects/ (no .git in its name): written config first and HEAD last,
  // the Location became one whose config (an sshCommand, an fsmonitor) the user's git ran, with nothing asked.
  test.skipIf(GIT === null)(`the write tool asks for the HEAD or objects/ that would make a folder a bare repository, and for its config then${needs}`, async () => {
    const box = sandbox({ "core.json": ALLOW, "a.txt": "a\n" })
    const planted = join(box.location, "pwned")
    const config = `[core]\n\tbare = true\n\tsshCommand = "touch ${planted}; false"\n[remote "origin"]\n\turl = ssh://example.invalid/x\n`
    const write = async (filePath: string, content = "") => settlementOf(await exec(box, "write", { filePath, content }, ["--yes"]))
    const asked = (settlement: Awaited<ReturnType<typeof write>>) => [settlement.status, settlement.error?.message.includes("A person must make that change")]
    for (const base of ["", "pkg/"]) {
      // Written beside nothing that makes a repository, config, refs and a HEAD are the model's files.
      expect((await write(`${base}config`, config)).status).toBe("success")
      expect((await write(`${base}refs/heads/.keep`)).status).toBe("success")
      expect((await write(`${base}objects/info/.keep`)).status).toBe("success")
      // The HEAD that would make the folder a repository is asked; so are objects/ beside a HEAD.
      expect(asked(await write(`${base}HEAD`, "ref: refs/heads/main\n"))).toEqual(["error", true])
      expect(existsSync(join(box.location, base, "HEAD"))).toBe(false)
    }
    rmSync(join(box.location, "pkg/objects"), { recursive: true })
    writeFileSync(join(box.location, "pkg/HEAD"), "ref: refs/heads/main\n")
    expect(asked(await write("pkg/objects/info/.keep"))).toEqual(["error", true])
    expect(existsSync(join(box.location, "pkg/objects"))).toBe(false)
    // A bare repository a person made (a fixture of a project, say): its config and hooks are asked, the rest not.
    git(box.location, "init", "-q", "--bare", "fixture.git")
    for (const filePath of ["fixture.git/config", "fixture.git/hooks/post-update", "fixture.git/info/attributes"]) {
      expect([filePath, ...asked(await write(filePath, config))]).toEqual([filePath, "error", true])
    }
    expect((await write("fixture.git/notes.txt", "mine\n")).status).toBe("success")
    // A commondir sends git to another folder's objects and config: the Location's HEAD then makes it a repository
    // whose config is that folder's. Its name alone is asked, wherever it is.
    for (const filePath of ["commondir", "sub/commondir"]) {
      expect([filePath, ...asked(await write(filePath, "fixtures/c\n"))]).toEqual([filePath, "error", true])
    }
    mkdirSync(join(box.location, "fixtures/c/objects"), { recursive: true })
    writeFileSync(join(box.location, "fixtures/c/config"), config)
    mkdirSync(join(box.location, "sub"), { recursive: true })
    writeFileSync(join(box.location, "sub/commondir"), "../fixtures/c\n")
    // Beside a commondir a person made, the HEAD that would make the folder a repository is asked.
    expect(asked(await write("sub/HEAD", "ref: refs/heads/main\n"))).toEqual(["error", true])
    expect(() => git(join(box.location, "sub"), "fetch")).toThrow()
    expect(() => git(join(box.location, "pkg"), "fetch")).toThrow()
    expect(existsSync(planted)).toBe(false)
  }, 120_000)

  // One patch adding a folder's HEAD, objects/ and config made it a repository whose fsmonitor the user's git ran:
  // each file was checked against the disk, where none of the others was yet.
  test.skipIf(GIT === null)(`apply_patch adding a HEAD and objects/ to one folder together is asked, at the root or below${needs}`, async () => {
    const box = sandbox({ "core.json": ALLOW, "a.txt": "a\n" })
    const planted = join(box.location, "pwned")
    const add = (path: string, lines: ReadonlyArray<string>) => [`*** Add File: ${path}`, ...lines.map((line) => `+${line}`)]
    const patch = (base: string) =>
      [
        "*** Begin Patch",
        ...add(`${base}HEAD`, ["ref: refs/heads/main"]),
        ...add(`${base}config`, ["[core]", "\trepositoryformatversion = 0", "\tbare = false", "\tworktree = .", `\tfsmonitor = "touch ${planted}; false"`]),
        ...add(`${base}objects/info/packs`, [""]),
        ...add(`${base}refs/heads/.keep`, [""]),
        "*** End Patch",
      ].join("\n")
    for (const base of ["vendor/", ""]) {
      const settlement = settlementOf(await exec(box, "apply_patch", { patchText: patch(base) }, ["--yes"]))
      expect([base, settlement.status, settlement.error?.message.includes("A person must make that change")]).toEqual([base, "error", true])
      expect(settlement.error?.message).toContain("would make a git repository")
      expect(existsSync(join(box.location, base, "HEAD"))).toBe(false)
    }
    mkdirSync(join(box.location, "vendor"), { recursive: true })
    expect(() => git(join(box.location, "vendor"), "status")).toThrow()
    expect(existsSync(planted)).toBe(false)
    // Files of a folder that do not make a repository together are the model's, in one patch.
    const plain = ["*** Begin Patch", ...add("docs/HEAD.md", ["notes"]), ...add("docs/objects.md", ["more"]), "*** End Patch"].join("\n")
    expect(settlementOf(await exec(box, "apply_patch", { patchText: plain })).status).toBe("success")
  }, 120_000)

  // The user's own git configuration holds programs git runs in every repository: one approval of the home (an
  // external_directory rule, or "always") let the model plant a core.fsmonitor there. Like the repository's, it is
  // asked of a person each time, also where a dotfiles repository links it.
  test("the write tool on ~/.gitconfig or ~/.config/git/config asks a person, even where the home is allowed", async () => {
    const box = sandbox({ "core.json": '{ "permission": { "*": "allow", "external_directory": "allow" } }\n' })
    const home = box.user.home
    mkdirSync(join(home, "dotfiles"), { recursive: true })
    writeFileSync(join(home, "dotfiles/gitconfig"), "[user]\n\tname = a\n")
    rmSync(join(home, ".gitconfig"), { force: true })
    symlinkSync(join(home, "dotfiles/gitconfig"), join(home, ".gitconfig"))
    for (const filePath of [join(home, ".gitconfig"), join(home, "dotfiles/gitconfig"), join(home, ".config/git/config"), join(home, ".config/git/attributes")]) {
      const settlement = settlementOf(await exec(box, "write", { filePath, content: '[core]\n\tfsmonitor = "touch /tmp/pwned"\n' }, ["--yes"]))
      expect([filePath, settlement.status, settlement.error?.message.includes("A person must make that change")]).toEqual([filePath, "error", true])
    }
    expect(readFileSync(join(home, "dotfiles/gitconfig"), "utf8")).toBe("[user]\n\tname = a\n")
    // The rest of the home stays as the rules say.
    expect(settlementOf(await exec(box, "write", { filePath: join(home, "notes.txt"), content: "x" }, ["--yes"])).status).toBe("success")
  }, 120_000)

  // A worktree's git directory holds the commondir git wrote for it: held read-only for commands, `git worktree
  // remove` could not delete it (EBUSY). It is protected by name for the file tools and a line's named paths instead.
  test.skipIf(GIT === null)(`worktrees are made and removed in the sandbox; a worktree's commondir is asked through the write tool${needs}`, async () => {
    const box = repository()
    git(box.location, "worktree", "add", "-q", "wts/one")
    const removed = await exec(box, "bash", { command: "git worktree remove --force wts/one && git worktree add -q wts/two && git worktree list" })
    expect(settlementOf(removed)).toMatchObject({ status: "success", structured: { exitCode: 0 } })
    expect(existsSync(join(box.location, ".git/worktrees/one"))).toBe(false)
    expect(existsSync(join(box.location, ".git/worktrees/two/commondir"))).toBe(true)
    for (const filePath of [".git/worktrees/two/commondir", ".git/worktrees/two/config.worktree"]) {
      const settlement = settlementOf(await exec(box, "write", { filePath, content: "../../../evil\n" }, ["--yes"]))
      expect([filePath, settlement.status, settlement.error?.message.includes("A person must make that change")]).toEqual([filePath, "error", true])
    }
    expect(readFileSync(join(box.location, ".git/worktrees/two/commondir"), "utf8")).toBe("../..\n")
  }, 120_000)

  // The hooks git runs may live where core.hooksPath says (husky's .husky/), and config may come from files an
  // include names: code there runs as surely as in .git/hooks, on the user's next commit.
  test.skipIf(GIT === null)(`the hooks of core.hooksPath and the files include.path names are kept, as .git/hooks is${needs}`, async () => {
    const box = repository()
    mkdirSync(join(box.location, ".husky"))
    writeFileSync(join(box.location, ".husky/pre-commit"), "#!/bin/sh\necho lint\n", { mode: 0o755 })
    writeFileSync(join(box.location, ".gitconfig.shared"), "[alias]\n\tst = status\n")
    git(box.location, "config", "core.hooksPath", ".husky")
    git(box.location, "config", "include.path", "../.gitconfig.shared")
    const planted = `#!/bin/sh\ntouch ${join(box.location, "pwned")}\n`
    await exec(box, "bash", { command: `printf %s ${quoted(planted)} > .husky/pre-commit` })
    await exec(box, "bash", { command: script(`require("fs").writeFileSync(".husky/pre-push", ${JSON.stringify(planted)}, { mode: 0o755 })`) })
    await exec(box, "bash", { command: script(`require("fs").appendFileSync(".gitconfig.shared", "[core]\\n\\tfsmonitor = touch pwned\\n")`) })
    expect(readFileSync(join(box.location, ".husky/pre-commit"), "utf8")).toBe("#!/bin/sh\necho lint\n")
    expect(existsSync(join(box.location, ".husky/pre-push"))).toBe(false)
    expect(readFileSync(join(box.location, ".gitconfig.shared"), "utf8")).toBe("[alias]\n\tst = status\n")
    for (const filePath of [".husky/pre-commit", ".husky/post-merge", ".gitconfig.shared"]) {
      const settlement = settlementOf(await exec(box, "write", { filePath, content: planted }, ["--yes"]))
      expect([filePath, settlement.error?.message.includes("A person must make that change")]).toEqual([filePath, true])
    }
    userCommits(box)
  }, 120_000)

  // Hooks turned off with a hooks path of /dev/null: /dev/null stays what every command writes to.
  test.skipIf(GIT === null)(`a core.hooksPath of /dev/null protects nothing: output still goes to /dev/null${needs}`, async () => {
    const box = repository()
    git(box.location, "config", "core.hooksPath", "/dev/null")
    const result = await exec(box, "bash", { command: "echo quiet > /dev/null && echo done" })
    expect(settlementOf(result)).toMatchObject({ status: "success", structured: { exitCode: 0 } })
  }, 120_000)

  test.skipIf(GIT === null)(`the rest of .git stays the model's: commits work in the sandbox${needs}`, async () => {
    const box = repository()
    const result = await exec(box, "bash", { command: "echo b > b.txt && printf %s 'require(\"fs\").writeFileSync(\".git/description\", \"mine\")' > w.js && node w.js && cat .git/description" })
    expect(settlementOf(result).status).toBe("success")
    expect(readFileSync(join(box.location, ".git/description"), "utf8")).toBe("mine")
  }, 120_000)
})
