// The OS sandbox with real processes and the real kernel: a sandboxed command writes only in the Location, its
// temp directory and approved directories; reads outside them only system and PATH directories; never reads or
// writes $CORE_HOME or $CORE_DATA_DIR, even where they lie inside the Location; cannot read core's environment or
// signal core. Core itself, which spawned it, stays unrestricted. Landlock is required for these tests: where the
// kernel lacks it they are skipped and say so in their names.

import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { chmodSync, closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Effect } from "effect"
import { Landlock } from "../../src/shell/landlock"
import { Shell } from "../../src/shell/shell"
import { Home } from "../../src/shell/home"
import { Sandbox } from "../../src/shell/sandbox"
import { Supervised } from "../../src/shell/supervised"
import { SidecarPorts } from "../../src/permission/sidecar-ports"
import { tempDir } from "../support/temp"
import { inChild } from "../support/in-child"

const LANDLOCK = Landlock.abi() > 0
const needs = LANDLOCK ? "" : " (SKIPPED: this kernel has no Landlock)"

const shell = Shell.make({}, { records: tempDir("core-runs-") })

/**
 * How the system refuses a command's write outside its grants: "Read-only file system" where the starter could make
 * every other place read-only in the command's mount namespace (the kernel checks that before Landlock), else
 * Landlock's "Permission denied". A read outside is always Landlock's.
 */
const REFUSED_WRITE = Supervised.canMount() ? "Read-only file system" : "Permission denied"
const REFUSED = /Permission denied|Read-only file system/g

const saved = { home: process.env.CORE_HOME, data: process.env.CORE_DATA_DIR }
let home = ""
let data = ""
beforeEach(() => {
  home = tempDir("core-home-")
  data = tempDir("core-data-")
  writeFileSync(join(home, "core.json"), "{}")
  writeFileSync(join(data, "core.db"), "secret")
  writeFileSync(join(data, "core.db.journal"), "journal\n")
  process.env.CORE_HOME = home
  process.env.CORE_DATA_DIR = data
})
afterEach(() => {
  for (const [name, value] of [["CORE_HOME", saved.home], ["CORE_DATA_DIR", saved.data]] as const) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
})

const run = (
  command: string,
  location: string,
  approved: ReadonlyArray<string> = [],
  producer = shell,
  env: Record<string, string | undefined> = { PATH: process.env.PATH },
) =>
  Effect.runPromise(
    producer.run({
      argv: [producer.shell, "-c", command],
      cwd: location,
      env,
      sandbox: { location, approved },
    }),
  )

/** An executable script at `path` that prints the file `reads`. */
const script = (path: string, reads: string) => {
  mkdirSync(join(path, ".."), { recursive: true })
  writeFileSync(path, `#!/bin/sh\ncat "${reads}"\n`)
  chmodSync(path, 0o755)
}

describe("the shell sandbox", () => {
  test.skipIf(!LANDLOCK)(`a write outside the Location is refused, one inside succeeds${needs}`, async () => {
    const location = tempDir("core-loc-")
    const outside = tempDir("core-outside-")
    const result = await run(`echo in > in.txt; echo out > ${outside}/out.txt`, location)
    expect(readFileSync(join(location, "in.txt"), "utf8")).toBe("in\n")
    expect(existsSync(join(outside, "out.txt"))).toBe(false)
    expect(result.stderr.text).toContain(`${outside}/out.txt: ${REFUSED_WRITE}`)
    // Named to the model as kept out by the sandbox, whichever way the system worded the refusal.
    expect(result.refused).toEqual([`${outside}/out.txt`])
    expect(result.exitCode).not.toBe(0)
    // Only the command's thread was restricted: core, which spawned it, still writes there.
    writeFileSync(join(outside, "core.txt"), "core")
    expect(readFileSync(join(outside, "core.txt"), "utf8")).toBe("core")
  })

  // The layer keeping commands off core's ports took REFER as handled and denied it: every rename or link into
  // another directory failed with EXDEV (git mv, git branch -m, bun install), and mv only seemed to work (it copies
  // then). Run by a user who is not root, the reaper's layer was in the way too (test/shell/user.test.ts).
  test.skipIf(!LANDLOCK)(`a file renamed or linked into another directory, in the Location and in its temp directory${needs}`, async () => {
    const location = tempDir("core-loc-")
    // Paths as JavaScript expressions: the temp directory's from the environment.
    const rename = (from: string, to: string) => `bun -e 'require("fs").renameSync(${from}, ${to})'`
    const result = await run(
      `mkdir a b c && echo x > a/f && ${rename('"a/f"', '"b/f"')} && ln b/f c/g && cat b/f c/g && ` +
        `mkdir "$TMPDIR/d" "$TMPDIR/e" && echo y > "$TMPDIR/d/f" && ` +
        `${rename('process.env.TMPDIR + "/d/f"', 'process.env.TMPDIR + "/e/f"')} && cat "$TMPDIR/e/f"`,
      location,
    )
    expect({ stdout: result.stdout.text, stderr: result.stderr.text, exitCode: result.exitCode }).toEqual({ stdout: "x\nx\ny\n", stderr: "", exitCode: 0 })
  })

  // git says "does not appear to be a git repository" of a remote it may not read (`../remote.git`, outside the
  // Location), which read as a wrong path: it is named as the sandbox's, as a refused file is. A remote that is not
  // there is not.
  test.skipIf(!LANDLOCK)(`a git remote outside the Location is named as kept out by the sandbox; one that is not there is not${needs}`, async () => {
    const root = tempDir("core-remote-")
    const location = join(root, "repo")
    mkdirSync(location)
    const git = (args: ReadonlyArray<string>, cwd: string) => {
      const done = Bun.spawnSync(["git", "-c", "user.name=u", "-c", "user.email=u@x", ...args], { cwd, stderr: "pipe" })
      if (done.exitCode !== 0) throw new Error(done.stderr.toString())
    }
    git(["init", "-q", "--bare", "remote.git"], root)
    git(["init", "-q"], location)
    git(["commit", "-q", "--allow-empty", "-m", "one"], location)
    git(["remote", "add", "origin", "../remote.git"], location)
    git(["remote", "add", "gone", "../missing.git"], location)
    const pushed = await run("git push -q origin HEAD; git push -q gone HEAD", location)
    expect(pushed.stderr.text).toContain("fatal: '../remote.git' does not appear to be a git repository")
    expect(pushed.stderr.text).toContain("fatal: '../missing.git' does not appear to be a git repository")
    expect(pushed.refused).toEqual(["../remote.git"])
    // However many such lines a command prints, a few paths are named.
    const many = Array.from({ length: 10 }, (_, at) => mkdirSync(join(root, `r${at}.git`), { recursive: true }) ?? join(root, `r${at}.git`))
    const printed = await run(many.map((path) => `echo "fatal: '${path}' does not appear to be a git repository" >&2`).join("; "), location)
    expect(printed.refused).toHaveLength(4)
  })

  test.skipIf(!LANDLOCK)(`reading outside the Location is refused unless approved; system files stay readable${needs}`, async () => {
    const location = tempDir("core-loc-")
    const outside = tempDir("core-outside-")
    writeFileSync(join(outside, "secret.txt"), "secret")
    const refused = await run(`cat ${outside}/secret.txt; head -c 4 /etc/hostname >/dev/null && echo system-ok`, location)
    expect(refused.stdout.text).toBe("system-ok\n")
    expect(refused.stderr.text).toContain("Permission denied")
    const approved = await run(`cat ${outside}/secret.txt; echo more > ${outside}/new.txt`, location, [outside])
    expect(approved.stdout.text).toBe("secret")
    expect(readFileSync(join(outside, "new.txt"), "utf8")).toBe("more\n")
  })

  // Root keeps DAC_OVERRIDE in the sandbox (a root build chowns and extracts as it does): another user's 0700 .ssh was
  // read through a directory approved for the call.
  const ROOT = process.getuid?.() === 0
  test.skipIf(!LANDLOCK || !ROOT)(`run by root, another user's credential stores stay out of a directory approved for the call${needs}`, async () => {
    const other = mkdtempSync("/home/core-other-")
    try {
      mkdirSync(join(other, ".ssh"), { mode: 0o700 })
      writeFileSync(join(other, ".ssh", "id_ed25519"), "OTHER-USERS-KEY\n", { mode: 0o600 })
      writeFileSync(join(other, "notes.txt"), "their notes\n")
      const location = tempDir("core-loc-")
      const result = await run(`cat ${other}/notes.txt; cat ${other}/.ssh/id_ed25519`, location, [other], shell, {
        PATH: process.env.PATH,
        HOME: tempDir("core-user-"),
      })
      expect(result.stdout.text).toBe("their notes\n")
      expect(result.stderr.text).toContain("Permission denied")
    } finally {
      rmSync(other, { recursive: true, force: true })
    }
  })

  test.skipIf(!LANDLOCK)(`$CORE_HOME and $CORE_DATA_DIR are neither readable nor writable${needs}`, async () => {
    const location = tempDir("core-loc-")
    const result = await run(
      // Appending a forged record to the store's journal would make a call replay as whatever it says.
      `cat ${data}/core.db; ls ${home}; echo x > ${data}/core.db; echo y > ${home}/core.json; ` +
        `echo '{"e":"new"}' >> ${data}/core.db.journal; echo done`,
      location,
    )
    expect(result.stdout.text).toBe("done\n")
    expect(result.stderr.text.match(REFUSED)?.length).toBe(5)
    expect(readFileSync(join(data, "core.db"), "utf8")).toBe("secret")
    expect(readFileSync(join(data, "core.db.journal"), "utf8")).toBe("journal\n")
    expect(readFileSync(join(home, "core.json"), "utf8")).toBe("{}")
  })

  test.skipIf(!LANDLOCK)(`the folder of the sidecars' ports is neither readable nor writable, even approved for the call${needs}`, async () => {
    const folder = SidecarPorts.folder()!
    mkdirSync(folder, { recursive: true, mode: 0o700 })
    const entry = join(folder, `${process.pid}-3`)
    writeFileSync(entry, "")
    try {
      const location = tempDir("core-loc-")
      const result = await run(`ls ${folder}; rm -f ${entry}; touch ${folder}/${process.pid}-4; echo done`, location, [dirname(folder)])
      expect(result.stdout.text).toBe("done\n")
      expect(result.stderr.text.match(REFUSED)?.length).toBe(3)
      expect(existsSync(entry)).toBe(true)
      expect(existsSync(join(folder, `${process.pid}-4`))).toBe(false)
    } finally {
      rmSync(entry, { force: true })
    }
  })

  test.skipIf(!LANDLOCK)(`a data directory inside the Location stays hidden while the rest of the Location is usable${needs}`, async () => {
    const location = tempDir("core-loc-")
    const inner = join(location, "state", "data")
    mkdirSync(inner, { recursive: true })
    mkdirSync(join(location, "src"))
    writeFileSync(join(inner, "core.db"), "secret")
    writeFileSync(join(location, "state", "notes.txt"), "notes")
    process.env.CORE_DATA_DIR = inner
    const result = await run(
      "cat state/data/core.db; echo x > state/data/new; cat state/notes.txt; echo ok > src/a.txt; cat src/a.txt",
      location,
    )
    expect(result.stdout.text).toBe("notesok\n")
    expect(result.stderr.text).toContain("state/data/core.db: Permission denied")
    expect(result.stderr.text).toContain(`state/data/new: ${REFUSED_WRITE}`)
    expect(existsSync(join(inner, "new"))).toBe(false)
  })

  test.skipIf(!LANDLOCK)(`a data directory inside a system directory stays hidden, the rest of that directory readable${needs}`, async () => {
    // The rules every call shares (all of /var readable) are made ahead of the call: they must not be used here.
    const inner = mkdtempSync(join("/var/tmp", "core-data-"))
    try {
      writeFileSync(join(inner, "core.db"), "secret")
      process.env.CORE_DATA_DIR = inner
      const result = await run(`cat ${inner}/core.db; ls /var/lib >/dev/null && echo var-ok`, tempDir("core-loc-"))
      expect(result.stdout.text).toBe("var-ok\n")
      expect(result.stderr.text).toContain("Permission denied")
    } finally {
      rmSync(inner, { recursive: true, force: true })
    }
  })

  test.skipIf(!LANDLOCK)(`a temp directory under which core's directories lie is replaced by one of the call's own${needs}`, async () => {
    const location = tempDir("core-loc-")
    // The test's data directory lies under the system temp directory, so the command gets a TMPDIR of its own.
    const result = await run('echo "$TMPDIR"; echo t > "$TMPDIR/t"; cat "$TMPDIR/t"', location)
    const [own, content] = result.stdout.text.split("\n")
    expect(own).not.toBe(tmpdir())
    expect(own!.startsWith(join(tmpdir(), "core-call-"))).toBe(true)
    expect(content).toBe("t")
    // Removed with the call.
    expect(existsSync(own!)).toBe(false)
  })

  test.skipIf(!LANDLOCK)(`a command cannot signal core or read its memory${needs}`, async () => {
    const location = tempDir("core-loc-")
    const core = process.pid
    const result = await run(
      `kill -0 ${core} && echo signalled; dd if=/proc/${core}/mem bs=1 count=1 skip=4194304 2>/dev/null && echo mem-read; echo done`,
      location,
    )
    expect(result.stdout.text).toBe("done\n")
  })

  test.skipIf(!LANDLOCK)(`a PATH directory is granted itself, not its parent, nor a link's target planted where commands write${needs}`, async () => {
    const location = tempDir("core-loc-")
    const tool = tempDir("core-tool-")
    writeFileSync(join(tool, "credentials.toml"), "token")
    script(join(tool, "bin", "own"), join(tool, "bin", "own"))
    // A link the command itself could have planted in a PATH directory inside the Location.
    const elsewhere = tempDir("core-elsewhere-")
    script(join(elsewhere, "bin", "planted"), join(elsewhere, "data.txt"))
    writeFileSync(join(elsewhere, "data.txt"), "elsewhere")
    mkdirSync(join(location, "bin"))
    symlinkSync(join(elsewhere, "bin", "planted"), join(location, "bin", "planted"))
    const PATH = `${join(tool, "bin")}:${join(location, "bin")}:${process.env.PATH}`
    const result = await run(`own >/dev/null && echo own-ok; cat ${tool}/credentials.toml; planted; echo done`, location, [], shell, { PATH })
    expect(result.stdout.text).toBe("own-ok\ndone\n")
    expect(result.stderr.text).toContain(`${tool}/credentials.toml: Permission denied`)
    // The same link in a PATH directory no command can write brings the install it points into.
    const trusted = tempDir("core-bin-")
    symlinkSync(join(elsewhere, "bin", "planted"), join(trusted, "planted"))
    const linked = await run("planted", location, [], shell, { PATH: `${trusted}:${process.env.PATH}` })
    expect(linked.stdout.text).toBe("elsewhere")
  })

  // A line writing `~/.cargo/bin/x` had that folder approved for the call (external_directory allowed): the command
  // could put any program there, found before the user's own the next time they typed its name.
  test.skipIf(!LANDLOCK)(`a directory approved for the call inside a PATH folder or a toolchain's is not writable; one beside them is${needs}`, async () => {
    const location = tempDir("core-loc-")
    const user = tempDir("core-user-")
    const bin = join(user, ".cargo", "bin")
    const rustup = join(user, ".rustup", "toolchains")
    const tools = tempDir("core-tools-")
    const plain = join(user, "notes")
    for (const folder of [bin, rustup, join(tools, "sub"), plain]) mkdirSync(folder, { recursive: true })
    const env = { PATH: `${bin}:${tools}:${process.env.PATH}`, HOME: user }
    const written = (folder: string) => existsSync(join(folder, "planted"))
    for (const folder of [bin, rustup, tools, join(tools, "sub")]) {
      const result = await run(`echo x > ${folder}/planted`, location, [folder], shell, env)
      expect([folder, result.exitCode !== 0, written(folder)]).toEqual([folder, true, false])
      expect(result.stderr.text).toContain(`${folder}/planted: ${REFUSED_WRITE}`)
    }
    const result = await run(`echo x > ${plain}/planted`, location, [plain], shell, env)
    expect([result.exitCode, written(plain)]).toEqual([0, true])
  })

  // PATH named ~/.dotnet/tools, not made yet: a command with ~/.dotnet approved made it and put `git` there.
  test.skipIf(!LANDLOCK)(`a PATH folder not made yet cannot be made by a command, in a directory approved for the call${needs}`, async () => {
    const location = tempDir("core-loc-")
    const user = tempDir("core-user-")
    const dotnet = join(user, ".dotnet")
    mkdirSync(dotnet)
    const env = { PATH: `${join(dotnet, "tools")}:${process.env.PATH}`, HOME: user }
    const result = await run(`mkdir -p ${dotnet}/tools && echo x > ${dotnet}/tools/git`, location, [dotnet], shell, env)
    expect(result.exitCode).not.toBe(0)
    expect(existsSync(join(dotnet, "tools"))).toBe(false)
  })

  // The same outside the home: PATH named /opt/app/bin, not made yet, and a command with /opt/app approved made it.
  // Only the folder that would hold it is kept: npm puts X/node_modules/.bin on PATH for every folder X above where
  // it runs, and /tmp or ~/projects kept for that broke every directory approved in them.
  test.skipIf(!LANDLOCK)(`a PATH folder not made yet outside the home cannot be made by a command either${needs}`, async () => {
    const location = tempDir("core-loc-")
    const opt = mkdtempSync("/var/tmp/core-opt-")
    const projects = mkdtempSync("/var/tmp/core-projects-")
    try {
      mkdirSync(join(projects, "lib"))
      const env = { PATH: `${join(opt, "bin")}:${join(projects, "node_modules/.bin")}:${process.env.PATH}`, HOME: tempDir("core-user-") }
      const result = await run(`mkdir -p ${opt}/bin && echo x > ${opt}/bin/git`, location, [opt], shell, env)
      expect(result.exitCode).not.toBe(0)
      expect(existsSync(join(opt, "bin"))).toBe(false)
      const beside = await run(`echo x > ${projects}/lib/a.txt`, location, [join(projects, "lib")], shell, env)
      expect([beside.exitCode, readFileSync(join(projects, "lib/a.txt"), "utf8")]).toEqual([0, "x\n"])
    } finally {
      rmSync(opt, { recursive: true, force: true })
      rmSync(projects, { recursive: true, force: true })
    }
  })

  // The temp directory is granted whole where it holds no secret; a BASH_ENV kept there (which every bash sources)
  // was changed by a command that did not show it, though the write tool refused it. Now it is read-only, and, as a
  // secret there does, it keeps the temp directory from being granted whole: the command gets one of its own.
  test.skipIf(!LANDLOCK)(`in a temp directory granted whole, what the environment names stays unchanged${needs}`, async () => {
    const outside = mkdtempSync("/var/tmp/core-temp-whole-")
    process.env.CORE_HOME = join(outside, "core-home")
    process.env.CORE_DATA_DIR = join(outside, "core-data")
    mkdirSync(process.env.CORE_HOME)
    mkdirSync(process.env.CORE_DATA_DIR)
    const user = join(outside, "user")
    mkdirSync(user)
    const kept = tempDir("core-env-kept-")
    writeFileSync(join(kept, "bashenv"), "# mine\n")
    try {
      const env = { PATH: process.env.PATH, HOME: user, BASH_ENV: join(kept, "bashenv") }
      const command = `/usr/bin/python3 -c "open('${kept}/bashenv', 'a').write('touch /tmp/pwned')" ; echo mine > "$TMPDIR/mine.txt" && cat "$TMPDIR/mine.txt"`
      const result = await run(command, tempDir("core-loc-"), [], shell, env)
      expect(readFileSync(join(kept, "bashenv"), "utf8")).toBe("# mine\n")
      // Bash still sources it (read, not written), and the command gets a temp directory of its own to write in.
      expect(result.stderr.text).toContain(REFUSED_WRITE)
      expect(result.stderr.text).not.toContain("bashenv: Permission denied\n/")
      expect([result.exitCode, result.stdout.text]).toEqual([0, "mine\n"])
    } finally {
      rmSync(outside, { recursive: true, force: true })
    }
  })

  // core.json granted `out` (in the Location) for writing; a command made `out` a link to ~/.local/bin, and the next
  // command's grant followed it there.
  test.skipIf(!LANDLOCK)(`a shell.allowWrite grant in the Location that a link leads elsewhere grants nothing${needs}`, async () => {
    const location = tempDir("core-loc-")
    const user = tempDir("core-user-")
    const bin = join(user, "elsewhere")
    mkdirSync(bin)
    mkdirSync(join(location, "kept"))
    symlinkSync(bin, join(location, "out"))
    const granting = Shell.make({ allowWrite: ["out", "kept"] }, { records: tempDir("core-runs-") })
    const granted = await run(`echo x > ${bin}/planted; echo y > ${location}/kept/ok`, location, [], granting, { PATH: process.env.PATH, HOME: user })
    expect(granted.stderr.text).toContain(`${bin}/planted: ${REFUSED_WRITE}`)
    expect(existsSync(join(bin, "planted"))).toBe(false)
    expect(readFileSync(join(location, "kept/ok"), "utf8")).toBe("y\n")
  })

  // The same outside the Location and the temp directory: a grant a command replaced with a link (its parent approved
  // for the call) reached ~/.local/bin, or ~/.ssh.
  test.skipIf(!LANDLOCK)(`a shell.allowWrite grant a link leads into a PATH folder or a credential store grants nothing there${needs}`, async () => {
    const location = tempDir("core-loc-")
    const user = tempDir("core-user-")
    for (const folder of [".local/bin", ".ssh"]) mkdirSync(join(user, folder), { recursive: true })
    const shared = mkdtempSync("/var/tmp/core-shared-")
    try {
      mkdirSync(join(shared, "plain"))
      symlinkSync(join(user, ".local/bin"), join(shared, "bin"))
      symlinkSync(join(user, ".ssh"), join(shared, "keys"))
      const granting = Shell.make({ allowWrite: [join(shared, "plain"), join(shared, "bin"), join(shared, "keys")] }, { records: tempDir("core-runs-") })
      const env = { PATH: `${join(user, ".local/bin")}:${process.env.PATH}`, HOME: user }
      const result = await run(`echo x > ${shared}/bin/git; echo y > ${shared}/keys/authorized_keys; echo z > ${shared}/plain/ok`, location, [], granting, env)
      expect(result.stderr.text).toContain(`${shared}/bin/git: ${REFUSED_WRITE}`)
      expect(result.stderr.text).toContain(`${shared}/keys/authorized_keys: ${REFUSED_WRITE}`)
      expect([existsSync(join(user, ".local/bin/git")), existsSync(join(user, ".ssh/authorized_keys"))]).toEqual([false, false])
      expect(readFileSync(join(shared, "plain/ok"), "utf8")).toBe("z\n")
    } finally {
      rmSync(shared, { recursive: true, force: true })
    }
  })

  test.skipIf(!LANDLOCK)(`core.json's grants: a deny inside the Location hides it, allowRead and allowWrite reach outside${needs}`, async () => {
    const location = tempDir("core-loc-")
    const readable = tempDir("core-readable-")
    const writable = tempDir("core-writable-")
    writeFileSync(join(readable, "r.txt"), "r")
    mkdirSync(join(location, "private"))
    mkdirSync(join(location, "src"))
    writeFileSync(join(location, "private", "p.txt"), "p")
    const granting = Shell.make(
      { allowRead: [readable], allowWrite: [writable], denyRead: ["private"] },
      { records: tempDir("core-runs-") },
    )
    const result = await run(
      `cat private/p.txt; echo x > private/new; cat ${readable}/r.txt; echo y > ${readable}/no; echo w > ${writable}/w.txt; echo in > src/in.txt`,
      location,
      [],
      granting,
    )
    expect(result.stdout.text).toBe("r")
    expect(result.refused).toEqual(["private/p.txt", "private/new"])
    // The denied folder is covered by an empty read-only one where the supervisor can mount (root here, or a user
    // namespace); where it cannot, it is carved out of the grants and refused.
    if (Supervised.canMount()) {
      expect(result.stderr.text).toContain("private/p.txt: No such file or directory")
      expect(result.stderr.text).toContain("private/new: Read-only file system")
      expect(result.stderr.text).toContain(`${readable}/no: Read-only file system`)
      expect(result.stderr.text).not.toContain("Permission denied")
    } else expect(result.stderr.text.match(/Permission denied/g)?.length).toBe(3)
    expect(existsSync(join(location, "private", "new"))).toBe(false)
    expect(existsSync(join(readable, "no"))).toBe(false)
    expect(readFileSync(join(writable, "w.txt"), "utf8")).toBe("w\n")
    // The rest of the Location stays usable (below its top, where the hidden directory sits: see docs/shell.md).
    expect(readFileSync(join(location, "src", "in.txt"), "utf8")).toBe("in\n")
    // Covered rather than carved out, the hidden directory's folder still takes new files.
    if (Supervised.canMount()) {
      const top = await run("echo top > top.txt && mkdir made", location, [], granting)
      expect(top.exitCode).toBe(0)
      expect(readFileSync(join(location, "top.txt"), "utf8")).toBe("top\n")
    }
  })

  // A command naming /proc/self had core's own /proc/<pid> approved, and its walk for what the rules deny stopped at
  // a folder there it could not list (as a user who is not root): the command did not start.
  test("the kernel's trees a command names (/proc/self) are not walked for what the rules deny", () => {
    const location = realpathSync(tempDir("core-loc-"))
    writeFileSync(join(location, "yarn.lock"), "kept")
    const asked: Array<string> = []
    const denied = (real: string) => {
      asked.push(real)
      return real.endsWith(".lock")
    }
    const prepared = Sandbox.prepare(
      { location, approved: ["/proc/self", "/sys/kernel"], readDenied: denied, editDenied: denied },
      { PATH: "/usr/bin:/bin", HOME: tempDir("core-user-") },
      {},
      true,
    )
    try {
      expect(prepared.uncovered).toBeUndefined()
      expect(asked.filter((path) => /^\/(proc|sys)\//.test(path))).toEqual([])
      expect(asked).toContain(join(location, "yarn.lock"))
    } finally {
      prepared.cleanup()
    }
  })

  test(`the paths a result names as refused are only those the sandbox keeps out, as the output spelled them`, () => {
    const location = tempDir("core-loc-")
    const home = tempDir("core-user-")
    mkdirSync(join(home, ".ssh"))
    writeFileSync(join(home, ".ssh", "id_ed25519"), "key")
    const prepared = Sandbox.prepare({ location, approved: [] }, { PATH: "/usr/bin:/bin", HOME: home })
    try {
      mkdirSync(join(location, "src"))
      const refused = prepared.refused(
        [
          `cat: ${home}/.ssh/id_ed25519: Permission denied`,
          `PermissionError: [Errno 13] Permission denied: '${home}/.aws/credentials'`,
          `Error: EACCES: permission denied, open '/srv/data/x.json'`,
          "cat: /etc/passwd: Permission denied",
          "cat: ../../outside/notes.txt: Permission denied",
          "cat: src/a.txt: Permission denied",
          "bash: line 1: notes: Permission denied",
          `cat: ${location}/a.txt: Permission denied`,
          `ls: cannot open directory '${data}': Permission denied`,
          "/opt/elsewhere/file is fine",
        ].join("\n"),
        join(location, "src"),
      )
      expect(refused).toEqual([`${home}/.ssh/id_ed25519`, `${home}/.aws/credentials`, "/srv/data/x.json", "../../outside/notes.txt"])
      expect(prepared.refused("all good\n", location)).toEqual([])
      // A URL's rest is no path (it was named as `//example.com/a/b`); a socket's path beside it is.
      expect(
        prepared.refused(
          [
            "error: open https://example.com/a/b: permission denied",
            'Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.50/containers/json": dial unix /srv/run/docker.sock: connect: permission denied',
            "cannot open file:///srv/files/a.txt: permission denied",
          ].join("\n"),
          location,
        ),
      ).toEqual(["/srv/run/docker.sock", "/srv/files/a.txt"])
      expect(prepared.env.GOCACHE!.startsWith(home)).toBe(false)
    } finally {
      prepared.cleanup()
    }
  })

  // A command prints the lines read for refused paths, so they are read in one pass: the pattern before read to the
  // line's end from every ‘ (a quote that does not end a quoted path). No test timeout stops synchronous code, so
  // the case runs in a child process killed after 20 s.
  test(`a long hostile refusal line names its paths at once, and rightly`, async () => {
    expect(
      await inChild(`
        import { Sandbox } from ${JSON.stringify(join(import.meta.dir, "../../src/shell/sandbox.ts"))}
        const prepared = Sandbox.prepare({ location: ${JSON.stringify(tempDir("core-loc-"))}, approved: [] }, { PATH: "/usr/bin:/bin", HOME: ${JSON.stringify(tempDir("core-user-"))} })
        try {
          console.log(JSON.stringify([
            prepared.refused("x: Permission denied '/srv/quoted' =/srv/bare " + "‘/x".repeat(300_000) + "\`", "/"),
            prepared.refused("x: Permission denied " + "‘/a’ ".repeat(100_000), "/").length,
            // A path of 300,000 segments: longer than any the kernel takes, so no refused file; resolving it
            // segment by segment overflowed the stack.
            prepared.refused("cat: " + "/a".repeat(300_000) + ": Permission denied\\ncat: /srv/kept: Permission denied", "/"),
          ]))
        } finally {
          prepared.cleanup()
        }
        `),
    ).toEqual([["/srv/quoted", "/srv/bare"], 1, ["/srv/kept"]])
  }, 30_000)

  test.skipIf(!LANDLOCK)(`a home inside a system directory keeps its credential stores out, the rest of that directory readable${needs}`, async () => {
    const home = mkdtempSync(join("/var/tmp", "core-user-"))
    try {
      mkdirSync(join(home, ".ssh"))
      writeFileSync(join(home, ".ssh", "id_ed25519"), "key")
      const result = await run(`cat ~/.ssh/id_ed25519; ls /var/lib >/dev/null && echo var-ok`, tempDir("core-loc-"), [], shell, {
        PATH: process.env.PATH,
        HOME: home,
      })
      expect(result.stdout.text).toBe("var-ok\n")
      expect(result.refused).toEqual([])
      expect(result.stores).toEqual([join(home, ".ssh", "id_ed25519")])
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })

  test.skipIf(!LANDLOCK)(`of the home, git's files are read, also where ~/.gitconfig names them, and nothing else${needs}`, async () => {
    const home = tempDir("core-user-")
    writeFileSync(join(home, ".gitconfig"), "[core]\n\texcludesFile = ~/.my-ignore\n")
    writeFileSync(join(home, ".my-ignore"), "*.swp\n")
    writeFileSync(join(home, "notes.txt"), "notes")
    const result = await run("cat ~/.my-ignore; cat ~/notes.txt", tempDir("core-loc-"), [], shell, { PATH: process.env.PATH, HOME: home })
    expect(result.stdout.text).toBe("*.swp\n")
    expect(result.refused).toEqual([join(home, "notes.txt")])
  })

  test(`a Location's cache directory made by someone else first is not used: the call gets one of its own`, () => {
    const location = tempDir("core-loc-")
    const planted = Home.cacheOf(realpathSync(data), location)
    mkdirSync(planted, { recursive: true, mode: 0o777 })
    chmodSync(planted, 0o777)
    try {
      const prepared = Sandbox.prepare({ location, approved: [] }, { PATH: "/usr/bin:/bin" })
      const own = prepared.env.XDG_CACHE_HOME!
      expect(own.startsWith(planted)).toBe(false)
      expect(prepared.grants.write.some((path) => path.startsWith(planted))).toBe(false)
      prepared.cleanup()
      expect(existsSync(own)).toBe(false)
    } finally {
      rmSync(planted, { recursive: true, force: true })
    }
  })

  test(`with the sandbox off, commands run on permission alone`, async () => {
    const off = Shell.make({ sandbox: "off" }, { records: tempDir("core-runs-") })
    expect(off.sandbox).toMatchObject({ mode: "off", active: false })
    expect(off.sandbox.notice).toContain("off")
    const location = tempDir("core-loc-")
    const outside = tempDir("core-outside-")
    await run(`echo out > ${outside}/out.txt`, location, [], off)
    expect(readFileSync(join(outside, "out.txt"), "utf8")).toBe("out\n")
  })

  test("on a kernel without Landlock, auto runs commands unsandboxed and says so; required refuses them", async () => {
    const auto = Shell.make({}, { records: tempDir("core-runs-"), abi: 0 })
    expect(auto.sandbox).toMatchObject({ mode: "auto", abi: 0, active: false })
    expect(auto.sandbox.notice).toBe(
      "This kernel has no Landlock: commands run without the OS sandbox, on per-command permission alone.",
    )
    const location = tempDir("core-loc-")
    const outside = tempDir("core-outside-")
    await run(`echo out > ${outside}/out.txt`, location, [], auto)
    expect(readFileSync(join(outside, "out.txt"), "utf8")).toBe("out\n")

    const required = Shell.make({ sandbox: "required" }, { records: tempDir("core-runs-"), abi: 0 })
    expect(required.sandbox.notice).toContain("required")
    const refused = await Effect.runPromise(
      Effect.flip(required.run({ argv: ["sh", "-c", `echo out > ${outside}/refused.txt`], cwd: location, sandbox: { location, approved: [] } })),
    )
    expect(refused).toBeInstanceOf(Shell.SpawnError)
    expect((refused as Shell.SpawnError).code).toBe("ENOSANDBOX")
    expect((refused as Shell.SpawnError).message).toContain(required.sandbox.notice!)
    expect(existsSync(join(outside, "refused.txt"))).toBe(false)
  })

  test("the setting says whether the kernel has Landlock", () => {
    const auto = Shell.sandboxOf("auto")
    expect(auto.active).toBe(LANDLOCK)
    expect(auto.notice === undefined).toBe(LANDLOCK)
    const required = Shell.sandboxOf("required")
    expect(required.notice === undefined).toBe(LANDLOCK)
  })
})

// A directory core hides (its data directory) inside a granted one makes the grant a walk of that one's entries. A
// link among them was granted as its target: /dev/stderr names the pipe core writes to, which no rule can be made
// for, and every sandboxed command of a data directory under /dev (a tmpfs in /dev/shm) failed to start.
describe("files the command may read but not write", () => {
  test.skipIf(!LANDLOCK || !Supervised.canMount())(`keep their mode, owner, times and attributes: a program is not made set-user-ID, core's data directory is not closed to core${needs}`, async () => {
    const location = tempDir("core-loc-")
    const outside = tempDir("core-outside-")
    const program = join(outside, "program")
    writeFileSync(program, "#!/bin/sh\n", { mode: 0o755 })
    const before = [statSync(program), statSync(data)]
    const result = await run(
      [
        `chmod 4755 ${program}; echo "setuid $?"`,
        `chmod 000 ${data}; echo "data $?"`,
        `chown 65534 ${program} 2>/dev/null; echo "chown $?"`,
        `touch -m -d 2001-01-01 ${program}; echo "touch $?"`,
        `python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.planted", b"1")' ${program} 2>/dev/null; echo "xattr $?"`,
        `echo mine > own && chmod 700 own && touch -d 2001-01-01 own; echo "own $?"`,
      ].join("\n"),
      location,
    )
    expect(result.stdout.text).toBe("setuid 1\ndata 1\nchown 1\ntouch 1\nxattr 1\nown 0\n")
    expect(result.stderr.text).toContain("Read-only file system")
    const after = [statSync(program), statSync(data)]
    for (const [index, stat] of after.entries()) {
      expect(stat.mode).toBe(before[index]!.mode)
      expect(stat.uid).toBe(before[index]!.uid)
    }
    // (The data directory's own times are core's: it writes there as the command runs.)
    expect(after[0]!.mtimeMs).toBe(before[0]!.mtimeMs)
    // Where it may write, all of that is its own to do.
    expect(statSync(join(location, "own")).mode & 0o7777).toBe(0o700)
  })
})

describe("devices", () => {
  /** Devices of the host a process run by root opens, where they exist: disks, consoles and their screens, the kernel's log, fuse. */
  const HOST_DEVICES = ["/dev/loop-control", "/dev/loop0", "/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/tty0", "/dev/tty1", "/dev/console", "/dev/vcs", "/dev/kmsg", "/dev/fuse", "/dev/mem"]
  const opens = (path: string) => {
    try {
      closeSync(openSync(path, constants.O_RDONLY | constants.O_NONBLOCK))
      return true
    } catch {
      return false
    }
  }

  test.skipIf(!LANDLOCK || process.getuid?.() !== 0)(`a command run by root opens none of the host's disks, consoles or logs; /dev/null, /dev/urandom and terminals of its own work${needs}`, async () => {
    const location = tempDir("core-loc-")
    const reachable = HOST_DEVICES.filter(opens)
    // Some of them open here, outside the sandbox: the command is refused what core itself reaches.
    expect(reachable.length).toBeGreaterThan(0)
    const result = await run(
      [
        ...reachable.map((path) => `if : < ${path}; then echo "opened ${path}"; fi`),
        "echo x > /dev/null && head -c 3 /dev/urandom | wc -c && head -c 2 /dev/zero | wc -c",
        `python3 -c 'import pty, os; main, other = pty.openpty(); os.write(other, b"typed\\n"); print(os.read(main, 16))'`,
      ].join("\n"),
      location,
    )
    expect(result.stdout.text).not.toContain("opened")
    expect(result.stdout.text).toContain("3\n2\n")
    expect(result.stdout.text).toContain("typed")
  })
})

describe("grants around a hidden directory", () => {
  test("leave out the links beside it: their targets are granted or not by where they are", () => {
    const root = realpathSync(tempDir("core-grants-"))
    mkdirSync(join(root, "hidden"))
    mkdirSync(join(root, "shown"))
    writeFileSync(join(root, "file"), "x")
    symlinkSync("/proc/self/fd/2", join(root, "stderr"))
    symlinkSync(join(root, "hidden"), join(root, "to-hidden"))
    expect(Landlock.granted([root], [join(root, "hidden")]).sort()).toEqual([join(root, "file"), join(root, "shown")])
  })

  test(`a sandboxed command runs with the data directory under /dev/shm${needs}`, async () => {
    if (!LANDLOCK || !existsSync("/dev/shm")) return
    const data = mkdtempSync("/dev/shm/core-data-")
    try {
      const location = realpathSync(tempDir("core-loc-"))
      const child = Bun.spawn([process.execPath, join(import.meta.dir, "../../src/cli/main.ts"), "exec", "bash", "--input", JSON.stringify({ command: "echo hi there" }), "--location", location], {
        cwd: location,
        env: { ...process.env, CORE_DATA_DIR: data, CORE_HOME: tempDir("core-home-"), CORE_EXEC_FORWARD: "0" },
        stdout: "pipe",
        stderr: "pipe",
      })
      const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
      expect({ code, failed: stderr.includes("Could not apply the sandbox") }).toEqual({ code: 0, failed: false })
      expect(JSON.parse(stdout)).toMatchObject({ status: "success" })
      expect(JSON.parse(stdout).content[0].text).toContain("hi there")
    } finally {
      rmSync(data, { recursive: true, force: true })
    }
  }, 30_000)
})
