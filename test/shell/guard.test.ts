// Core's own configuration in a Location against code a command runs, with real processes and the real kernel:
// existing core.json, tools/, plugins/ and .core/ are read-only to the command (node, bun, python and the shell all
// fail to write them, rename or remove them); entries that did not exist and that the command created are removed
// once it has ended, named in the result and kept for a person outside the Location; core.json changed where no
// mount protected it is put back; and while a command runs, its Location counts as busy (what hot reload waits
// for). The mount namespace needs CAP_SYS_ADMIN or user namespaces; where neither is available those tests are
// skipped and say so.

import { describe, expect, test } from "bun:test"
import { chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import { Effect, Fiber } from "effect"
import { Git } from "../../src/permission/git"
import { Guard } from "../../src/shell/guard"
import { Listing } from "../../src/shell/listing"
import { Repositories } from "../../src/shell/repositories"
import { Project } from "../../src/store/project"
import { Shell } from "../../src/shell/shell"
import { Watched } from "../../src/shell/watched"
import { tempDir } from "../support/temp"

const keeping = tempDir("core-undone-")
const shell = Shell.make({}, { records: tempDir("core-runs-"), keeping })

const run = (command: string, location: string, producer = shell, others: ReadonlyArray<string> = []) =>
  Effect.runPromise(
    producer.run({
      argv: [producer.shell, "-c", command],
      cwd: location,
      env: { PATH: process.env.PATH, HOME: location },
      sandbox: { location, approved: [], others },
    }),
  )

/** Whether this machine can make the command's mount namespace: probed with a real command. */
const probe = async (): Promise<boolean> => {
  const location = tempDir("core-probe-")
  writeFileSync(join(location, "core.json"), "{}")
  const result = await run("echo x > core.json", location)
  return result.stderr.text.includes("Read-only file system")
}
const MOUNTS = await probe()
const needs = MOUNTS ? "" : " (SKIPPED: no mount namespace for commands here)"

/** Run by root with setpriv, unshare and mount at hand, a test can be core run by another user (nobody). */
const NOBODY = 65534
const TOOLS = {
  setpriv: Bun.which("setpriv"),
  unshare: Bun.which("unshare"),
  mount: Bun.which("mount"),
  sh: Bun.which("sh"),
  false: Bun.which("false"),
}
const AS_NOBODY = process.getuid?.() === 0 && Object.values(TOOLS).every((path) => path !== null)
const asNobody = AS_NOBODY ? "" : " (SKIPPED: needs root, setpriv, unshare and mount to run core as another user)"

const REPOSITORY = join(import.meta.dir, "../..")

/**
 * `argv` run as nobody, where this repository and bun are reachable: a developer's clone sits in a home nobody may
 * enter, so both are bound, in a mount namespace of the child's own, into `root` (which nobody owns). `argv` names
 * them as `reached.bun` and under `reached.repository`. `missing` programs are covered there by `false`, as a system
 * without them would have them fail.
 */
const nobody = (
  root: string,
  argv: (reached: { readonly bun: string; readonly repository: string }) => ReadonlyArray<string>,
  missing: ReadonlyArray<string> = [],
) => {
  const reach = join(root, "reach")
  mkdirSync(join(reach, "repository"), { recursive: true })
  writeFileSync(join(reach, "bun"), "")
  const reached = { bun: join(reach, "bun"), repository: join(reach, "repository") }
  const cover = missing.map((program) => `"$1" --bind ${JSON.stringify(TOOLS.false!)} ${JSON.stringify(program)} && `).join("")
  const bind = `${cover}"$1" --bind "$2" "$3" && "$1" --bind "$4" "$5" && shift 5 && exec "$@"`
  return [
    TOOLS.unshare!, "--mount", "--propagation", "private", "--", TOOLS.sh!, "-c", bind, "sh", TOOLS.mount!,
    REPOSITORY, reached.repository, process.execPath, reached.bun,
    TOOLS.setpriv!, `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", ...argv(reached),
  ]
}

/** Resolves once `path` exists (a command's sign that it has reached a point); the test's timeout bounds it. */
const until = async (path: string): Promise<void> => {
  while (!existsSync(path)) await Bun.sleep(5)
}

/** A Location with every protected entry present. */
const configured = (): string => {
  const location = tempDir("core-loc-")
  writeFileSync(join(location, "core.json"), '{ "permission": { "bash": "ask" } }')
  for (const entry of ["tools", "plugins", ".core"]) {
    mkdirSync(join(location, entry))
    writeFileSync(join(location, entry, "kept.ts"), "kept")
  }
  return location
}

const unchanged = (location: string) => {
  expect(readFileSync(join(location, "core.json"), "utf8")).toBe('{ "permission": { "bash": "ask" } }')
  for (const entry of ["tools", "plugins", ".core"]) expect(readdirSync(join(location, entry))).toEqual(["kept.ts"])
}

const has = (program: string) => Bun.which(program) !== null

/**
 * A git repository outside the temp directory (which is guarded so already: only a grant makes it a place a
 * command may write), its config as `git init` wrote it, and a Location two folders down in it.
 */
const grantedRepository = () => {
  const root = tempDir("core-repo-", "/var/tmp")
  Bun.spawnSync(["git", "init", "-q", root])
  const location = join(root, "services/api")
  mkdirSync(location, { recursive: true })
  writeFileSync(join(location, "core.json"), "{}")
  return { root, location, original: readFileSync(join(root, ".git/config"), "utf8") }
}

describe("core's configuration in the Location, against what a command runs", () => {
  test.skipIf(!MOUNTS)(`node, bun and python cannot write core.json, tools/, plugins/ or .core/${needs}`, { timeout: 30_000 }, async () => {
    const location = configured()
    const targets = JSON.stringify(["core.json", "tools/x.ts", "plugins/x.ts", ".core/x", "tools/kept.ts"])
    const script = `for (const t of ${targets}) { try { require("fs").writeFileSync(t, "{}"); console.log("wrote " + t) } catch (e) { console.log(e.code) } }`
    const lines = [`node -e '${script}'`, `bun -e '${script}'`]
    if (has("python3")) {
      lines.push(`python3 -c 'import errno\nfor t in ${targets}:\n  try: open(t, "w").write("{}"); print("wrote " + t)\n  except OSError as e: print(errno.errorcode[e.errno])'`)
    }
    const result = await run(lines.join("\n"), location)
    expect(result.stdout.text.trim().split("\n")).toEqual(lines.flatMap(() => Array(5).fill("EROFS")))
    unchanged(location)
    expect(result.undone).toEqual([])
  })

  test.skipIf(!MOUNTS)(`the entries cannot be renamed, removed or unmounted, while the rest of the Location is writable${needs}`, async () => {
    const location = configured()
    const result = await run(
      "mv core.json old.json; mv tools old-tools; rm -rf plugins .core; umount tools; echo ok > a.txt; mkdir src && echo ok > src/b.ts",
      location,
    )
    unchanged(location)
    expect(readFileSync(join(location, "a.txt"), "utf8")).toBe("ok\n")
    expect(readFileSync(join(location, "src/b.ts"), "utf8")).toBe("ok\n")
    expect(result.stderr.text).toContain("busy")
    expect(result.undone).toEqual([])
  })

  test("entries the command created where none existed are removed when it ends, and named", async () => {
    const location = tempDir("core-loc-")
    const result = await run(
      'echo "{}" > core.json; mkdir tools plugins .core; echo t > tools/x.ts; echo p > plugins/x.ts; echo c > .core/x; echo kept > a.txt',
      location,
    )
    expect(result.exitCode).toBe(0)
    for (const entry of ["core.json", "tools", "plugins", ".core"]) expect(existsSync(join(location, entry))).toBe(false)
    expect([...result.undone].sort()).toEqual(["core.json", "tools", "plugins", ".core"].map((entry) => join(location, entry)).sort())
    expect(readFileSync(join(location, "a.txt"), "utf8")).toBe("kept\n")
    // Nothing is lost: what the command left is kept for a person, out of the Location.
    expect(result.undoneKeptIn?.startsWith(keeping)).toBe(true)
    expect(readFileSync(join(result.undoneKeptIn!, "tools/x.ts"), "utf8")).toBe("t\n")
    expect(readFileSync(join(result.undoneKeptIn!, "core.json"), "utf8")).toBe("{}\n")
  })

  // A Location in a folder a command may write (the temp directory, a repository granted by shell.allowWrite): its
  // own entries are mounts no command can move, but the Location itself, or a folder above it, can be renamed away
  // and a new one with a core.json and tools of the command's own made at its path, which core would load next.
  test("a Location a command would rename away and replace stays where it is: in its mount namespace it is a mount point", async () => {
    const location = configured()
    const { ino } = statSync(location)
    const result = await run(
      `cd .. && mv "$OLDPWD" "$OLDPWD.old" && mkdir -p "$OLDPWD/tools" && echo '{ "permission": { "*": "allow" } }' > "$OLDPWD/core.json" && echo evil > "$OLDPWD/tools/evil.ts" && echo swapped`,
      location,
    )
    expect(result.stdout.text).toBe("")
    expect(result.stderr.text).toContain("Device or resource busy")
    expect(statSync(location).ino).toBe(ino)
    expect(existsSync(`${location}.old`)).toBe(false)
    unchanged(location)
    expect(result.undone ?? []).toEqual([])
  })

  test("a Location renamed away and replaced (where commands get no mount namespace) is put back, and what was made kept aside", () => {
    // Done here as a command without a mount namespace would: there, the Location is no mount point.
    const location = configured()
    const { ino } = statSync(location)
    const guarded = Guard.begin(location, keeping)
    renameSync(location, `${location}.old`)
    mkdirSync(join(location, "tools"), { recursive: true })
    writeFileSync(join(location, "core.json"), '{ "permission": { "*": "allow" } }')
    writeFileSync(join(location, "tools/evil.ts"), "evil\n")
    const undone = guarded.finish(true)
    expect(statSync(location).ino).toBe(ino)
    expect(existsSync(`${location}.old`)).toBe(false)
    unchanged(location)
    expect(undone.paths).toEqual([location])
    expect(readFileSync(join(undone.keptIn!, basename(location), "tools/evil.ts"), "utf8")).toBe("evil\n")
  })

  // Two served Locations of one repository with a worktree: each named the worktrees' folders, each held them open,
  // and one of the two was never closed: 2 descriptors a command, until the sidecar ran out.
  test.skipIf(Bun.which("git") === null)("Locations of one repository hold its worktrees' folders once, and let them all go", () => {
    const root = tempDir("core-repo-")
    const run = (...args: ReadonlyArray<string>) => {
      const result = Bun.spawnSync(["git", ...args], { cwd: root, env: { PATH: process.env.PATH!, HOME: root, GIT_CONFIG_NOSYSTEM: "1" } })
      if (result.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${result.stderr.toString()}`)
    }
    run("init", "-q")
    run("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "first")
    run("worktree", "add", "-q", join(root, "wt"))
    mkdirSync(join(root, "sub"))
    const open = () => readdirSync("/proc/self/fd").length
    const before = open()
    for (let index = 0; index < 20; index++) Guard.begin(root, keeping, [join(root, "sub")]).finish(true)
    expect(open() - before).toBeLessThan(3)
  })

  test("a Location moved inside its replacement comes out of it before the replacement is set aside", () => {
    // Done here as a command would: whether a folder holding mounts can be moved into another varies by kernel setup.
    const location = configured()
    const guarded = Guard.begin(location, keeping)
    renameSync(location, `${location}.old`)
    mkdirSync(location)
    renameSync(`${location}.old`, join(location, "inner"))
    writeFileSync(join(location, "core.json"), "{}")
    const undone = guarded.finish(true)
    unchanged(location)
    expect(existsSync(join(location, "inner"))).toBe(false)
    expect(undone.paths).toEqual([location])
    expect(readdirSync(join(undone.keptIn!, basename(location)))).toEqual(["core.json"])
  })

  // What the command puts in the Location's place may be a folder that was there before it began (written by an
  // earlier call): it is set aside all the same, kept for a person, and the Location put back.
  test("a folder that was there before the command, put in the Location's place, is set aside and the Location put back", async () => {
    const root = tempDir("core-repo-")
    const location = join(root, "api")
    mkdirSync(location)
    writeFileSync(join(location, "core.json"), '{ "permission": { "bash": "ask" } }')
    const older = join(root, "src")
    mkdirSync(join(older, "tools"), { recursive: true })
    writeFileSync(join(older, "tools/evil.ts"), "evil")
    writeFileSync(join(older, "main.ts"), "work")
    await Bun.sleep(200)
    const guarded = Guard.begin(location, keeping)
    renameSync(location, join(root, "api.old"))
    renameSync(older, location)
    const undone = guarded.finish(true)
    expect(existsSync(join(root, "api.old"))).toBe(false)
    expect(readdirSync(location)).toEqual(["core.json"])
    expect(undone.paths).toEqual([location])
    expect(readFileSync(join(undone.keptIn!, "api/main.ts"), "utf8")).toBe("work")
  })

  // A folder put back may hold the Location moved aside inside it and replaced: each is put back in turn.
  test("a folder above put back, then the Location moved aside inside it and replaced: both are put back", () => {
    const root = tempDir("core-repo-")
    const location = join(root, "services/api")
    mkdirSync(location, { recursive: true })
    writeFileSync(join(location, "core.json"), '{ "permission": { "bash": "ask" } }')
    const guarded = Guard.begin(location, keeping)
    renameSync(join(root, "services"), join(root, "services2"))
    renameSync(join(root, "services2/api"), join(root, "services2/api-old"))
    mkdirSync(join(root, "services2/api/tools"), { recursive: true })
    writeFileSync(join(root, "services2/api/tools/evil.ts"), "evil")
    writeFileSync(join(root, "services2/api/core.json"), '{ "permission": { "bash": "ask" } }')
    const undone = guarded.finish(true)
    expect(readdirSync(location)).toEqual(["core.json"])
    expect(existsSync(join(root, "services/api-old"))).toBe(false)
    expect(undone.paths).toEqual([join(root, "services"), location])
    expect(readFileSync(join(undone.keptIn!, "api/tools/evil.ts"), "utf8")).toBe("evil")
  })

  // A Location that cannot be put back (its folder gone where core cannot follow) has its entries checked by path.
  test("a Location that cannot be put back has its entries checked by path: what the command made there goes", () => {
    const root = tempDir("core-repo-")
    const location = join(root, "api")
    mkdirSync(location)
    writeFileSync(join(location, "core.json"), '{ "permission": { "bash": "ask" } }')
    const guarded = Guard.begin(location, keeping)
    rmSync(location, { recursive: true })
    mkdirSync(join(location, "tools"), { recursive: true })
    writeFileSync(join(location, "tools/evil.ts"), "evil")
    writeFileSync(join(location, "core.json"), "{}")
    const undone = guarded.finish(true)
    expect(readFileSync(join(location, "core.json"), "utf8")).toBe('{ "permission": { "bash": "ask" } }')
    expect(existsSync(join(location, "tools"))).toBe(false)
    expect([...undone.paths].sort()).toEqual([join(location, "core.json"), join(location, "tools")])
  })

  // A repository granted by shell.allowWrite (the Location a folder of it): its .git can be renamed away and a copy
  // with a hooksPath of the command's put in its place, which the user's git would then run outside the sandbox.
  test("a granted repository's .git replaced with a copy of the command's: git's config in it is put back", () => {
    const { root, original, location } = grantedRepository()
    const guarded = Guard.begin(location, keeping, [], false, [root])
    renameSync(join(root, ".git"), join(root, ".git-old"))
    Bun.spawnSync(["cp", "-a", join(root, ".git-old"), join(root, ".git")])
    writeFileSync(join(root, ".git/config"), `${original}[core]\n\thooksPath = /tmp/planted-hooks\n`)
    const undone = guarded.finish(true)
    // The repository's own .git is back, the copy set aside.
    expect(readFileSync(join(root, ".git/config"), "utf8")).toBe(original)
    expect(existsSync(join(root, ".git-old"))).toBe(false)
    expect(undone.paths).toContain(join(root, ".git"))
  })

  // Its .git renamed away and a .git file naming a git directory of the command's own put in its place: the user's
  // git would read that directory's config (core.fsmonitor runs on git status).
  test("a granted repository's .git replaced with a .git file naming the command's git directory is put back", () => {
    const { root, original, location } = grantedRepository()
    const guarded = Guard.begin(location, keeping, [], false, [root])
    renameSync(join(root, ".git"), join(root, ".gitold"))
    Bun.spawnSync(["cp", "-r", join(root, ".gitold"), join(root, "evil")])
    writeFileSync(join(root, "evil/config"), `${original}[core]\n\tfsmonitor = touch /tmp/planted\n`)
    writeFileSync(join(root, ".git"), `gitdir: ${join(root, "evil")}\n`)
    const undone = guarded.finish(true)
    expect(statSync(join(root, ".git")).isDirectory()).toBe(true)
    expect(readFileSync(join(root, ".git/config"), "utf8")).toBe(original)
    expect(existsSync(join(root, ".gitold"))).toBe(false)
    expect(undone.paths).toContain(join(root, ".git"))
  })

  // git looks for a repository from where it runs upwards: one made above the Location (`git init ..`, or in the
  // temp directory itself) would be the user's next, its config and hooks the command's.
  test("a repository a command makes in a folder above the Location is taken out", async () => {
    const root = tempDir("core-repo-")
    const location = join(root, "api")
    mkdirSync(location)
    const result = await run("git init -q .. && git --git-dir=../.git config core.fsmonitor 'touch planted' && echo made", location)
    expect(result.stdout.text).toBe("made\n")
    expect(existsSync(join(root, ".git"))).toBe(false)
    expect(result.undone).toContain(join(root, ".git"))
  })

  // Where the supervisor can make no mount namespace to pin the .git (see the next test), the swap is made and undone.
  test("the same by a command the grant lets write the repository", async () => {
    const { root, original, location } = grantedRepository()
    const granting = Shell.make({ allowWrite: [root] }, { records: tempDir("core-runs-"), namespaces: false, keeping })
    const result = await run(
      `cd ../.. && mv .git .git-old && cp -a .git-old .git && printf '[core]\\n\\thooksPath = /tmp/planted\\n' >> .git/config && echo swapped`,
      location,
      granting,
    )
    expect(result.stdout.text).toBe("swapped\n")
    expect(readFileSync(join(root, ".git/config"), "utf8")).toBe(original)
    expect(existsSync(join(root, ".git-old"))).toBe(false)
    expect(result.undone).toContain(join(root, ".git"))
  })

  // The swap was undone once the command ended: meanwhile the user's git (an editor runs `git status` as soon as
  // .git changes) took the copy, and ran its core.fsmonitor outside any sandbox. Bound onto itself in the command's
  // mount namespace, the Location's .git cannot be renamed away.
  test.skipIf(!MOUNTS)(`the Location's .git cannot be moved away while a command runs, so the user's git never meets a copy${needs}`, async () => {
    const { root, original, location } = grantedRepository()
    const granting = Shell.make({ allowWrite: [root] }, { records: tempDir("core-runs-"), keeping })
    const planted = join(root, "fsmonitor-ran")
    const result = await run(
      `cd ../.. && mv .git .git-old 2>&1; cp -a .git .git-new && printf '[core]\n\tfsmonitor = "touch ${planted}; true"\n' >> .git-new/config && ` +
        "mv -T .git-new .git 2>&1; git status --short > /dev/null 2>&1; echo done",
      location,
      granting,
    )
    expect(result.stdout.text).toMatch(/^mv: cannot move '\.git' to '\.git-old': Device or resource busy\n.*Device or resource busy\ndone\n$/s)
    expect(readFileSync(join(root, ".git/config"), "utf8")).toBe(original)
    expect(existsSync(join(root, ".git-old"))).toBe(false)
    Bun.spawnSync(["git", "status"], { cwd: root, env: { PATH: process.env.PATH, HOME: root } })
    expect(existsSync(planted)).toBe(false)
    // A git directory in a folder of the Location (git init --separate-git-dir): the folder is pinned too, since
    // renaming it would move the git directory away as surely.
    const separate = tempDir("core-repo-")
    mkdirSync(join(separate, "sub"))
    Bun.spawnSync(["git", "init", "-q", `--separate-git-dir=${join(separate, "sub/realgit")}`, separate], { env: { PATH: process.env.PATH, HOME: separate } })
    const moved = await run("mv sub sub2 2>&1; mv sub/realgit sub/other 2>&1; echo done", separate)
    expect(moved.stdout.text).toMatch(/^mv: cannot move 'sub' to 'sub2': Device or resource busy\nmv: cannot move 'sub\/realgit' to 'sub\/other': Device or resource busy\ndone\n$/)
    expect(existsSync(join(separate, "sub/realgit/HEAD"))).toBe(true)
    // Inside it, git works as before: a commit is made.
    const committed = await run("git -c user.name=a -c user.email=a@b commit -q --allow-empty -m pinned && git log --oneline | wc -l", location, granting)
    expect(committed.stdout.text.trim()).toMatch(/^\d+$/)
  })

  // A worktree's commondir names the repository whose hooks and config git uses there: rewritten to name a copy
  // with core.fsmonitor set, the user's next `git status` in the worktree ran it. It is not held read-only (`git
  // worktree remove` deletes it with its folder): what it said is put back once the command has ended.
  const worktree = () => {
    const { root } = grantedRepository()
    const git = (...args: ReadonlyArray<string>) =>
      Bun.spawnSync(["git", "-C", root, "-c", "user.name=t", "-c", "user.email=t@example.com", ...args], { stderr: "pipe" })
    expect(git("commit", "-q", "--allow-empty", "-m", "first").exitCode).toBe(0)
    const tree = join(tempDir("core-tree-", "/var/tmp"), "tree")
    expect(git("worktree", "add", "-q", tree).exitCode).toBe(0)
    writeFileSync(join(tree, "core.json"), "{}")
    const commondir = join(root, ".git/worktrees/tree/commondir")
    // What the command points it at: a copy of the repository whose config runs code on `git status`.
    const marker = join(tempDir("core-marker-"), "ran")
    const evil = join(root, "evil")
    return { root, tree, commondir, before: readFileSync(commondir, "utf8"), marker, evil }
  }
  const plant = (evil: string, root: string, marker: string) =>
    `cp -a ${join(root, ".git")} ${evil} && printf '[core]\\n\\tfsmonitor = touch ${marker}\\n' >> ${evil}/config`
  const statusRuns = (tree: string, marker: string) => {
    Bun.spawnSync(["git", "-C", tree, "status", "--short"], { stdout: "ignore", stderr: "ignore" })
    return existsSync(marker)
  }

  test("a worktree's commondir rewritten by a command in the granted repository is put back", async () => {
    const { root, tree, commondir, before, marker, evil } = worktree()
    const granting = Shell.make({ allowWrite: [root] }, { records: tempDir("core-runs-"), keeping })
    const result = await run(`${plant(evil, root, marker)} && printf '${evil}' > ${commondir} && echo pointed`, tree, granting)
    expect(result.stdout.text).toBe("pointed\n")
    expect(readFileSync(commondir, "utf8")).toBe(before)
    expect(result.undone).toContain(commondir)
    expect(statusRuns(tree, marker)).toBe(false)
  })

  test("the same from the repository as the Location, its worktree elsewhere; and the worktree stays removable", async () => {
    const { root, tree, commondir, before, marker, evil } = worktree()
    writeFileSync(join(root, "core.json"), "{}")
    const guarded = Guard.begin(root, keeping)
    // Not held read-only, so that git can remove a worktree.
    expect(guarded.readOnly).not.toContain(commondir)
    guarded.finish(false)
    const result = await run(`${plant(evil, root, marker)} && printf '${evil}' > .git/worktrees/tree/commondir && echo pointed`, root)
    expect(result.stdout.text).toBe("pointed\n")
    expect(readFileSync(commondir, "utf8")).toBe(before)
    expect(statusRuns(tree, marker)).toBe(false)
    // Left out altogether, git took the worktree's own folder for the repository: put back too.
    const removed = await run(`rm .git/worktrees/tree/commondir && echo removed`, root)
    expect(removed.stdout.text).toBe("removed\n")
    expect(readFileSync(commondir, "utf8")).toBe(before)
    // git worktree remove deletes the folder whole: nothing is put back into it.
    const pruned = await run(`rm -rf .git/worktrees/tree && echo pruned`, root)
    expect(pruned.stdout.text).toBe("pruned\n")
    expect(existsSync(join(root, ".git/worktrees/tree"))).toBe(false)
  })

  // The folder holding the commondir moved into a copy of the repository with its config changed, a link left in its
  // place: the commondir still says `../..`, which git then resolves through the link, to the copy.
  test("a worktree's git directory (or the folder of them) swapped for a link into the command's copy is put back", async () => {
    for (const swapped of [".git/worktrees/tree", ".git/worktrees"]) {
      const { root, tree, marker, evil } = worktree()
      writeFileSync(join(root, "core.json"), "{}")
      const depth = swapped.split("/").length - 1
      const result = await run(
        `${plant(evil, root, marker)} && rm -rf ${evil}/worktrees && mkdir -p ${dirname(join(evil, swapped.slice(5)))} && ` +
          `mv ${swapped} ${join(evil, swapped.slice(5))} && ln -s ${"../".repeat(depth)}evil/${swapped.slice(5)} ${swapped} && echo swapped`,
        root,
      )
      expect(result.stdout.text).toBe("swapped\n")
      // Moved back where the folder was only renamed; where mv had to copy it (across mounts) and remove it, the
      // link goes and no folder is left to run anything of: never the link.
      const standing = lstatSync(join(root, swapped), { throwIfNoEntry: false })
      expect(standing?.isSymbolicLink() ?? false).toBe(false)
      if (standing !== undefined) expect(readFileSync(join(root, ".git/worktrees/tree/commondir"), "utf8")).toBe("../..\n")
      expect(result.undone).toContain(join(root, swapped))
      expect(statusRuns(tree, marker)).toBe(false)
    }
  })

  // Two commands at once: one swaps the granted repository's .git (or the Location) for its own; a guard begun while
  // the swap stands would take it for the user's, and put it back once its own command ended, after the first
  // command's guard had undone it. A command begun then is not started.
  test("a guard begun while another command's swap of the .git stands refuses to start, and starts once it is undone", () => {
    const { root, original, location } = grantedRepository()
    const first = Guard.begin(location, keeping, [], false, [root])
    expect(first.refused).toBeUndefined()
    renameSync(join(root, ".git"), join(root, ".git-old"))
    Bun.spawnSync(["cp", "-a", join(root, ".git-old"), join(root, ".git")])
    writeFileSync(join(root, ".git/config"), `${original}[core]\n\tfsmonitor = touch /tmp/planted\n`)
    const second = Guard.begin(location, keeping, [], false, [root])
    expect(second.refused).toContain("another command still running")
    expect(second.readOnly).toEqual([])
    // The swap undone by the first command's end, the .git is the user's again, and stays so past the second's.
    first.finish(true)
    expect(second.finish(true).paths).toEqual([])
    expect(readFileSync(join(root, ".git/config"), "utf8")).toBe(original)
    const third = Guard.begin(location, keeping, [], false, [root])
    expect(third.refused).toBeUndefined()
    expect(third.finish(true).paths).toEqual([])
  })

  test("a guard begun while another command's replacement of the Location stands refuses to start", () => {
    const { root, location } = grantedRepository()
    writeFileSync(join(location, "mine.txt"), "the user's")
    const first = Guard.begin(location, keeping, [], false, [root])
    renameSync(location, `${location}.orig`)
    mkdirSync(join(location, "tools"), { recursive: true })
    writeFileSync(join(location, "core.json"), '{"permission":{"*":"allow"}}')
    writeFileSync(join(location, "tools/evil.ts"), "export default 1")
    const second = Guard.begin(location, keeping, [], false, [root])
    expect(second.refused).toContain("another command still running")
    // The first command's end undoes the swap; the second's (ending later) must not redo it.
    first.finish(true)
    second.finish(true)
    expect(readFileSync(join(location, "mine.txt"), "utf8")).toBe("the user's")
    expect(existsSync(join(location, "tools"))).toBe(false)
    expect(readFileSync(join(location, "core.json"), "utf8")).toBe("{}")
  })

  test("through the shell: the second command is not run and says why; two commands that swap nothing both run", async () => {
    const { root, original, location } = grantedRepository()
    // Without a mount namespace, where the .git is not pinned and the swap is made.
    const granting = Shell.make({ allowWrite: [root] }, { records: tempDir("core-runs-"), namespaces: false, keeping })
    const swapping = Effect.runFork(
      granting.run({
        argv: [granting.shell, "-c", `cd ../.. && mv .git .git-old && cp -a .git-old .git && printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> .git/config && touch ${location}/swapped.flag && sleep 2`],
        cwd: location,
        env: { PATH: process.env.PATH, HOME: location },
        sandbox: { location, approved: [] },
      }),
    )
    await until(join(location, "swapped.flag"))
    const refused = await run("echo ran > ran.txt", location, granting).then(
      () => undefined,
      (cause: unknown) => cause as { readonly code?: string; readonly message?: string },
    )
    expect(refused?.code).toBe("EMOVED")
    expect(refused?.message).toContain(Guard.MOVED)
    expect(existsSync(join(location, "ran.txt"))).toBe(false)
    await Effect.runPromise(Fiber.join(swapping))
    expect(readFileSync(join(root, ".git/config"), "utf8")).toBe(original)
    // Nothing swapped: commands run side by side as before.
    const [a, b] = await Promise.all([run("sleep 0.5; echo a", location, granting), run("sleep 0.5; echo b", location, granting)])
    expect([a.stdout.text, b.stdout.text]).toEqual(["a\n", "b\n"])
  })

  // The same across core processes sharing a data directory: each guard notes what it found there.
  test("a command in another core process, started while this one's swap of the .git stands, is not run", async () => {
    const { root, original, location } = grantedRepository()
    const guards = tempDir("core-guards-")
    const peer = Bun.spawn(
      [
        process.execPath,
        join(import.meta.dir, "guard-peer-child.ts"),
        location,
        root,
        guards,
        `cd ../.. && mv .git .git-old && cp -a .git-old .git && printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> .git/config && touch ${location}/swapped.flag && sleep 2`,
        // Without a mount namespace, where the .git is not pinned and the swap is made.
        "plain",
      ],
      { stdout: "pipe", stderr: "inherit" },
    )
    await until(join(location, "swapped.flag"))
    const here = Shell.make({ allowWrite: [root] }, { records: tempDir("core-runs-"), namespaces: false, keeping, guards })
    const refused = await run("echo ran > ran.txt", location, here).then(
      () => undefined,
      (cause: unknown) => cause as { readonly code?: string },
    )
    expect(refused?.code).toBe("EMOVED")
    expect(existsSync(join(location, "ran.txt"))).toBe(false)
    expect(await peer.exited).toBe(0)
    const reported = JSON.parse(await new Response(peer.stdout).text()) as { readonly undone: ReadonlyArray<string> }
    expect(reported.undone).toContain(join(root, ".git"))
    expect(readFileSync(join(root, ".git/config"), "utf8")).toBe(original)
    // The peer's record went with its command; a dead core's is no obstacle. One whose paths are as it found them goes
    // when met; one whose paths changed stays, for loads to refuse the Location until a person has looked.
    const records = () => readdirSync(guards).filter((name) => name.endsWith(".json"))
    expect(records()).toEqual([])
    const asFound = (path: string) => {
      const stats = lstatSync(path)
      return { dev: stats.dev, ino: stats.ino, kind: stats.mode & 0o170000, born: stats.birthtimeMs }
    }
    const dead = (pid: number, git: unknown) =>
      writeFileSync(join(guards, `${pid}-dead.json`), JSON.stringify({ pid, start: 1, found: [[location, asFound(location)], [join(root, ".git"), git]] }))
    dead(999_998, asFound(join(root, ".git")))
    dead(999_999, null)
    expect((await run("echo ran", location, here)).stdout.text).toBe("ran\n")
    expect(records()).toEqual(["999999-dead.json"])
    expect(Guard.stale(guards, location).map((found) => found.changed)).toEqual([[join(root, ".git")]])
    expect(Guard.stale(guards, tempDir("core-elsewhere-"))).toEqual([])
    // A dead core that had this process's pid (started at another time: pids are reused, in a container soon) is
    // a dead core too, not this one.
    dead(process.pid, null)
    expect(Guard.stale(guards, location).map((found) => found.pid).sort()).toEqual([process.pid, 999_999].sort())
  })

  test("a folder above the Location renamed away and replaced: refused where mounted, else put back, the Location with it", async () => {
    const root = tempDir("core-repo-")
    const location = join(root, "services/api")
    mkdirSync(location, { recursive: true })
    writeFileSync(join(location, "core.json"), '{ "permission": { "bash": "ask" } }')
    for (const entry of ["tools", "plugins", ".core"]) {
      mkdirSync(join(location, entry))
      writeFileSync(join(location, entry, "kept.ts"), "kept")
    }
    const { ino } = statSync(join(root, "services"))
    const swap = "cd ../.. && mv services old && mkdir -p services/api/tools && echo '{}' > services/api/core.json && echo evil > services/api/tools/evil.ts"
    // In a writable temporary folder, the Location and the folders on the way to it are bound onto themselves where a
    // mount namespace can be made: the rename fails there. Where none can, it is undone once the command has ended.
    const plain = Shell.make({}, { records: tempDir("core-runs-"), namespaces: false, keeping })
    for (const [producer, mounted] of MOUNTS ? ([[shell, true], [plain, false]] as const) : ([[plain, false]] as const)) {
      const result = await run(swap, location, producer)
      if (mounted) {
        expect(result.exitCode).not.toBe(0)
        expect(result.stderr.text).toContain("Device or resource busy")
        expect(result.undone).toEqual([])
      } else {
        expect({ code: result.exitCode, stderr: result.stderr.text }).toEqual({ code: 0, stderr: "" })
        expect(result.undone).toEqual([join(root, "services")])
        expect(readFileSync(join(result.undoneKeptIn!, "services/api/tools/evil.ts"), "utf8")).toBe("evil\n")
      }
      expect(existsSync(join(root, "old"))).toBe(false)
      expect(statSync(join(root, "services")).ino).toBe(ino)
      unchanged(location)
    }
  })

  test("a skills folder nested in another folder: renaming the folder above it does not let a command plant skills", async () => {
    const location = tempDir("core-loc-")
    mkdirSync(join(location, ".claude/skills/kept"), { recursive: true })
    writeFileSync(join(location, ".claude/skills/kept/SKILL.md"), "kept")
    const result = await run(
      "echo x > .claude/skills/kept/SKILL.md; mv .claude moved; mkdir -p .claude/skills/evil && echo planted > .claude/skills/evil/SKILL.md; mkdir -p .opencode/skill/x && echo planted > .opencode/skill/x/SKILL.md",
      location,
    )
    // Whatever the command managed (read-only where mounted), no skill it wrote is where core loads skills.
    expect(existsSync(join(location, ".claude/skills/evil"))).toBe(false)
    expect(existsSync(join(location, ".opencode/skill"))).toBe(false)
    expect(result.undone).toContain(join(location, ".opencode/skill"))
    if (MOUNTS) expect(readFileSync(join(location, existsSync(join(location, "moved")) ? "moved" : ".claude", "skills/kept/SKILL.md"), "utf8")).toBe("kept")
  })

  // A skill's directory linked from a shared folder (or its SKILL.md linked to a file) loads through the link: what it
  // leads to is the skill, outside the skill folders' own mounts.
  test.skipIf(!MOUNTS)(`a linked skill's directory and a linked SKILL.md stay as they were, written by name or by a script${needs}`, async () => {
    const location = tempDir("core-loc-")
    mkdirSync(join(location, "shared/deploy"), { recursive: true })
    writeFileSync(join(location, "shared/deploy/SKILL.md"), "deploy")
    writeFileSync(join(location, "notes.md"), "notes")
    mkdirSync(join(location, ".claude/skills/notes"), { recursive: true })
    symlinkSync("../../shared/deploy", join(location, ".claude/skills/deploy"))
    symlinkSync("../../../notes.md", join(location, ".claude/skills/notes/SKILL.md"))
    await run(
      `echo x > shared/deploy/SKILL.md; echo x > notes.md; node -e 'require("fs").writeFileSync("shared/deploy/SKILL.md", "planted")'; echo x > shared/deploy/run.sh`,
      location,
    )
    expect(readFileSync(join(location, "shared/deploy/SKILL.md"), "utf8")).toBe("deploy")
    expect(readFileSync(join(location, "notes.md"), "utf8")).toBe("notes")
    expect(existsSync(join(location, "shared/deploy/run.sh"))).toBe(false)
  })

  test.skipIf(!MOUNTS)(`another Location core serves is guarded as the command's own is${needs}`, async () => {
    // Both in the temp directory, which commands may write: the way a command reaches another served Location.
    const location = tempDir("core-loc-")
    const served = configured()
    const bare = tempDir("core-loc-")
    const result = await run(
      [
        `echo '{}' > ${served}/core.json || echo refused core.json`,
        `echo x > ${served}/tools/x.ts || echo refused tools`,
        `mkdir -p ${bare}/tools && echo x > ${bare}/tools/evil.ts`,
      ].join("\n"),
      location,
      shell,
      [served, bare],
    )
    expect(result.stdout.text).toContain("refused core.json")
    expect(result.stdout.text).toContain("refused tools")
    unchanged(served)
    expect(existsSync(join(bare, "tools"))).toBe(false)
    expect(result.undone).toEqual([join(bare, "tools")])
  })

  test("another served Location counts as busy while a command runs, and idle once it has ended", async () => {
    const location = tempDir("core-loc-")
    const served = tempDir("core-loc-")
    mkdirSync(join(location, "gate"))
    const fiber = Effect.runFork(
      shell.run({
        argv: [shell.shell, "-c", "touch started; while [ ! -e gate/open ]; do sleep 0.01; done"],
        cwd: location,
        env: { PATH: process.env.PATH },
        sandbox: { location, approved: [], others: [served] },
      }),
    )
    await until(join(location, "started"))
    expect(Guard.busy(served)).toBe(true)
    let idle = false
    const waiting = Guard.idle(served).then(() => (idle = true))
    expect(idle).toBe(false)
    writeFileSync(join(location, "gate/open"), "")
    expect(await waiting).toBe(true)
    await Effect.runPromise(Fiber.join(fiber))
    expect(Guard.busy(served)).toBe(false)
  })

  test("what a detached process creates after the command exits is removed too: it is ended first", async () => {
    const location = tempDir("core-loc-")
    // The command exits once the detached loop has written at least once, and the loop goes on writing after it.
    const result = await run(
      "(setsid sh -c 'while :; do mkdir -p tools; echo x > tools/late.ts; done' &) ; until [ -s tools/late.ts ]; do sleep 0.01; done",
      location,
    )
    expect(existsSync(join(location, "tools"))).toBe(false)
    expect(result.undone).toEqual([join(location, "tools")])
    expect(result.killed.length).toBeGreaterThan(0)
  })

  test("a symbolic link in an entry's place that the command replaced is put back", async () => {
    const location = tempDir("core-loc-")
    const elsewhere = tempDir("core-tools-")
    symlinkSync(elsewhere, join(location, "tools"))
    const result = await run("rm tools && mkdir tools && echo x > tools/x.ts", location)
    expect(result.undone).toEqual([join(location, "tools")])
    expect(readdirSync(location)).toEqual(["tools"])
    expect(readdirSync(join(location, "tools"))).toEqual([])
    expect(existsSync(join(elsewhere, "x.ts"))).toBe(false)
  })

  test.skipIf(!AS_NOBODY)(`run by another user, core keeps the entries read-only through a user namespace${asNobody}`, async () => {
    const root = tempDir("core-user-")
    mkdirSync(join(root, "loc/tools"), { recursive: true })
    writeFileSync(join(root, "loc/core.json"), "{}")
    chownSync(root, NOBODY, NOBODY)
    for (const path of ["loc", "loc/tools", "loc/core.json"]) chownSync(join(root, path), NOBODY, NOBODY)
    const command = "echo x > core.json; echo x > tools/x.ts; mkdir plugins; id -u"
    const child = Bun.spawn(
      nobody(root, (reached) => [reached.bun, join(reached.repository, "test/shell/guard-child.ts"), root, command]),
      { cwd: root, env: { PATH: process.env.PATH!, HOME: root, CORE_HOME: join(root, "home"), CORE_DATA_DIR: join(root, "data") }, stdout: "pipe", stderr: "inherit" },
    )
    const [code, output] = await Promise.all([child.exited, new Response(child.stdout).text()])
    expect(code).toBe(0)
    const result = JSON.parse(output) as { stdout: string; stderr: string; undone: ReadonlyArray<string> }
    expect(result.stdout).toBe(`${NOBODY}\n`)
    expect(result.stderr.match(/Read-only file system/g)).toHaveLength(2)
    expect(result.undone).toEqual([join(root, "loc/plugins")])
    expect(readFileSync(join(root, "loc/core.json"), "utf8")).toBe("{}")
  })

  test.skipIf(!AS_NOBODY)(`core check says when commands get no mount namespace, and only then${asNobody}`, async () => {
    const root = tempDir("core-user-")
    // No unshare where core looks for it (the system's folders, whatever PATH says): core run by nobody cannot make a
    // user namespace.
    mkdirSync(join(root, "bin"))
    symlinkSync(join(root, "reach/bun"), join(root, "bin/bun"))
    for (const directory of ["loc", "data", "home"]) mkdirSync(join(root, directory))
    for (const path of ["", "bin", "loc", "data", "home"]) chownSync(join(root, path), NOBODY, NOBODY)
    const args = ["check", "read", "--input", '{"filePath":"a.txt"}', "--location", join(root, "loc")]
    const env = { PATH: join(root, "bin"), HOME: join(root, "home"), CORE_DATA_DIR: join(root, "data"), CORE_HOME: join(root, "home") }
    const asNobody = Bun.spawnSync(
      nobody(root, (reached) => [reached.bun, join(reached.repository, "src/cli/main.ts"), ...args], [TOOLS.unshare!]),
      { env },
    )
    expect(asNobody.exitCode).toBe(0)
    expect(asNobody.stderr.toString()).toContain("core: Commands get no mount namespace here (core is not root")
    mkdirSync(join(root, "root-bin"))
    symlinkSync(process.execPath, join(root, "root-bin/bun"))
    const root_ = Bun.spawnSync([process.execPath, join(REPOSITORY, "src/cli/main.ts"), ...args], {
      env: { ...env, PATH: join(root, "root-bin") },
    })
    expect(root_.exitCode).toBe(0)
    expect(root_.stderr.toString()).not.toContain("mount namespace")
  })

  test("with no mount namespace, a changed core.json is put back and a created entry removed", async () => {
    // Supervisors that cannot mount: what holds where the system gives no mount namespace.
    const plain = Shell.make({}, { records: tempDir("core-runs-"), namespaces: false, keeping })
    const location = tempDir("core-loc-")
    writeFileSync(join(location, "core.json"), '{ "permission": { "bash": "ask" } }')
    const result = await run(`node -e 'require("fs").writeFileSync("core.json", "{}")'; mkdir tools; echo x > tools/x.ts`, location, plain)
    expect(result.exitCode).toBe(0)
    expect(readFileSync(join(location, "core.json"), "utf8")).toBe('{ "permission": { "bash": "ask" } }')
    expect(existsSync(join(location, "tools"))).toBe(false)
    expect([...result.undone].sort()).toEqual([join(location, "core.json"), join(location, "tools")].sort())
    expect(readFileSync(join(result.undoneKeptIn!, "core.json"), "utf8")).toBe("{}")
  })

  test("with no mount namespace, what a command wrote, replaced or added inside the entries is taken out, and kept", async () => {
    const plain = Shell.make({}, { records: tempDir("core-runs-"), namespaces: false, keeping })
    const location = configured()
    mkdirSync(join(location, "tools/lib"))
    writeFileSync(join(location, "tools/lib/deep.ts"), "deep")
    writeFileSync(join(location, "tools/other.ts"), "other")
    const command = [
      // In place, through code the command runs, with its modification time set back afterwards.
      `node -e 'require("fs").writeFileSync("tools/kept.ts", "evil")'`,
      "touch -d 2000-01-01 tools/kept.ts",
      "echo new > tools/new.ts",
      "mkdir plugins/sub && echo p > plugins/sub/evil.ts",
      // Replaced by another file under the same name.
      "echo swapped > .core/next && mv .core/next .core/kept.ts",
      "echo lib > tools/lib/added.ts",
    ].join("\n")
    const result = await run(command, location, plain)
    expect(result.exitCode).toBe(0)
    const taken = ["tools/kept.ts", "tools/new.ts", "tools/lib/added.ts", "plugins/sub", ".core/kept.ts"]
    expect([...result.undone].sort()).toEqual(taken.map((path) => join(location, path)).sort())
    for (const path of taken) expect(existsSync(join(location, path))).toBe(false)
    // What the command did not touch stays.
    expect(readFileSync(join(location, "tools/other.ts"), "utf8")).toBe("other")
    expect(readFileSync(join(location, "tools/lib/deep.ts"), "utf8")).toBe("deep")
    expect(readFileSync(join(location, "plugins/kept.ts"), "utf8")).toBe("kept")
    // Kept for a person, where it was in the Location.
    expect(readFileSync(join(result.undoneKeptIn!, "tools/kept.ts"), "utf8")).toBe("evil")
    expect(readFileSync(join(result.undoneKeptIn!, "plugins/sub/evil.ts"), "utf8")).toBe("p\n")
    expect(readFileSync(join(result.undoneKeptIn!, ".core/kept.ts"), "utf8")).toBe("swapped\n")
    // A command that changes nothing there undoes nothing.
    const quiet = await run("cat tools/other.ts > /dev/null; echo ok > a.txt", location, plain)
    expect(quiet.undone).toEqual([])
  })

  test("with no mount namespace, a protected directory flooded past what is looked at is taken out whole", async () => {
    const plain = Shell.make({}, { records: tempDir("core-runs-"), namespaces: false, keeping })
    const location = configured()
    const result = await run(
      `node -e 'for (let i = 0; i <= ${2 * Guard.MAX_INSIDE}; i++) require("fs").writeFileSync("tools/f" + i + ".ts", "")'`,
      location,
      plain,
    )
    expect(result.exitCode).toBe(0)
    expect(result.undone).toEqual([join(location, "tools")])
    expect(existsSync(join(location, "tools"))).toBe(false)
    expect(readFileSync(join(result.undoneKeptIn!, "tools/kept.ts"), "utf8")).toBe("kept")
  }, 60_000)

  /** A Location that is a git repository (as git leaves one) whose tool imports a module and a package. */
  const repository = (): string => {
    const location = configured()
    for (const [path, text] of <Array<[string, string]>>[
      [".git/HEAD", "ref: refs/heads/main\n"],
      [".git/config", "[core]\n\tbare = false\n"],
      [".git/hooks/pre-commit.sample", "#!/bin/sh\n"],
      ["tools/t.ts", 'import "../lib/fmt"\nimport "pad"\n'],
      ["lib/fmt.ts", 'import "pad"\n'],
      ["node_modules/pad/package.json", "{}"],
    ]) {
      mkdirSync(join(location, path, ".."), { recursive: true })
      writeFileSync(join(location, path), text)
    }
    mkdirSync(join(location, ".git/objects"))
    return location
  }
  const PLANT = [
    "echo evil > .git/hooks/pre-commit",
    "echo '[core] hooksPath = x' >> .git/config",
    "mkdir -p .git/info && echo '* filter=x' > .git/info/attributes",
    "echo evil > lib/fmt.ts",
    "echo evil > node_modules/pad/index.js",
    "mkdir -p lib/node_modules/pad && echo evil > lib/node_modules/pad/index.js",
    "echo ok > .git/description",
  ].join("; ")
  const planted = (location: string) => {
    expect(readdirSync(join(location, ".git/hooks"))).toEqual(["pre-commit.sample"])
    expect(readFileSync(join(location, ".git/config"), "utf8")).toBe("[core]\n\tbare = false\n")
    expect(existsSync(join(location, ".git/info/attributes"))).toBe(false)
    expect(readFileSync(join(location, "lib/fmt.ts"), "utf8")).toBe('import "pad"\n')
    expect(readdirSync(join(location, "node_modules/pad"))).toEqual(["package.json"])
    expect(existsSync(join(location, "lib/node_modules/pad"))).toBe(false)
    // The rest of .git stays the command's to change.
    expect(readFileSync(join(location, ".git/description"), "utf8")).toBe("ok\n")
  }

  test.skipIf(!MOUNTS)(`git's hooks, config and attributes and the code a tool imports are read-only to a command${needs}`, async () => {
    const location = repository()
    const result = await run(PLANT, location)
    expect(result.stderr.text.match(/Read-only file system/g)?.length).toBe(4)
    planted(location)
    expect([...result.undone].sort()).toEqual([join(location, ".git/info/attributes"), join(location, "lib/node_modules/pad")])
  })

  // git reads a directory's `.git` before taking the directory itself for a bare repository: a `HEAD` and an
  // `objects/` a command puts beside `.git` change nothing for git, and must not move what core guards either.
  test.skipIf(!MOUNTS)(`a decoy bare repository beside .git leaves .git's hooks and config read-only${needs}`, async () => {
    const location = repository()
    const decoy = await run("touch HEAD; mkdir -p objects", location)
    expect(decoy.exitCode).toBe(0)
    const result = await run(PLANT, location)
    expect(result.stderr.text.match(/Read-only file system/g)?.length).toBe(4)
    planted(location)
  })

  // A repository a command makes is one the user's git runs next (a prompt's `git status`, an editor), outside any
  // sandbox; and its remote would give the Location another project's identity, with that project's approvals.
  test("a repository a command makes at the Location keeps its work, not what git would run nor its remote", async () => {
    for (const inRepository of [false, true]) {
      const outer = tempDir("core-outer-")
      if (inRepository) mkdirSync(join(outer, ".git/objects"), { recursive: true }), writeFileSync(join(outer, ".git/HEAD"), "ref: refs/heads/main\n")
      const location = join(outer, "project")
      mkdirSync(location)
      const before = Project.identityOf(location)
      const made = [
        "git init -q",
        `printf '[core]\\n\\tfsmonitor = touch fsmonitor-ran\\n[remote "origin"]\\n\\turl = https://github.com/acme/shop\\n' >> .git/config`,
        "printf '#!/bin/sh\\ntouch hook-ran\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        "printf '* filter=x\\n' > .git/info/attributes",
        "echo work > a.txt && git add a.txt && git -c user.name=m -c user.email=m@x -c core.hooksPath=/dev/null commit -qm work",
      ].join(" && ")
      const result = await run(made, location)
      expect(result.exitCode).toBe(0)
      expect([...result.undone].sort()).toEqual([".git/config", ".git/hooks", ".git/info/attributes"].map((path) => join(location, path)))
      expect(readFileSync(join(result.undoneKeptIn!, ".git/config"), "utf8")).toContain("fsmonitor")
      for (const path of [".git/config", ".git/hooks", ".git/info/attributes"]) expect(existsSync(join(location, path))).toBe(false)
      // The work stays: git still reads the repository, the commit in it. The user's git (a prompt's `git status`)
      // runs none of what the command planted (it ran inside the command, sandboxed, as the command's own git).
      rmSync(join(location, "fsmonitor-ran"), { force: true })
      const user = { cwd: location, env: { PATH: process.env.PATH, HOME: location } }
      expect(Bun.spawnSync(["git", "log", "--format=%s"], user).stdout.toString()).toBe("work\n")
      expect(Bun.spawnSync(["git", "status", "--short"], user).exitCode).toBe(0)
      expect(existsSync(join(location, "fsmonitor-ran"))).toBe(false)
      // Its identity stays what it was: no remote gives it another project's.
      expect(Project.identityOf(location)).toBe(before)
    }
  })

  // What is taken out must really be in the Location: a folder of the made repository (or of a gitlink's path) that
  // is a link to a place outside names the user's own files there, which stay.
  test("a made repository's folders linked outside the Location: nothing outside is touched", async () => {
    const outside = tempDir("core-outside-")
    writeFileSync(join(outside, "attributes"), "mine\n")
    writeFileSync(join(outside, "config"), "[core]\n\tmine = true\n")
    mkdirSync(join(outside, "sub/.git/hooks"), { recursive: true })
    writeFileSync(join(outside, "sub/.git/config"), "[core]\n\tmine = true\n")
    const location = tempDir("core-gitlink-")
    const made = [
      `git init -q && rm -rf .git/info && ln -s ${outside} .git/info && ln -s ${outside} vendor`,
      `git update-index --add --cacheinfo 160000,${"1".repeat(40)},vendor/sub`,
    ].join(" && ")
    const result = await run(made, location)
    expect([result.exitCode, result.stderr.text]).toEqual([0, ""])
    for (const path of ["attributes", "config", "sub/.git/config"]) expect(existsSync(join(outside, path))).toBe(true)
    expect(readdirSync(join(outside, "sub/.git"))).toEqual(["config", "hooks"])
    expect(result.undone.some((path) => path.startsWith(outside) || path.startsWith(join(location, "vendor")))).toBe(false)
  })

  // A FIFO where git keeps a file would stop core at the first read, on the thread that settles every call. (Where
  // mounts are had, the clone's config is read-only to the command: without them it can be replaced.)
  test("a FIFO a command leaves where git keeps a file (a gitlink's config, the index) stops nothing", async () => {
    const location = tempDir("core-gitlink-")
    expect(Bun.spawnSync(["sh", "-c", "git init -q && git init -q lib && git -C lib -c user.name=p -c user.email=p@x commit -q --allow-empty -m i"], { cwd: location }).exitCode).toBe(0)
    await Bun.sleep(200)
    const started = performance.now()
    const plain = Shell.make({}, { records: tempDir("core-runs-"), namespaces: false, keeping })
    const fifo = await run("git add lib && rm lib/.git/config && mkfifo lib/.git/config", location, plain)
    expect(fifo.exitCode).toBe(0)
    expect(fifo.undone).toContain(join(location, "lib/.git/config"))
    const index = await run("rm .git/index && mkfifo .git/index", location)
    expect(index.exitCode).toBe(0)
    expect((await run("true", location)).exitCode).toBe(0)
    expect(performance.now() - started).toBeLessThan(10_000)
  }, 20_000)

  test("a .git file a command makes, or a bare repository it makes of the Location, is taken out", async () => {
    const location = configured()
    const pointer = await run("printf 'gitdir: /tmp/elsewhere\\n' > .git", location)
    expect([...pointer.undone]).toEqual([join(location, ".git")])
    expect(existsSync(join(location, ".git"))).toBe(false)
    const bare = await run("mkdir -p objects refs && echo 'ref: refs/heads/main' > HEAD && printf '[core]\\n\\tfsmonitor = x\\n' > config", location)
    expect([...bare.undone]).toEqual([join(location, "HEAD")])
    expect(Git.isGitDirectory(location)).toBe(false)
    // Through symbolic links, as git follows them: an objects directory linked, a HEAD that is a link to a ref.
    for (const made of ["mkdir -p objs refs && ln -s objs objects && echo 'ref: refs/heads/main' > HEAD", "mkdir -p objects refs/heads && ln -s refs/heads/main HEAD"]) {
      const linked = await run(`rm -rf objects objs refs HEAD && ${made}`, location)
      expect([...linked.undone]).toEqual([join(location, "HEAD")])
      expect(Git.isGitDirectory(location)).toBe(false)
    }
    // A HEAD that makes nothing a repository is the project's own.
    const plain = await run("rm -r objects refs && echo mine > HEAD", location)
    expect([...plain.undone]).toEqual([])
    expect(readFileSync(join(location, "HEAD"), "utf8")).toBe("mine\n")
  })

  // Only the places inside `.git` are read-only, not `.git` itself: a command moved the repository aside and put a
  // `.git` file in its place, pointing at a git directory it had filled (hooks, a config with core.fsmonitor and
  // another project's remote), which the user's git then ran, and whose remote became the Location's identity.
  test("a repository's .git moved aside and replaced: the replacement is taken out, the repository put back where it can be", async () => {
    // Where `.git` cannot be moved whole (the sandbox refuses a rename across directories, and mv copies instead,
    // failing on what is mounted), the swap fails or leaves a copy; where it moves whole, it is put back.
    const plain = Shell.make({}, { records: tempDir("core-runs-"), namespaces: false, keeping })
    for (const [replacement, producer] of [["file", shell], ["directory", shell], ["file", plain], ["directory", plain]] as const) {
      const location = repository()
      const before = Project.identityOf(location)
      const evil = replacement === "file" ? 'echo "gitdir: $PWD/build/cache/.git" > .git' : "mv build/cache/.git .git"
      const swap = [
        "git init -q build/cache",
        `printf '[core]\\n\\tfsmonitor = touch $PWD/fsmonitor-ran\\n[remote "origin"]\\n\\turl = git@github.com:acme/shop.git\\n' >> build/cache/.git/config`,
        "mkdir -p build && mv .git build/old",
        evil,
      ].join(" && ")
      const result = await run(swap, location, producer)
      if (result.exitCode === 0) expect(result.undone).toContain(join(location, ".git"))
      // Never the replacement: the repository as it was, or none where it could not be found whole.
      if (existsSync(join(location, ".git"))) {
        expect(readFileSync(join(location, ".git/config"), "utf8")).toBe("[core]\n\tbare = false\n")
        expect(readdirSync(join(location, ".git/hooks"))).toEqual(["pre-commit.sample"])
      }
      rmSync(join(location, "fsmonitor-ran"), { force: true })
      Bun.spawnSync(["git", "status"], { cwd: location, env: { PATH: process.env.PATH, HOME: location } })
      expect(existsSync(join(location, "fsmonitor-ran"))).toBe(false)
      expect(Project.identityOf(location)).toBe(before)
    }
  })

  // `git status` at the root looks into every populated gitlink (a repository checked out inside the work tree,
  // added with `git add`, no .gitmodules needed) with that repository's own config: its core.fsmonitor runs.
  test("a repository a command adds at a gitlink keeps its work, not what git would run; one a person added is read-only", async () => {
    const plant = (path: string) =>
      `git init -q ${path} && git -C ${path} -c user.name=m -c user.email=m@x -c core.hooksPath=/dev/null commit -q --allow-empty -m i && ` +
      `printf '[core]\\n\\tfsmonitor = touch $PWD/fsmonitor-ran\\n' >> ${path}/.git/config`
    const user = (location: string) => {
      rmSync(join(location, "fsmonitor-ran"), { force: true })
      expect(Bun.spawnSync(["git", "status", "--short"], { cwd: location, env: { PATH: process.env.PATH, HOME: location } }).exitCode).toBe(0)
      return existsSync(join(location, "fsmonitor-ran"))
    }
    // In one command, and in two (the repository made first, added to the index by the next).
    for (const steps of [[`${plant("vendor/lib")} && git add vendor/lib`], [plant("vendor/lib"), "git add vendor/lib"]]) {
      const location = tempDir("core-gitlink-")
      expect(Bun.spawnSync(["git", "init", "-q"], { cwd: location }).exitCode).toBe(0)
      let undone: Array<string> = []
      // Taken out by the first command's end where it made the repository, deeper in the Location (see below).
      for (const step of steps) undone = [...undone, ...(await run(step, location)).undone]
      expect(undone).toContain(join(location, "vendor/lib/.git/config"))
      // What runs code went from it; the rest stays.
      expect(readFileSync(join(location, "vendor/lib/.git/config"), "utf8")).not.toContain("fsmonitor")
      expect(existsSync(join(location, "vendor/lib/.git/HEAD"))).toBe(true)
      expect(user(location)).toBe(false)
    }
    // A submodule a person added (its git directory in .git/modules): its `.git` file is guarded with the repository
    // (read-only where mounts are had), and a command writing it again, where it can, leaves the person's config in
    // the submodule's git directory as it was.
    {
      const upstream = tempDir("core-upstream-")
      const location = tempDir("core-gitlink-")
      const git = (cwd: string, args: string) =>
        expect(Bun.spawnSync(["sh", "-c", `git -c user.name=p -c user.email=p@x -c protocol.file.allow=always ${args}`], { cwd }).exitCode).toBe(0)
      git(upstream, "init -q")
      git(upstream, "commit -q --allow-empty -m i")
      git(location, "init -q")
      git(location, `submodule add -q ${upstream} sub`)
      const config = readFileSync(join(location, ".git/modules/sub/config"), "utf8")
      // Older than the command by more than the clock's slack, as a person's submodule is (its config names a
      // core.worktree, a key a command may not set).
      await Bun.sleep(200)
      const plain = Shell.make({}, { records: tempDir("core-runs-"), namespaces: false, keeping })
      for (const producer of [shell, plain]) {
        const rewritten = await run("cp sub/.git g && rm sub/.git && mv g sub/.git", location, producer)
        if (MOUNTS && producer === shell) expect(rewritten.stderr.text).toMatch(/Read-only file system|Device or resource busy/)
        expect(readFileSync(join(location, ".git/modules/sub/config"), "utf8")).toBe(config)
        expect(readFileSync(join(location, "sub/.git"), "utf8")).toBe("gitdir: ../.git/modules/sub\n")
      }
    }
      // A clone the user keeps inside, `git add`ed by a command (`git add -A` adds it as a gitlink): it keeps its
    // config and hooks; and the Location's own repository reached through a gitlink (`self -> .`) keeps its own.
    {
      const location = tempDir("core-gitlink-")
      const setup = [
        "git init -q && git remote add origin https://example.com/acme/app.git",
        "git init -q lib && git -C lib remote add origin https://example.com/acme/lib.git",
        "git -C lib -c user.name=p -c user.email=p@x commit -q --allow-empty -m i",
        "printf '#!/bin/sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && cp .git/hooks/pre-commit lib/.git/hooks/pre-commit",
      ].join(" && ")
      expect(Bun.spawnSync(["sh", "-c", setup], { cwd: location }).exitCode).toBe(0)
      const libConfig = readFileSync(join(location, "lib/.git/config"), "utf8")
      const ownConfig = readFileSync(join(location, ".git/config"), "utf8")
      await Bun.sleep(200)
      const self = `h=$(printf . | git hash-object -w --stdin) && git update-index --add --cacheinfo 120000,$h,self && git checkout -- self && git rm -q --cached self && git update-index --add --cacheinfo 160000,${"1".repeat(40)},self`
      const added = await run(`git add -A 2>/dev/null; ${self}`, location)
      expect([...added.undone]).toEqual([])
      expect(readFileSync(join(location, "lib/.git/config"), "utf8")).toBe(libConfig)
      expect(existsSync(join(location, "lib/.git/hooks/pre-commit"))).toBe(true)
      expect(readFileSync(join(location, ".git/config"), "utf8")).toBe(ownConfig)
      expect(existsSync(join(location, ".git/hooks/pre-commit"))).toBe(true)
    }
  // A gitlink a person made: its config is read-only to commands, as the repository's own is.
    if (!MOUNTS) return
    const location = tempDir("core-gitlink-")
    const made = Bun.spawnSync(["sh", "-c", `git init -q && git init -q vendor/lib && git -C vendor/lib -c user.name=p -c user.email=p@x commit -q --allow-empty -m i && git add vendor/lib`], { cwd: location })
    expect(made.exitCode).toBe(0)
    const result = await run("printf '[core]\\n\\tfsmonitor = touch $PWD/fsmonitor-ran\\n' >> vendor/lib/.git/config", location)
    expect(result.stderr.text).toContain("Read-only file system")
    expect(user(location)).toBe(false)
  })

  test("with no mount namespace, what a command planted in git's places or the imported code is taken out, and the config put back", async () => {
    const plain = Shell.make({}, { records: tempDir("core-runs-"), namespaces: false, keeping })
    const location = repository()
    const result = await run(PLANT, location, plain)
    expect(result.exitCode).toBe(0)
    planted(location)
    expect(readFileSync(join(result.undoneKeptIn!, ".git/config"), "utf8")).toContain("hooksPath")
    expect(readFileSync(join(result.undoneKeptIn!, ".git/hooks/pre-commit"), "utf8")).toBe("evil\n")
  })

  test.skipIf(!MOUNTS)(`a person's save of an imported module or the git config while a command runs stays${needs}`, async () => {
    const location = repository()
    mkdirSync(join(location, "gate"))
    const fiber = Effect.runFork(
      shell.run({
        argv: [shell.shell, "-c", "touch gate/started; while [ ! -e gate/open ]; do sleep 0.01; done"],
        cwd: location,
        env: { PATH: process.env.PATH },
        sandbox: { location, approved: [] },
      }),
    )
    await until(join(location, "gate/started"))
    // As an editor saves: a new file renamed over the old one.
    for (const [path, text] of [["lib/fmt.ts", "export const mine = 1\n"], [".git/config", "[user]\n\tname = me\n"]]) {
      writeFileSync(join(location, `${path}.new`), text!)
      renameSync(join(location, `${path}.new`), join(location, path!))
    }
    writeFileSync(join(location, "gate/open"), "")
    const result = await Effect.runPromise(Fiber.join(fiber))
    expect(result.undone).toEqual([])
    expect(readFileSync(join(location, "lib/fmt.ts"), "utf8")).toBe("export const mine = 1\n")
    expect(readFileSync(join(location, ".git/config"), "utf8")).toBe("[user]\n\tname = me\n")
  })

  // The user's git runs the hooks and config of every repository they work in, outside any sandbox: not only the
  // Location's. A repository in a folder a person granted the command (approved for the call, shell.allowWrite),
  // one such a folder is, and a clone kept in a folder of the Location are guarded as the Location's repository is.
  describe("other repositories the command may write", () => {
    /** A repository of the user's, outside the temp directory, and the marker its planted code would make. */
    const usersRepository = (parent = tempDir("core-grant-", "/var/tmp"), name = "proj") => {
      const root = join(parent, name)
      Bun.spawnSync(["git", "init", "-q", root])
      return { parent, root, original: readFileSync(join(root, ".git/config"), "utf8"), marker: join(tempDir("core-marker-"), "ran") }
    }
    const plantIn = (root: string, marker: string) =>
      [
        `printf '#!/bin/sh\\ntouch ${marker}\\n' > ${root}/.git/hooks/pre-commit`,
        `chmod +x ${root}/.git/hooks/pre-commit`,
        `git -C ${root} config core.fsmonitor 'touch ${marker}'`,
        `printf '[core]\\n\\tfsmonitor = touch ${marker}\\n' >> ${root}/.git/config`,
        `mkdir -p ${root}/.git/info && echo '* filter=evil' > ${root}/.git/info/attributes`,
        "echo tried",
      ].join("; ")
    /** What the user's git runs there next: status and a commit. */
    const usersGitRuns = (root: string, marker: string) => {
      const env = { PATH: process.env.PATH, HOME: root }
      Bun.spawnSync(["git", "-C", root, "status", "--short"], { env, stdout: "ignore", stderr: "ignore" })
      Bun.spawnSync(["git", "-C", root, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "u"], {
        env,
        stdout: "ignore",
        stderr: "ignore",
      })
      return existsSync(marker)
    }
    const runIn = (command: string, location: string, approved: ReadonlyArray<string>, producer = shell) =>
      Effect.runPromise(
        producer.run({
          argv: [producer.shell, "-c", command],
          cwd: location,
          env: { PATH: process.env.PATH, HOME: location },
          sandbox: { location, approved },
        }),
      )
    const untouched = (root: string, original: string) => {
      expect(readFileSync(join(root, ".git/config"), "utf8")).toBe(original)
      expect(existsSync(join(root, ".git/hooks/pre-commit"))).toBe(false)
      expect(existsSync(join(root, ".git/info/attributes"))).toBe(false)
    }

    test("a repository in, or at, a directory approved for the call: its hooks, config and attributes stay the user's", async () => {
      for (const approvedIs of ["above", "at"] as const) {
        const { parent, root, original, marker } = usersRepository()
        const location = tempDir("core-loc-", "/var/tmp")
        const result = await runIn(plantIn(root, marker), location, [approvedIs === "above" ? parent : root])
        expect(result.stdout.text).toBe("tried\n")
        // Not held read-only (the command may remove the repository): put back, and taken out, when it ends.
        expect(result.undone).toEqual(
          expect.arrayContaining([join(root, ".git/config"), join(root, ".git/hooks/pre-commit"), join(root, ".git/info/attributes")]),
        )
        untouched(root, original)
        expect(usersGitRuns(root, marker)).toBe(false)
      }
    })

    test("the same for a repository shell.allowWrite grants, and a clone kept in a folder of the Location", async () => {
      const granted = usersRepository()
      const granting = Shell.make({ allowWrite: [granted.parent] }, { records: tempDir("core-runs-"), keeping })
      const location = tempDir("core-loc-", "/var/tmp")
      const result = await runIn(plantIn(granted.root, granted.marker), location, [], granting)
      expect(result.stdout.text).toBe("tried\n")
      untouched(granted.root, granted.original)
      expect(usersGitRuns(granted.root, granted.marker)).toBe(false)
      // A clone the user keeps two folders down in the Location (no submodule of it: the Location is no repository).
      const vendored = usersRepository(join(location, "vendor"), "lib")
      const again = await runIn(plantIn("vendor/lib", vendored.marker), location, [])
      expect(again.stdout.text).toBe("tried\n")
      untouched(vendored.root, vendored.original)
      expect(usersGitRuns(vendored.root, vendored.marker)).toBe(false)
    })

    // The repository is the user's: a command may remove it whole, as before it was guarded.
    test("a repository found may be removed whole (rm -rf, git clean), and cloned again in its place", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const kept = usersRepository(join(location, "vendor"), "z")
      const again = usersRepository(join(location, "vendor"), "y")
      const result = await runIn(`rm -rf vendor/z && rm -rf vendor/y && git init -q vendor/y && echo removed`, location, [])
      expect(result.stdout.text).toBe("removed\n")
      expect(existsSync(kept.root)).toBe(false)
      // The one made in its place is a made repository: its own, with what runs code taken out.
      expect(readFileSync(join(again.root, ".git/config"), "utf8")).toContain("repositoryformatversion")
      expect(existsSync(join(again.root, ".git/HEAD"))).toBe(true)
    })

    test("its .git renamed away and replaced by a copy of the command's is put back", async () => {
      const { parent, root, original, marker } = usersRepository()
      const location = tempDir("core-loc-", "/var/tmp")
      const swap = `cd ${root} && mv .git .git-old && cp -a .git-old .git && printf '[core]\\n\\tfsmonitor = touch ${marker}\\n' >> .git/config && echo swapped`
      const result = await runIn(swap, location, [parent])
      expect(result.stdout.text).toBe("swapped\n")
      expect(readFileSync(join(root, ".git/config"), "utf8")).toBe(original)
      expect(existsSync(join(root, ".git-old"))).toBe(false)
      expect(result.undone).toContain(join(root, ".git"))
      expect(usersGitRuns(root, marker)).toBe(false)
    })

    test("a repository the command makes at the approved directory keeps its work, not what git would run", async () => {
      const approved = tempDir("core-grant-", "/var/tmp")
      const marker = join(tempDir("core-marker-"), "ran")
      const location = tempDir("core-loc-", "/var/tmp")
      const result = await runIn(`git init -q ${approved} && git -C ${approved} config core.fsmonitor 'touch ${marker}' && echo made`, location, [approved])
      expect(result.stdout.text).toBe("made\n")
      expect(existsSync(join(approved, ".git/config"))).toBe(false)
      expect(existsSync(join(approved, ".git/objects"))).toBe(true)
      expect(result.undone).toContain(join(approved, ".git/config"))
      Bun.spawnSync(["git", "-C", approved, "status"], { env: { PATH: process.env.PATH, HOME: approved }, stdout: "ignore", stderr: "ignore" })
      expect(existsSync(marker)).toBe(false)
    })

    test("a repository the command makes deeper in the Location or an approved directory keeps its work, not what git would run", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const approved = tempDir("core-grant-", "/var/tmp")
      const marker = join(tempDir("core-marker-"), "ran")
      // Kept by the user before the command: untouched.
      const kept = usersRepository(join(location, "vendor"), "kept")
      const made = [join(location, "sub/repo"), join(approved, "a/b")]
      const planting = [
        ...made.map((root) => `git init -q ${root} && printf '[core]\\n\\tfsmonitor = touch ${marker}\\n' >> ${root}/.git/config`),
        `git init -q --bare ${location}/fixture.git && printf '#!/bin/sh\\ntouch ${marker}\\n' > ${location}/fixture.git/hooks/post-receive`,
        `git init -q ${location}/pointed && mv ${location}/pointed/.git ${location}/elsewhere && echo "gitdir: ${location}/elsewhere" > ${location}/pointed/.git`,
        "echo made",
      ].join(" && ")
      const result = await runIn(planting, location, [approved])
      expect(result.stdout.text).toBe("made\n")
      for (const root of made) {
        expect(readFileSync(join(root, ".git/config"), "utf8")).not.toContain("fsmonitor")
        expect(readFileSync(join(root, ".git/config"), "utf8")).toContain("repositoryformatversion")
        expect(existsSync(join(root, ".git/hooks"))).toBe(false)
        expect(existsSync(join(root, ".git/HEAD"))).toBe(true)
        expect(result.undone).toContain(join(root, ".git/config"))
        Bun.spawnSync(["git", "-C", root, "status"], { env: { PATH: process.env.PATH, HOME: root }, stdout: "ignore", stderr: "ignore" })
      }
      expect(existsSync(join(location, "fixture.git/hooks"))).toBe(false)
      expect(existsSync(join(location, "fixture.git/objects"))).toBe(true)
      // A .git file pointing at a git directory of the command's goes whole.
      expect(existsSync(join(location, "pointed/.git"))).toBe(false)
      expect(existsSync(marker)).toBe(false)
      expect(readFileSync(join(kept.root, ".git/config"), "utf8")).toBe(kept.original)
      expect(result.undone.some((path) => path.startsWith(kept.root))).toBe(false)
    })

    test("what git runs goes, not what a clone, a moved repository or a worktree needs: its remote, its config, its .git file", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const approved = usersRepository()
      const kept = usersRepository(join(location, "vendor"), "kept")
      const commit = (root: string) => `git -C ${root} -c user.name=m -c user.email=m@x commit -q --allow-empty -m i`
      const steps = [
        "git init -q sub && git -C sub remote add origin https://example.com/acme/lib.git",
        "git init -q sub2 && git -C sub2 remote add origin https://example.com/acme/two.git && git -C sub2 config credential.helper store",
        // A folder above the user's clone renamed: the same repository, moved.
        "mv vendor vendor2",
        `${commit(approved.root)} && git -C ${approved.root} worktree add -q ${approved.parent}/tree`,
        "echo done",
      ].join(" && ")
      const result = await runIn(steps, location, [approved.parent])
      expect(result.stdout.text).toBe("done\n")
      expect(readFileSync(join(location, "sub/.git/config"), "utf8")).toContain("https://example.com/acme/lib.git")
      // A key that runs code goes, not the file: the remote stays.
      expect(readFileSync(join(location, "sub2/.git/config"), "utf8")).toContain("https://example.com/acme/two.git")
      expect(readFileSync(join(location, "sub2/.git/config"), "utf8")).not.toContain("helper")
      expect(readFileSync(join(location, "vendor2/kept/.git/config"), "utf8")).toBe(kept.original)
      expect(readFileSync(join(approved.parent, "tree/.git"), "utf8")).toContain("worktrees/tree")
      // Only the hooks (git's samples) of the new repositories and of the one moved went, and the one key that runs code.
      expect(result.undone.toSorted()).toEqual(
        [join(location, "sub/.git/hooks"), join(location, "sub2/.git/config"), join(location, "sub2/.git/hooks"), join(location, "vendor2/kept/.git/hooks")].toSorted(),
      )
    })

    test("a repository added at a gitlink in node_modules of a guarded one, or a worktree pointed at another config, loses what git runs", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const kept = usersRepository(location, "proj")
      const evil = (root: string) => `git init -q ${root} && git -C ${root} -c user.name=m -c user.email=m@x commit -q --allow-empty -m e && git -C ${root} config core.fsmonitor 'touch ${kept.marker}'`
      const gitlink = `cd proj && ${evil("node_modules/evil")} && git update-index --add --cacheinfo 160000,$(git -C node_modules/evil rev-parse HEAD),node_modules/evil && cd ..`
      Bun.spawnSync(["git", "-C", location, "init", "-q"])
      Bun.spawnSync(["git", "-C", location, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "u"])
      const worktree = `git worktree add -q wt && cp -r .git/. other && git --git-dir=other config core.fsmonitor 'touch ${kept.marker}' && echo ../../../other > .git/worktrees/wt/commondir`
      const result = await runIn(`${gitlink} && ${worktree} && echo done`, location, [])
      expect(result.stdout.text).toBe("done\n")
      expect(result.undone).toEqual(expect.arrayContaining([join(location, "proj/node_modules/evil/.git/config"), join(location, ".git/worktrees/wt/commondir")]))
      expect(usersGitRuns(kept.root, kept.marker)).toBe(false)
      Bun.spawnSync(["git", "-C", join(location, "wt"), "status"], { env: { PATH: process.env.PATH, HOME: location }, stdout: "ignore", stderr: "ignore" })
      expect(existsSync(kept.marker)).toBe(false)
    })

    // What a command could make where the searches looked no further: a repository inside a bare one, a submodule's
    // git directory in a made repository's `.git/modules` (or the Location's own, its checkout removed), a folder
    // made earlier and moved in as a `.git`, a `.git` file through a link out of the folders searched.
    test("repositories made inside git directories, or pointed at through links, lose what git runs; a made one's submodule keeps its checkout", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const marker = join(tempDir("core-marker-"), "ran")
      const away = tempDir("core-away-")
      const env = { PATH: process.env.PATH, HOME: location }
      const git = (cwd: string, ...args: ReadonlyArray<string>) =>
        Bun.spawnSync(["git", "-c", "user.name=u", "-c", "user.email=u@x", "-c", "protocol.file.allow=always", ...args], { cwd, env, stdout: "ignore", stderr: "ignore" })
      expect(git(location, "init", "-q").exitCode).toBe(0)
      expect(git(location, "commit", "-q", "--allow-empty", "-m", "u").exitCode).toBe(0)
      const fsmonitor = (gitDir: string) => `printf '[core]\\n\\tfsmonitor = touch ${marker}\\n' >> ${gitDir}/config`
      const hook = (gitDir: string) => `mkdir -p ${gitDir}/hooks && printf '#!/bin/sh\\ntouch ${marker}\\n' > ${gitDir}/hooks/post-checkout && chmod +x ${gitDir}/hooks/post-checkout`
      const first = await runIn(`mkdir -p pre/hooks && printf '#!/bin/sh\\ntouch ${marker}\\n' > pre/hooks/pre-commit && chmod +x pre/hooks/pre-commit && echo ok`, location, [])
      expect(first.stdout.text).toBe("ok\n")
      const g = "git -c user.name=m -c user.email=m@x -c protocol.file.allow=always"
      const steps = [
        `git init -q --bare B && git init -q B/work && ${fsmonitor("B/work/.git")}`,
        `git init -q src && ${g} -C src commit -q --allow-empty -m s`,
        `git init -q X && ${g} -C X submodule add -q ../src m && ${g} -C X commit -q -m x && ${hook("X/.git/modules/m")} && ${fsmonitor("X/.git/modules/m")}`,
        `${g} submodule add -q ./src m 2>/dev/null; ${g} commit -q -m m; ${hook(".git/modules/m")}; rm -rf m`,
        `git init -q evil && cp -r evil/.git/. pre/ && rm -rf evil/.git && mv pre evil/.git && ${g} -C evil commit -q --allow-empty -m e && git add evil`,
        `git init -q ${away}/w && ${fsmonitor(`${away}/w/.git`)} && ln -s ${away}/w/.git .git/lnk && mkdir -p P && echo "gitdir: ${location}/.git/lnk" > P/.git`,
        "echo made",
      ].join("; ")
      const result = await runIn(steps, location, [])
      expect(result.stdout.text).toContain("made\n")
      expect(result.undone).toEqual(
        expect.arrayContaining([
          join(location, "B/work/.git/config"),
          join(location, "X/.git/modules/m/config"),
          join(location, "X/.git/modules/m/hooks"),
          join(location, ".git/modules/m/hooks"),
          join(location, "evil/.git/hooks"),
          join(location, "P/.git"),
        ]),
      )
      // The made repository's submodule is still checked out.
      expect(readFileSync(join(location, "X/m/.git"), "utf8")).toContain("modules/m")
      // What the command's own git ran of it, in the sandbox, is not the question: the user's git is.
      rmSync(marker, { force: true })
      const ran = (step: string, cwd: string, ...args: ReadonlyArray<string>) => {
        git(join(location, cwd), ...args)
        return [step, existsSync(marker)]
      }
      for (const cwd of ["B/work", "X", "X/m", "evil", "P", "."]) expect(ran(`status in ${cwd}`, cwd, "status")).toEqual([`status in ${cwd}`, false])
      expect(ran("X's submodule update", "X", "submodule", "update", "--init")).toEqual(["X's submodule update", false])
      expect(ran("submodule update", ".", "submodule", "update", "--init")).toEqual(["submodule update", false])
      expect(ran("commit in evil", "evil", "commit", "-q", "--allow-empty", "-m", "u")).toEqual(["commit in evil", false])
    })

    test("a config kept with another name (a hard link) gets a file of its own; core.json written through one is put back", async () => {
      const location = configured()
      const marker = join(tempDir("core-marker-"), "ran")
      // A person's link to core.json, made before.
      Bun.spawnSync(["ln", join(location, "core.json"), join(location, "notes.json")])
      // In the same folder (a link across folders may need Landlock's right to refer, not granted everywhere).
      const first = await runIn("git init -q sub && ln sub/.git/config sub/.git/notes && echo linked", location, [])
      expect([first.stdout.text, first.stderr.text]).toEqual(["linked\n", ""])
      const second = await runIn(
        `printf '[core]\\n\\tfsmonitor = touch ${marker}\\n' >> sub/.git/notes && echo '{ "permission": { "bash": "allow" } }' > notes.json && echo wrote`,
        location,
        [],
      )
      expect(second.stdout.text).toBe("wrote\n")
      unchanged(location)
      expect(second.undone).toContain(join(location, "core.json"))
      Bun.spawnSync(["git", "-C", join(location, "sub"), "status"], { env: { PATH: process.env.PATH, HOME: location }, stdout: "ignore", stderr: "ignore" })
      expect(existsSync(marker)).toBe(false)
    })

    test("a nested clone's worktree stays removable, its .git file put back if rewritten; a clone's submodules keep their remote", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const env = { PATH: process.env.PATH, HOME: location }
      const git = (cwd: string, ...args: ReadonlyArray<string>) =>
        expect(Bun.spawnSync(["git", "-c", "user.name=u", "-c", "user.email=u@x", "-c", "protocol.file.allow=always", ...args], { cwd, env, stdout: "ignore", stderr: "ignore" }).exitCode).toBe(0)
      const app = join(location, "vendor/app")
      git(location, "init", "-q", "vendor/app")
      git(app, "commit", "-q", "--allow-empty", "-m", "a")
      git(app, "worktree", "add", "-q", "../wt-one")
      git(app, "worktree", "add", "-q", "../wt-two")
      git(location, "init", "-q", "up/lib")
      git(join(location, "up/lib"), "commit", "-q", "--allow-empty", "-m", "l")
      git(location, "init", "-q", "up/super")
      git(join(location, "up/super"), "submodule", "add", "-q", "../lib", "lib")
      git(join(location, "up/super"), "commit", "-q", "-m", "s")
      const pointer = readFileSync(join(location, "vendor/wt-two/.git"), "utf8")
      const g = "git -c user.name=m -c user.email=m@x -c protocol.file.allow=always"
      const result = await runIn(
        `${g} -C vendor/app worktree remove ../wt-one && echo "gitdir: $PWD/evil" > vendor/wt-two/.git && ${g} clone -q --recurse-submodules ./up/super s2 && echo done`,
        location,
        [],
      )
      expect(result.stdout.text).toBe("done\n")
      expect(existsSync(join(location, "vendor/wt-one"))).toBe(false)
      expect(readFileSync(join(location, "vendor/wt-two/.git"), "utf8")).toBe(pointer)
      expect(readFileSync(join(location, "s2/.git/modules/lib/config"), "utf8")).toContain("[remote \"origin\"]")
      git(join(location, "s2"), "submodule", "status")
    })

    test("a relative core.hooksPath is each work tree's: a worktree's, found or made, is guarded as the repository's", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const marker = join(tempDir("core-marker-"), "ran")
      const env = { PATH: process.env.PATH, HOME: location }
      const git = (...args: ReadonlyArray<string>) =>
        expect(Bun.spawnSync(["git", "-C", location, "-c", "user.name=u", "-c", "user.email=u@x", ...args], { env, stdout: "ignore", stderr: "ignore" }).exitCode).toBe(0)
      git("init", "-q")
      git("commit", "-q", "--allow-empty", "-m", "u")
      git("worktree", "add", "-q", "wt")
      // The user's hooks, kept in each work tree.
      git("config", "core.hooksPath", ".githooks")
      const hook = (tree: string) => `mkdir -p ${tree}/.githooks && printf '#!/bin/sh\\ntouch ${marker}\\n' > ${tree}/.githooks/pre-commit && chmod +x ${tree}/.githooks/pre-commit`
      const hooks = readdirSync(join(location, ".git/hooks"))
      // And another checkout of the repository's own git directory, by a `.git` file: its hooks folder goes, never
      // the repository's places.
      const alias = `mkdir sub && echo "gitdir: ${location}/.git" > sub/.git && ${hook("sub")}`
      const result = await runIn(`${hook("wt")} && git worktree add -q wt2 && ${hook("wt2")} && ${alias} && echo planted`, location, [])
      expect(result.stdout.text).toBe("planted\n")
      rmSync(marker, { force: true })
      expect(result.undone).toEqual(expect.arrayContaining([join(location, "wt/.githooks"), join(location, "wt2/.githooks"), join(location, "sub/.githooks")]))
      expect(readdirSync(join(location, ".git/hooks"))).toEqual(hooks)
      for (const tree of ["wt", "wt2", "sub"]) {
        Bun.spawnSync(["git", "-C", join(location, tree), "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "u"], { env, stdout: "ignore", stderr: "ignore" })
      }
      expect(existsSync(marker)).toBe(false)
    })

    // Its places were noted where it was and no mount holds them: a repository a command moved (or moved a folder
    // above) is one it made; and nothing is touched through a link the command put on the way to them.
    test("a repository moved by the command loses what git runs; a link on the way leads core nowhere; a linked hooks folder is guarded", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const marker = join(tempDir("core-marker-"), "ran")
      // Named as the repository the command moves away, so that a link in its folder's place leads to this one.
      const victim = usersRepository(tempDir("core-victim-", "/var/tmp"), "w")
      const victimHooks = readdirSync(join(victim.root, ".git/hooks"))
      const moved = usersRepository(join(location, "vendor"), "x")
      const above = usersRepository(join(location, "lib"), "w")
      const linked = usersRepository(join(location, "tools-repo"), "h")
      mkdirSync(join(linked.root, "githooks"))
      renameSync(join(linked.root, ".git/hooks"), join(linked.root, "old-hooks"))
      symlinkSync("../githooks", join(linked.root, ".git/hooks"))
      const hook = (dir: string) => `printf '#!/bin/sh\\ntouch ${marker}\\n' > ${dir}/pre-commit && chmod +x ${dir}/pre-commit`
      const steps = [
        `mv vendor/x vendor/y && ${hook("vendor/y/.git/hooks")}`,
        `mv lib lib2 && git -C lib2/w config core.fsmonitor 'touch ${marker}' && ln -s ${victim.parent} lib`,
        hook("tools-repo/h/githooks"),
        "echo done",
      ].join(" && ")
      const result = await runIn(steps, location, [])
      expect(result.stdout.text).toBe("done\n")
      rmSync(marker, { force: true })
      // Nothing of the repository outside was touched through the link.
      expect(readFileSync(join(victim.root, ".git/config"), "utf8")).toBe(victim.original)
      expect(readdirSync(join(victim.root, ".git/hooks"))).toEqual(victimHooks)
      expect(result.undone).toEqual(
        expect.arrayContaining([join(location, "vendor/y/.git/hooks"), join(location, "lib2/w/.git/config"), join(linked.root, "githooks/pre-commit")]),
      )
      const env = { PATH: process.env.PATH, HOME: location }
      for (const root of [join(location, "vendor/y"), join(location, "lib2/w"), linked.root]) {
        Bun.spawnSync(["git", "-C", root, "status"], { env, stdout: "ignore", stderr: "ignore" })
        Bun.spawnSync(["git", "-C", root, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "u"], { env, stdout: "ignore", stderr: "ignore" })
      }
      expect(existsSync(marker)).toBe(false)
      expect(readFileSync(join(location, "vendor/y/.git/config"), "utf8")).toBe(moved.original)
      expect(existsSync(join(location, "lib2/w/.git/HEAD"))).toBe(above.original !== "")
    })

    test("a repository moved with a link left in its place is a moved one; a folder a link's target may make a bare repository later is one already", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const marker = join(tempDir("core-marker-"), "ran")
      const moved = usersRepository(join(location, "vendor"), "a")
      const hook = (dir: string) => `printf '#!/bin/sh\\ntouch ${marker}\\n' > ${dir}/pre-commit && chmod +x ${dir}/pre-commit`
      const first = await runIn(
        `mv vendor/a vendor/c && ln -s c vendor/a && ${hook("vendor/c/.git/hooks")} && git -C vendor/c config core.fsmonitor 'touch ${marker}' && ` +
          `mkdir -p src/refs node_modules/x && echo 'ref: refs/heads/main' > src/HEAD && ln -s ../node_modules/x/objects src/objects && printf '[core]\\n\\tfsmonitor = touch ${marker}\\n' > src/config && echo one`,
        location,
        [],
      )
      expect(first.stdout.text).toBe("one\n")
      expect(first.undone).toEqual(expect.arrayContaining([join(location, "vendor/c/.git/hooks"), join(location, "vendor/c/.git/config")]))
      expect(readFileSync(join(location, "vendor/c/.git/config"), "utf8")).toBe(moved.original)
      // Its `objects` a link to nothing yet (git would take it once its target is made, in a folder no search lists):
      // taken for a repository now, whose config loses what runs code.
      expect(first.undone).toContain(join(location, "src/config"))
      expect(readFileSync(join(location, "src/config"), "utf8")).not.toContain("fsmonitor")
      await Bun.sleep(150)
      const second = await runIn(`mkdir node_modules/x/objects && printf '[core]\\n\\tfsmonitor = touch ${marker}\\n' >> src/config && echo two`, location, [])
      expect(second.stdout.text).toBe("two\n")
      expect(second.undone).toContain(join(location, "src/config"))
      expect(readFileSync(join(location, "src/config"), "utf8")).not.toContain("fsmonitor")
    })

    // The user's own config may name a hooks folder (or an include) anywhere, a Location among them: a repository a
    // command makes there takes none of it with it. (The guard reads the user's config from the process's home: a
    // core of its own, in a child process, with a home made here.)
    test("a made repository never takes what the user's own config names outside its work tree", () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const home = tempDir("core-home-", "/var/tmp")
      mkdirSync(join(location, "githooks"))
      writeFileSync(join(location, "githooks/pre-commit"), "#!/bin/sh\n# the user's secret scan\n", { mode: 0o755 })
      writeFileSync(join(home, ".gitconfig"), `[core]\n\thooksPath = ${join(location, "githooks")}\n`)
      const script = [
        `import { Guard } from ${JSON.stringify(join(import.meta.dir, "../../src/shell/guard"))}`,
        `const guarded = Guard.begin(${JSON.stringify(location)}, ${JSON.stringify(keeping)}, [], false, [${JSON.stringify(location)}])`,
        `Bun.spawnSync(["git", "init", "-q", ${JSON.stringify(join(location, "sub"))}])`,
        "console.log(JSON.stringify(guarded.finish(true).paths))",
      ].join("\n")
      const child = Bun.spawnSync([process.execPath, "-e", script], { env: { PATH: process.env.PATH, HOME: home }, stderr: "pipe" })
      expect(child.stderr.toString()).toBe("")
      expect(JSON.parse(child.stdout.toString())).toEqual([join(location, "sub/.git/hooks")])
      expect(readdirSync(join(location, "githooks"))).toEqual(["pre-commit"])
    })

    // Two commands of one Location at once: a repository the first made is no user's to the second, whose end would
    // otherwise put back, as the user's, the config the first planted (after the first's end had taken it out).
    test("a repository a command still running made is not the user's to a command started beside it", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const marker = join(tempDir("core-marker-"), "ran")
      const first = runIn(`git init -q sub && git -C sub config core.fsmonitor 'touch ${marker}' && touch made.flag && sleep 1`, location, [])
      await until(join(location, "made.flag"))
      const second = runIn("sleep 2; mv sub sub-away && mkdir -p sub/.git && cp -r sub-away/.git/HEAD sub-away/.git/objects sub-away/.git/refs sub/.git/ && echo moved", location, [])
      expect((await first).exitCode).toBe(0)
      expect((await second).stdout.text).toBe("moved\n")
      for (const repository of ["sub", "sub-away"]) {
        Bun.spawnSync(["git", "-C", join(location, repository), "status"], { env: { PATH: process.env.PATH, HOME: location }, stdout: "ignore", stderr: "ignore" })
      }
      expect(existsSync(marker)).toBe(false)
    })

    test("a link put on the way to a guarded repository is not followed when its .git is put back", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const kept = usersRepository(join(location, "vendor"), "lib")
      const away = tempDir("core-away-")
      const user = statSync(join(kept.root, ".git")).ino
      const result = await runIn(`mv vendor vendor-away && ln -s ${away} vendor && git init -q vendor/lib && echo swapped`, location, [])
      expect(result.stdout.text).toBe("swapped\n")
      // The user's .git is where the command moved it, not moved on through the link; the command's is its own.
      expect(statSync(join(location, "vendor-away/lib/.git")).ino).toBe(user)
      expect(statSync(join(away, "lib/.git")).ino).not.toBe(user)
      expect(readFileSync(join(location, "vendor-away/lib/.git/config"), "utf8")).toBe(kept.original)
    })

    test("with no mount namespace, what a command planted in a granted repository is taken out and its config put back", () => {
      const { parent, root, original } = usersRepository()
      const location = tempDir("core-loc-", "/var/tmp")
      const guarded = Guard.begin(location, keeping, [], true, [parent], undefined, undefined, [parent])
      writeFileSync(join(root, ".git/hooks/pre-commit"), "#!/bin/sh\ntouch /tmp/planted\n", { mode: 0o755 })
      writeFileSync(join(root, ".git/config"), `${original}[core]\n\tfsmonitor = touch /tmp/planted\n`)
      // No mount kept anything read-only.
      const undone = guarded.finish(false)
      expect(readFileSync(join(root, ".git/config"), "utf8")).toBe(original)
      expect(existsSync(join(root, ".git/hooks/pre-commit"))).toBe(false)
      expect(undone.paths).toEqual(expect.arrayContaining([join(root, ".git/config"), join(root, ".git/hooks/pre-commit")]))
    })

    // Two commands of one Location at once: the first's end undoes what it made of a repository by path, while the
    // second may swap a folder on the way for a link (to the Location), or move the Location's own .git there. Acted
    // on by path, core (root here) moved the Location's .git/config and hooks aside and wrote the repository's config
    // in its place. The second's moves are made here between the first's begin and its end.
    describe("a command's end, against another command of the Location moving folders meanwhile", () => {
      const setUp = () => {
        const location = tempDir("core-loc-", "/var/tmp")
        Bun.spawnSync(["git", "init", "-q", location])
        writeFileSync(join(location, ".git/hooks/pre-commit"), "#!/bin/sh\n# the user's own hook\n", { mode: 0o755 })
        const own = { config: readFileSync(join(location, ".git/config"), "utf8"), hooks: readdirSync(join(location, ".git/hooks")).sort() }
        const nested = join(location, "vendor/x")
        Bun.spawnSync(["git", "init", "-q", nested])
        const original = readFileSync(join(nested, ".git/config"), "utf8")
        const guarded = Guard.begin(location, keeping)
        // The first command's doing: a line in the repository's config and a hook of its own.
        writeFileSync(join(nested, ".git/config"), `${original}# changed by the first\n`)
        writeFileSync(join(nested, ".git/hooks/post-checkout"), "#!/bin/sh\ntouch /tmp/planted\n", { mode: 0o755 })
        const untouched = () => {
          expect(readFileSync(join(location, ".git/config"), "utf8")).toBe(own.config)
          expect(readdirSync(join(location, ".git/hooks")).sort()).toEqual(own.hooks)
          expect(readFileSync(join(location, ".git/hooks/pre-commit"), "utf8")).toBe("#!/bin/sh\n# the user's own hook\n")
        }
        return { location, nested, original, guarded, untouched }
      }

      test("the repository's folder swapped for a link to the Location: its config is put back where it is, the Location's untouched", () => {
        const { location, nested, original, guarded, untouched } = setUp()
        renameSync(nested, `${nested}-real`)
        symlinkSync(location, nested)
        const undone = guarded.finish(true)
        rmSync(nested)
        renameSync(`${nested}-real`, nested)
        untouched()
        expect(readFileSync(join(nested, ".git/config"), "utf8")).toBe(original)
        expect(existsSync(join(nested, ".git/hooks/post-checkout"))).toBe(false)
        expect(undone.paths).toEqual(expect.arrayContaining([join(`${nested}-real`, ".git/config")]))
      })

      // As it was found: the race is won now and then (a round in four), so each round of twenty must hold.
      test("the repository's folder swapped for a link to the Location as fast as a command can while the first ends: the Location is never touched", async () => {
        for (let round = 0; round < 20; round++) {
          const { location, nested, guarded, untouched } = setUp()
          symlinkSync(location, `${nested}-link`)
          const flipper = Bun.spawn([process.execPath, join(import.meta.dir, "flip-child.ts"), nested, `${nested}-link`], { stdin: "pipe", stdout: "pipe" })
          await flipper.stdout.getReader().read()
          guarded.finish(true)
          flipper.stdin.end()
          expect(await flipper.exited).toBe(0)
          expect(lstatSync(nested).isDirectory()).toBe(true)
          untouched()
        }
      }, 60_000)

      // What a review of the change found, each by one command (or what it leaves for this end): a folder the guard
      // notes moved under a place (taken apart, or whole, as the command's), a made repository's config linked to a
      // file only core may read (read through the link, and written where the command reads it), a repository's
      // folder moved before the Location's .git was moved into it (not moved back), a link to core's own folder on
      // the way to a missing import (the user's file there taken).
      test("the Location's .git moved into a repository's hooks, or a folder of a moved repository: never taken, and moved back", () => {
        for (const moves of ["mv .git vendor/x/.git/hooks/sub", "mv vendor/x vendor/x2 && mv .git vendor/x2/own-git"]) {
          const { location, guarded, untouched } = setUp()
          Bun.spawnSync(["bash", "-c", moves], { cwd: location })
          const undone = guarded.finish(true)
          expect([moves, undone.paths]).toEqual([moves, expect.arrayContaining([join(location, ".git")])])
          untouched()
        }
      })

      test("a made repository's config that is a link is taken whole, never read through as core", () => {
        const { location, guarded } = setUp()
        const secret = join(tempDir("core-secret-"), "gitconfig")
        writeFileSync(secret, "[http]\n\textraheader = AUTHORIZATION: bearer SECRET-TOKEN\n", { mode: 0o600 })
        Bun.spawnSync(["bash", "-c", `git init -q vendor/y && rm vendor/y/.git/config && ln -s ${secret} vendor/y/.git/config`], { cwd: location })
        const undone = guarded.finish(true)
        expect(undone.paths).toContain(join(location, "vendor/y/.git/config"))
        expect(existsSync(join(location, "vendor/y/.git/config"))).toBe(false)
        expect(Bun.spawnSync(["grep", "-rl", "SECRET-TOKEN", location]).stdout.toString()).toBe("")
        expect(readFileSync(secret, "utf8")).toContain("SECRET-TOKEN")
      })

      test("a link to core's own folder put on the way to a missing import: nothing of the user's there is taken", () => {
        const location = tempDir("core-loc-", "/var/tmp")
        mkdirSync(join(location, "tools/sub"), { recursive: true })
        writeFileSync(join(location, "core.json"), "{}")
        writeFileSync(join(location, "tools/hi.ts"), 'import { x } from "../lib2/helper"\nexport default x\n')
        writeFileSync(join(location, "tools/sub/helper.ts"), "export const x = 1\n")
        const guarded = Guard.begin(location, keeping)
        symlinkSync("tools/sub", join(location, "lib2"))
        guarded.finish(true)
        expect(readFileSync(join(location, "tools/sub/helper.ts"), "utf8")).toBe("export const x = 1\n")
      })

      test("the Location's .git moved into the repository's place: it is not taken for the repository's, and is moved back", () => {
        const { location, nested, original, guarded, untouched } = setUp()
        renameSync(join(nested, ".git"), join(nested, ".git-aside"))
        renameSync(join(location, ".git"), join(nested, ".git"))
        const undone = guarded.finish(true)
        // Put back by this end (`unmade`), or else by the other command's.
        if (!existsSync(join(location, ".git"))) renameSync(join(nested, ".git"), join(location, ".git"))
        renameSync(join(nested, ".git-aside"), join(nested, ".git"))
        untouched()
        expect(readFileSync(join(nested, ".git/config"), "utf8")).toBe(original)
        expect(existsSync(join(nested, ".git/hooks/post-checkout"))).toBe(false)
        expect(undone.paths).toContain(join(location, ".git"))
      })
    })

    test("the search finds bare repositories, those inside them and a .git's submodules and worktrees; not node_modules or git's object folders", async () => {
      const parent = tempDir("core-grant-", "/var/tmp")
      const init = (...args: ReadonlyArray<string>) => expect(Bun.spawnSync(["git", "init", "-q", ...args]).exitCode).toBe(0)
      init("--bare", join(parent, "served.git"))
      init(join(parent, "served.git/work"))
      init(join(parent, "a/b/c"))
      init(join(parent, "a/b/c/inner"))
      init(join(parent, "node_modules/pkg"))
      // A folder named as git names its own is walked into like any other, but not one of a git directory.
      init(join(parent, "objects/hooks/d"))
      // In a bare repository, what git fills (objects/ab, objects/pack) is not walked; anything else is, so a folder
      // made to look like a git directory (HEAD, objects, refs) hides nothing in its info/ or refs/.
      init(join(parent, "served.git/objects/zz"))
      init(join(parent, "served.git/objects/ab/in-objects"))
      init(join(parent, "served.git/info/app"))
      mkdirSync(join(parent, "fake/objects"), { recursive: true })
      mkdirSync(join(parent, "fake/refs"))
      writeFileSync(join(parent, "fake/HEAD"), "ref: refs/heads/main\n")
      init(join(parent, "fake/info/app"))
      init(join(parent, "fake/refs/app"))
      // A submodule's git directory in a .git (git keeps them there), with what a command could hide in it.
      init("--bare", join(parent, "a/b/c/.git/modules/x"))
      init("--bare", join(parent, "a/b/c/.git/modules/hooks"))
      init("--bare", join(parent, "served.git/modules/objects"))
      init(join(parent, "a/b/c/.git/hooks/y"))
      expect(Repositories.under([parent]).repositories.toSorted()).toEqual(
        [
          join(parent, "a/b/c"),
          join(parent, "a/b/c/.git/modules/x"),
          join(parent, "a/b/c/.git/modules/hooks"),
          join(parent, "served.git/modules/objects"),
          join(parent, "a/b/c/inner"),
          join(parent, "objects/hooks/d"),
          join(parent, "served.git"),
          join(parent, "served.git/work"),
          join(parent, "served.git/objects/zz"),
          join(parent, "served.git/info/app"),
          join(parent, "fake"),
          join(parent, "fake/info/app"),
          join(parent, "fake/refs/app"),
        ].toSorted(),
      )
      // Where no watch can be set on it, a folder changed within a tick or so of its listing is listed again next
      // time, whatever its stamp says (a kernel with coarse timestamps leaves it unchanged by a second change in the
      // same tick); with a watch, its watch says whether it changed.
      const fresh = tempDir("core-fresh-", "/var/tmp")
      const stamps: Array<readonly [string, string]> = []
      const unlimited = Watched.limitedTo(0)
      try {
        Listing.list(fresh, stamps)
        expect(stamps).toEqual([[fresh, "racy"]])
        await Bun.sleep(150)
        Listing.list(fresh, stamps)
        expect(stamps[1]).toEqual([fresh, Listing.stampOf(fresh)])
      } finally {
        unlimited()
      }
      // Listed unwatched, it stands by its stamp until it changes; then a watching walk reads it again, watched.
      Listing.list(fresh, stamps)
      expect(stamps[2]).toEqual([fresh, Listing.stampOf(fresh)])
      writeFileSync(join(fresh, "new"), "")
      Listing.list(fresh, stamps, "watching")
      expect(stamps[3]![0]).toBe(fresh)
      expect(stamps[3]![1]).toStartWith("watched:")
      // Where the file system keeps whole seconds (no fraction in either stamp), a listing is not trusted for two
      // seconds and a tick: an entry added later in the same second (or FAT's two) leaves the stamps as they were.
      expect(Listing.racyFor({ ctimeMs: 1_764_547_200_123.456, mtimeMs: 1_764_547_200_123.456 })).toBe(100)
      expect(Listing.racyFor({ ctimeMs: 1_764_547_200_000, mtimeMs: 1_764_547_199_000 })).toBe(2_100)
      expect(Listing.racyFor({ ctimeMs: 1_764_547_200_000, mtimeMs: 1_764_547_199_500 })).toBe(100)
      // One made since is found (the folders it changed are listed again); past the bound, the walk says so.
      init(join(parent, "a/later"))
      expect(Repositories.under([parent]).repositories).toContain(join(parent, "a/later"))
      const folders = Repositories.under([parent], { folders: 3, entries: 1_000_000 })
      expect(folders.partial).toBe(true)
      expect(folders.stoppedAt).toBeString()
      expect(Repositories.under([parent], { folders: 1_000_000, entries: 3 }).partial).toBe(true)
      // Files count as entries only: a folder of many files is no nearer the bound on folders.
      const files = tempDir("core-files-")
      for (let index = 0; index < 50; index++) writeFileSync(join(files, `f${index}`), "")
      expect(Repositories.under([files], { folders: 2, entries: 1_000 })).toEqual({ repositories: [], partial: false })
      expect(Repositories.under([files], { folders: 2, entries: 49 })).toEqual({ repositories: [], partial: true, stoppedAt: files, stoppedBy: "bound" })
      // The kernel's filesystems hold no repository (nobody makes a file there): a grant of /proc/1 or /sys is not
      // walked, or every search would stop at its bound or at a folder like /proc/1/map_files.
      for (const kernel of ["/proc", "/proc/1", "/sys", "/sys/kernel"]) {
        expect(Repositories.under([kernel], { folders: 2, entries: 10 })).toEqual({ repositories: [], partial: false })
      }
      expect(Repositories.under(["/proc", files], { folders: 2, entries: 1_000 })).toEqual({ repositories: [], partial: false })
      // A folder it cannot list (moved past the longest path the kernel takes; as another user, made unreadable)
      // may hide a repository: the walk stops there.
      const deep = tempDir("core-deep-")
      const name = "d".repeat(200)
      Bun.spawnSync(["bash", "-c", `for i in $(seq 22); do mkdir ${name} && cd ${name} || exit 1; done; git init -q hidden`], { cwd: deep })
      const shut = Repositories.under([deep])
      expect(shut.partial).toBe(true)
      expect(shut.stoppedBy).toBe("shut")
      expect(shut.stoppedAt!.length).toBeGreaterThan(4096)
      expect(shut.code).toBe("ENAMETOOLONG")
      // A folder whose name is not UTF-8 cannot be looked at by any path core has: the walk stops there too.
      const latin = tempDir("core-latin-")
      expect(Bun.spawnSync(["python3", "-c", "import os, subprocess; os.mkdir(b'caf\\xe9'); subprocess.run([b'git', b'init', b'-q', b'caf\\xe9/hidden'], check=True)"], { cwd: latin }).exitCode).toBe(0)
      expect(Repositories.under([latin])).toEqual({ repositories: [], partial: true, stoppedAt: join(latin, "caf\uFFFD"), stoppedBy: "shut", code: "EILSEQ" })
      // Beside a file, folder or link whose name is U+FFFD written in UTF-8 (which a path made of the name read leads
      // to), the same.
      for (const sibling of ["echo y > $'\\xef\\xbf\\xbd'", "mkdir $'\\xef\\xbf\\xbd'", "ln -s /nowhere $'\\xef\\xbf\\xbd'"]) {
        const beside = tempDir("core-beside-")
        expect(Bun.spawnSync(["bash", "-c", `mkdir -p $'\\xff'/repo/.git && ${sibling}`], { cwd: beside }).exitCode).toBe(0)
        expect(Repositories.under([beside])).toMatchObject({ partial: true, stoppedAt: join(beside, "\uFFFD"), code: "EILSEQ" })
      }
      mkdirSync(join(latin, "\uFFFD-named"))
      init(join(latin, "\uFFFD-named/found"))
      expect(Bun.spawnSync(["python3", "-c", "import shutil; shutil.rmtree(b'caf\\xe9')"], { cwd: latin }).exitCode).toBe(0)
      expect(Repositories.under([latin])).toEqual({ repositories: [join(latin, "\uFFFD-named/found")], partial: false })
      // A folder gone, or no longer a folder, by the time it is listed is no such folder: the walk goes on.
      expect(Listing.shut(join(deep, "gone"))).toBeUndefined()
      writeFileSync(join(deep, "file"), "")
      expect(Listing.shut(join(deep, "file"))).toBeUndefined()
      // Nor is a link where git keeps other git directories (`.git/modules` -> /): never walked through.
      const linked = tempDir("core-linked-")
      init(join(linked, "sub"))
      symlinkSync("/", join(linked, "sub/.git/modules"))
      expect(Listing.list(join(linked, "sub/.git/modules"), [])).toBeUndefined()
      expect(Repositories.under([linked])).toEqual({ repositories: [join(linked, "sub")], partial: false })
      rmSync(join(deep, name), { recursive: true, force: true })
    })

    // What core takes for a repository, and where a `.git` file points, must be what git takes: a reading of its own
    // that differs leaves a repository git runs and core never strips.
    test("a .git file and a bare repository are read as git reads them: a trailing space, an objects that is a file", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const env = { PATH: process.env.PATH, HOME: location, GIT_CONFIG_NOSYSTEM: "1" }
      for (const args of [["init", "-q"], ["-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "u"]]) {
        expect(Bun.spawnSync(["git", ...args], { cwd: location, env }).exitCode).toBe(0)
      }
      const marker = join(tempDir("core-marker-"), "ran")
      const config = `[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tfsmonitor = \\"touch ${marker}; false\\"\\n`
      // git reads `gitdir: ../.git ` as `../.git ` (a link to a repository in node_modules, which is not searched).
      const pointed = await runIn(
        `mkdir -p node_modules sub && git init -q --bare node_modules/evil && printf '${config}' > node_modules/evil/config && ` +
          `ln -s node_modules/evil '.git ' && printf 'gitdir: ../.git \\n' > sub/.git && echo made`,
        location,
        [],
      )
      expect(pointed.stdout.text).toBe("made\n")
      expect(pointed.undone).toContain(join(location, "sub/.git"))
      expect(usersGitRuns(join(location, "sub"), marker)).toBe(false)
      // git takes a folder for a git directory by an `objects` it may enter: an executable file too.
      const elsewhere = tempDir("core-loc-", "/var/tmp")
      const bare = await runIn(
        `for d in . sub; do mkdir -p $d/refs && printf 'ref: refs/heads/main\\n' > $d/HEAD && printf '#!/bin/sh\\n' > $d/objects && ` +
          `chmod +x $d/objects && printf '${config.replace("bare = false", "bare = false\\\\n\\\\tworktree = .")}' > $d/config; done; echo made`,
        elsewhere,
        [],
      )
      expect(bare.stdout.text).toBe("made\n")
      // At the Location its HEAD goes (so it is no repository), deeper what git would run of it.
      expect(bare.undone).toEqual(expect.arrayContaining([join(elsewhere, "HEAD"), join(elsewhere, "sub/config")]))
      expect(usersGitRuns(elsewhere, marker)).toBe(false)
      expect(usersGitRuns(join(elsewhere, "sub"), marker)).toBe(false)
    })

    // git takes a folder for its own git directory where its `.git` is not one (a junk file, an empty folder, a `.git`
    // whose HEAD was moved away): a HEAD, objects and config put in the folder would be what the user's git runs.
    test("a folder whose .git git rejects, made a git directory itself: it loses the HEAD that makes it one", async () => {
      const location = tempDir("core-loc-", "/var/tmp")
      const env = { PATH: process.env.PATH, HOME: location, GIT_CONFIG_NOSYSTEM: "1" }
      const commit = ["-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "u"]
      for (const args of [["init", "-q"], commit]) expect(Bun.spawnSync(["git", ...args], { cwd: location, env }).exitCode).toBe(0)
      usersRepository(location, "kept")
      const marker = join(tempDir("core-marker-"), "ran")
      const overlay = (dir: string) =>
        `printf 'ref: refs/heads/master\\n' > ${dir}/HEAD && mkdir -p ${dir}/objects ${dir}/refs && ` +
        `printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = '$PWD/${dir}'\\n\\tfsmonitor = \\"touch ${marker}; false\\"\\n' > ${dir}/config`
      const result = await runIn(
        [
          // Made in the command: a junk `.git` file, an empty `.git` folder.
          "mkdir -p x y && echo junk > x/.git && mkdir y/.git",
          overlay("x"),
          overlay("y"),
          // The Location's own repository and a clone found before: their `.git/HEAD` moved away.
          "mv .git/HEAD .git/HEAD.x",
          overlay("."),
          "mv kept/.git/HEAD kept/.git/HEAD.x",
          overlay("kept"),
          "echo made",
        ].join(" && "),
        location,
        [],
      )
      expect(result.stdout.text).toBe("made\n")
      expect(result.undone).toEqual(
        expect.arrayContaining([join(location, "x/HEAD"), join(location, "y/HEAD"), join(location, "HEAD"), join(location, "kept/HEAD")]),
      )
      for (const dir of ["x", "y", ".", "kept"]) expect(usersGitRuns(join(location, dir), marker)).toBe(false)
    })

    // A hostile command can fill a folder past what core searches: then core cannot say which repositories the next
    // command may write, nor which the last one made, and fails closed rather than let a hook it could not find stay
    // unnoticed.
    test("a search that cannot finish fails closed: the command left too many folders, or there are too many before one", async () => {
      // Smaller bounds than core's (200,000 folders; making and removing that many takes a minute here).
      const folders = 2_000
      const restore = Repositories.boundedAt({ folders, entries: 100_000 })
      try {
        const guards = tempDir("core-guards-")
        const here = Shell.make({}, { records: tempDir("core-runs-"), keeping, guards })
        const location = tempDir("core-loc-", "/var/tmp")
        const marker = join(tempDir("core-marker-"), "ran")
        // The repository at depth 3, past the flood's folders at depth 2 in a breadth-first search.
        const flood =
          `node -e 'const fs = require("fs"); fs.mkdirSync("flood"); for (let i = 0; i <= ${folders}; i++) fs.mkdirSync("flood/d" + i)'`
        const result = await runIn(
          `git init -q deep/a/repo && printf '#!/bin/sh\\ntouch ${marker}\\n' > deep/a/repo/.git/hooks/pre-commit && ` +
            `chmod +x deep/a/repo/.git/hooks/pre-commit && ${flood} && echo made`,
          location,
          [],
          here,
        )
        expect(result.stdout.text).toBe("made\n")
        // What core could not find it says it could not find, and the folders are refused until a person has looked.
        expect(existsSync(join(location, "deep/a/repo/.git/hooks/pre-commit"))).toBe(true)
        expect(result.unchecked).toContain(`ran left more than ${folders.toLocaleString("en-US")} folders`)
        expect(result.unchecked).toContain(location)
        const records = readdirSync(guards).filter((name) => name.endsWith(".json"))
        expect(records).toHaveLength(1)
        const record = join(guards, records[0]!)
        expect(result.unchecked).toContain(`then to remove ${record}. Do not retry until then.`)
        expect(Guard.stale(guards, location).map((found) => found.changed)).toEqual([[location]])
        expect(Guard.staleMessage(location, Guard.stale(guards, location))).toContain(`core will not load ${location} or run commands in it`)
        const refusedWith = (producer: Shell.Interface) =>
          runIn("echo ran > ran.txt", location, [], producer).then(
            () => undefined,
            (cause: unknown) => cause as { readonly code?: string; readonly message?: string },
          )
        // Refused by this core and by another sharing the data directory, even once the folders are gone, until the
        // record is removed.
        rmSync(join(location, "flood"), { recursive: true })
        for (const producer of [here, Shell.make({}, { records: tempDir("core-runs-"), keeping, guards })]) {
          const refused = await refusedWith(producer)
          expect(refused?.code).toBe("EUNSEARCHED")
          expect(refused?.message).toContain(`core will not load ${location} or run commands in it`)
        }
        expect(existsSync(join(location, "ran.txt"))).toBe(false)
        rmSync(record)
        expect((await runIn("echo ran", location, [], here)).stdout.text).toBe("ran\n")
        // Too many folders there before a command: it does not start.
        Bun.spawnSync(["node", "-e", `const fs = require("fs"); fs.mkdirSync("flood"); for (let i = 0; i <= ${folders}; i++) fs.mkdirSync("flood/d" + i)`], {
          cwd: location,
        })
        const refused = await refusedWith(here)
        expect(refused?.code).toBe("EUNSEARCHED")
        expect(refused?.message).toContain(`core did not run the command: before each command core searches ${location}`)
        expect(refused?.message).toContain(`more than ${folders.toLocaleString("en-US")} folders`)
        expect(existsSync(join(location, "ran.txt"))).toBe(false)
        rmSync(join(location, "flood"), { recursive: true })
      } finally {
        restore()
      }
    })

    test("a repository a command made in a folder whose name is not UTF-8 is not passed over: its folders are refused until a person has looked", async () => {
      const guards = tempDir("core-guards-")
      const here = Shell.make({}, { records: tempDir("core-runs-"), keeping, guards })
      const location = tempDir("core-loc-", "/var/tmp")
      const result = await runIn(
        `mkdir $'caf\\xe9' && git init -q $'caf\\xe9/repo' && printf '#!/bin/sh\\ntouch /tmp/x\\n' > $'caf\\xe9/repo/.git/hooks/pre-commit' && echo made`,
        location,
        [],
        here,
      )
      expect(result.stdout.text).toBe("made\n")
      expect(result.unchecked).toContain(`${join(location, "caf\uFFFD")} (its name is not UTF-8, so core cannot look at it by name)`)
      const refused = await runIn("echo ran", location, [], here).then(
        () => undefined,
        (cause: unknown) => cause as { readonly code?: string },
      )
      expect(refused?.code).toBe("EUNSEARCHED")
    })
  })

  test("a call whose change to core's configuration a person approved may make it", async () => {
    const location = configured()
    const result = await Effect.runPromise(
      shell.run({
        argv: [shell.shell, "-c", "echo '{}' > core.json; echo x > tools/x.ts; mkdir -p .core/y"],
        cwd: location,
        env: { PATH: process.env.PATH },
        sandbox: { location, approved: [], configuration: true },
      }),
    )
    expect(result.exitCode).toBe(0)
    expect(result.undone).toEqual([])
    expect(readFileSync(join(location, "core.json"), "utf8")).toBe("{}\n")
    expect(readFileSync(join(location, "tools/x.ts"), "utf8")).toBe("x\n")
  })

  test("a command with no sandbox policy is not guarded, and with the sandbox off nothing is", async () => {
    const location = tempDir("core-loc-")
    await Effect.runPromise(shell.run({ argv: ["mkdir", "tools"], cwd: location }))
    expect(existsSync(join(location, "tools"))).toBe(true)
    const off = Shell.make({ sandbox: "off" }, { records: tempDir("core-runs-") })
    const other = tempDir("core-loc-")
    const result = await run("mkdir plugins", other, off)
    expect(existsSync(join(other, "plugins"))).toBe(true)
    expect(result.undone).toEqual([])
  })

  test.skipIf(!MOUNTS)(`a person's change to core.json while a command runs stays: only the command's are undone${needs}`, async () => {
    const location = configured()
    mkdirSync(join(location, "gate"))
    const fiber = Effect.runFork(
      shell.run({
        argv: [shell.shell, "-c", "touch gate/started; while [ ! -e gate/open ]; do sleep 0.01; done"],
        cwd: location,
        env: { PATH: process.env.PATH },
        sandbox: { location, approved: [] },
      }),
    )
    await until(join(location, "gate/started"))
    writeFileSync(join(location, "core.json"), '{ "permission": { "bash": "deny" } }')
    writeFileSync(join(location, "gate/open"), "")
    const result = await Effect.runPromise(Fiber.join(fiber))
    expect(result.undone).toEqual([])
    expect(readFileSync(join(location, "core.json"), "utf8")).toBe('{ "permission": { "bash": "deny" } }')
  })

  test("the Location is busy while a command runs, and idle only once what it created is gone", async () => {
    const location = tempDir("core-loc-")
    mkdirSync(join(location, "gate"))
    expect(Guard.busy(location)).toBe(false)
    const fiber = Effect.runFork(
      shell.run({
        argv: [shell.shell, "-c", "mkdir tools; echo x > tools/x.ts; while [ ! -e gate/open ]; do sleep 0.01; done"],
        cwd: location,
        env: { PATH: process.env.PATH },
        sandbox: { location, approved: [] },
      }),
    )
    await until(join(location, "tools/x.ts"))
    expect(existsSync(join(location, "tools/x.ts"))).toBe(true)
    expect(Guard.busy(location)).toBe(true)
    let idle = false
    const waiting = Guard.idle(location).then(() => {
      idle = true
      return existsSync(join(location, "tools"))
    })
    expect(idle).toBe(false)
    writeFileSync(join(location, "gate/open"), "")
    expect(await waiting).toBe(false)
    expect((await Effect.runPromise(Fiber.join(fiber))).undone).toEqual([join(location, "tools")])
    expect(Guard.busy(location)).toBe(false)
  })
})
