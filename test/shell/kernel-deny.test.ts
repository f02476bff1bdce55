// What the kernel enforces for a sandboxed command, through the compiled binary: a file the agent's `read` rules
// deny reads as empty to every program (python, tar, a script: programs core has no operand table for), through a
// symbolic link or a hard link made before the call too, and it cannot be renamed away, nor the folders holding it;
// core.json's `denyRead` of a
// Location folder hides it while the Location still takes new files; and each command has a PID namespace and a
// /proc of its own, so it sees no other process (core's command line and environment included), while `ps`, `$$`
// and job control still work. Mounting needs root or a user namespace, and the PID namespace root: where missing,
// the tests say they skip.

import { beforeAll, describe, expect, test } from "bun:test"
import { existsSync, linkSync, readFileSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { exec, type Sandbox, sandbox, settlementOf, start } from "../cli/fixture"
import { binary } from "../support/binary"
import { Landlock } from "../../src/shell/landlock"
import { Native } from "../../src/shell/native"

const SECRET = "TOKEN=s3cr3t-kernel"

const READ_DENIED = JSON.stringify({ permission: { "*": "allow", read: { "*.env": "deny" } } })

const root = Native.capable(Native.CAP_SYS_ADMIN)
const landlock = Landlock.abi() > 0
if (!root) console.log("kernel-deny: core is not root here: the mount and PID namespace tests skip")
if (!landlock) console.log("kernel-deny: no Landlock here: the sandbox tests skip")
const when = root && landlock ? test : test.skip

beforeAll(async () => {
  await binary()
}, 300_000)

/** Runs `command` with --yes (code in another language is asked) and answers its stdout, stderr and status. */
const run = async (box: Sandbox, command: string) => {
  const result = await exec(box, "bash", { command }, ["--yes"])
  const settlement = settlementOf(result)
  const structured = settlement.structured as { stdout: string; stderr: string; exitCode: number }
  return { status: settlement.status, ...structured, settlement }
}

const secrets = (files: Record<string, string> = {}): Sandbox =>
  sandbox({ "core.json": READ_DENIED, "app.env": `${SECRET}\n`, "sub/deep.env": `${SECRET}\n`, "notes.txt": "hello\n", ...files })

describe("a file the read rules deny, in the kernel", () => {
  when("python, tar and a script read it as empty, and every other file as it is", async () => {
    const box = secrets({
      "w.sh": "while read -r f; do printf '%s=[%s]\\n' \"$f\" \"$(cat \"$f\")\"; done < list\n",
      list: "app.env\nsub/deep.env\nnotes.txt\n",
    })
    const python = await run(
      box,
      `python3 -c 'import glob; [print(f, repr(open(f).read())) for f in sorted(glob.glob("**/*.*", recursive=True)) if "e" in f[-4:]]'`,
    )
    expect(python.status).toBe("success")
    expect(python.stdout).toContain("app.env ''")
    expect(python.stdout).toContain("sub/deep.env ''")
    expect(python.stdout).not.toContain(SECRET)
    const tar = await run(box, "tar c . | tar xO")
    expect(tar.stdout).toContain("hello")
    expect(tar.stdout).not.toContain(SECRET)
    const script = await run(box, "bash w.sh")
    expect(script.stdout).toContain("notes.txt=[hello]")
    expect(script.stdout).toContain("app.env=[]")
    expect(script.stdout).not.toContain(SECRET)
    // On disk it is untouched.
    expect(readFileSync(join(box.location, "app.env"), "utf8")).toBe(`${SECRET}\n`)
  })

  when("a symbolic link or a hard link made before the call reads as empty too", async () => {
    const box = secrets()
    symlinkSync(join(box.location, "app.env"), join(box.location, "alias.txt"))
    symlinkSync("../app.env", join(box.location, "sub", "relative.txt"))
    linkSync(join(box.location, "sub", "deep.env"), join(box.location, "hard.txt"))
    const read = await run(
      box,
      `python3 -c 'for f in ["alias.txt", "sub/relative.txt", "hard.txt", "notes.txt"]: print(f, repr(open(f).read()))'`,
    )
    expect(read.status).toBe("success")
    expect(read.stdout).toBe("alias.txt ''\nsub/relative.txt ''\nhard.txt ''\nnotes.txt 'hello\\n'\n")
  })

  when("it cannot be renamed, removed, written or hard-linked from under its cover", async () => {
    const box = secrets()
    const moved = await run(
      box,
      `python3 -c '
import os
for op in [lambda: os.rename("app.env", "moved.txt"), lambda: os.unlink("app.env"), lambda: open("app.env", "w"), lambda: os.link("app.env", "hard.txt")]:
    try:
        op(); print("done")
    except OSError as e:
        print(e.strerror)
'`,
    )
    expect(moved.stdout).toBe("Device or resource busy\nDevice or resource busy\nRead-only file system\nInvalid cross-device link\n")
    expect(existsSync(join(box.location, "moved.txt"))).toBe(false)
    expect(readFileSync(join(box.location, "app.env"), "utf8")).toBe(`${SECRET}\n`)
  })

  // Renamed, its folder would carry it to a name the rules allow, and the read tool would read it there once the
  // command ended. Each folder between a covered file and the Location is pinned: it cannot be renamed or removed,
  // what is in it changes as before.
  when("the folders holding it cannot be renamed or removed, so no tool reads it under another name afterwards", async () => {
    const box = secrets({ "a/b/c.env": `${SECRET}\n`, "a/b/notes.txt": "hello\n" })
    const moved = await run(
      box,
      `python3 -c '
import os
for op in [lambda: os.rename("sub", "other"), lambda: os.rename("a", "z"), lambda: os.rename("a/b", "a/y"), lambda: os.rmdir("a/b")]:
    try:
        op(); print("done")
    except OSError as e:
        print(e.strerror)
open("a/b/new.txt", "w").write("made")
os.rename("a/b/new.txt", "a/b/renamed.txt")
os.unlink("a/b/notes.txt")
print(sorted(os.listdir("a/b")))
'`,
    )
    expect(moved.stdout).toBe(
      "Device or resource busy\nDevice or resource busy\nDevice or resource busy\nDevice or resource busy\n['c.env', 'renamed.txt']\n",
    )
    for (const path of ["other/deep.env", "z/b/c.env", "a/y/c.env"]) expect(existsSync(join(box.location, path))).toBe(false)
    const read = settlementOf(await exec(box, "read", { filePath: "sub/deep.env" }))
    expect(read.status).toBe("error")
    expect(JSON.stringify(read)).not.toContain(SECRET)
  })

  // Bound without what was mounted under it, a pinned folder showed the git hooks and the skills writable: a
  // command planted a pre-commit hook the user's next commit ran, outside any sandbox.
  when("a protected folder under a pinned one stays read-only: the git hooks and the agents' skills", async () => {
    const box = sandbox({
      "core.json": JSON.stringify({ permission: { "*": "allow", read: { "*": "allow", ".git/config": "deny", ".claude/settings.local.json": "deny" } } }),
      ".claude/settings.local.json": "{}\n",
      ".claude/skills/a.md": "ok\n",
    })
    expect(Bun.spawnSync(["git", "init", "-q"], { cwd: box.location }).exitCode).toBe(0)
    const planted = await run(
      box,
      `python3 -c '
for p in [".git/hooks/pre-commit", ".claude/skills/evil.md"]:
    try:
        open(p, "w").write("planted"); print("wrote")
    except OSError as e:
        print(e.strerror)
'`,
    )
    expect(planted.stdout).toBe("Read-only file system\nRead-only file system\n")
    expect(existsSync(join(box.location, ".git/hooks/pre-commit"))).toBe(false)
    expect(existsSync(join(box.location, ".claude/skills/evil.md"))).toBe(false)
  })

  when("names with spaces and newlines are covered", async () => {
    const box = secrets({ "my secret.env": `${SECRET}\n`, "two\nlines.env": `${SECRET}\n` })
    const read = await run(box, `python3 -c 'print(repr(open("my secret.env").read()), repr(open("two\\nlines.env").read()))'`)
    expect(read.stdout).toBe("'' ''\n")
  })

  when("a file the command creates under a denied name is its own: not covered", async () => {
    const box = secrets()
    const made = await run(box, `python3 -c 'open("new.env", "w").write("mine"); print(open("new.env").read())'`)
    expect(made.stdout).toBe("mine\n")
  })

  when("without a read deny rule, nothing is covered", async () => {
    const box = sandbox({ "app.env": `${SECRET}\n` })
    const read = await run(box, `python3 -c 'print(open("app.env").read())'`)
    expect(read.stdout).toBe(`${SECRET}\n\n`)
  })
})

describe("core.json's denyRead of a Location folder", () => {
  when("hides the folder while the Location still takes new files", async () => {
    const box = sandbox({
      "core.json": JSON.stringify({ shell: { denyRead: ["private", "top.key"] } }),
      "private/key.txt": `${SECRET}\n`,
      "top.key": `${SECRET}\n`,
      "notes.txt": "hello\n",
    })
    const read = await run(
      box,
      `python3 -c '
import os
print(os.listdir("private"), repr(open("top.key").read()))
open("fresh.txt", "w").write("new"); os.mkdir("made"); print("written")
'`,
    )
    expect(read.status).toBe("success")
    expect(read.stdout).toBe("[] ''\nwritten\n")
    expect(readFileSync(join(box.location, "fresh.txt"), "utf8")).toBe("new")
    expect(existsSync(join(box.location, "made"))).toBe(true)
    expect(readFileSync(join(box.location, "private", "key.txt"), "utf8")).toBe(`${SECRET}\n`)
  })
})

describe("each command's own PID namespace", () => {
  when("the command sees no other process: not core's command line, not another program's environment", async () => {
    const other = Bun.spawn(["sleep", "1000"], { stdout: "ignore", env: { ...process.env, OTHER_SECRET: "other-secret" } })
    const busy = sandbox()
    const running = await start(busy, ["exec", "bash", "--input", JSON.stringify({ command: "echo ready; sleep 1000" }), "--location", busy.location])
    try {
      await running.stderrContains("progress: ready\n")
      const core = running.child.pid
      const box = sandbox()
      const inside = await run(
        box,
        `cat /proc/${core}/cmdline /proc/${other.pid}/environ /proc/${process.pid}/cmdline 2>&1; ps -eo pid=,comm=`,
      )
      expect(inside.status).toBe("success")
      expect(inside.stdout).not.toContain("other-secret")
      expect(inside.stdout).not.toContain("exec")
      expect(inside.stdout.match(/No such file or directory/g)).toHaveLength(3)
      // Only its supervisor (pid 1), the command's shell and ps itself: not core, not the other sleep.
      const listed = inside.stdout.trim().split("\n").filter((line) => /^\s*\d+ \S+$/.test(line)).map((line) => line.trim().split(" "))
      expect(listed[0]![0]).toBe("1")
      expect(listed.length).toBeLessThanOrEqual(3)
      expect(listed.map(([, comm]) => comm)).not.toContain("sleep")
      expect(listed.at(-1)![1]).toBe("ps")
    } finally {
      other.kill("SIGKILL")
      running.child.kill("SIGINT")
      await running.finished()
    }
  })

  when("$$, ps, kill %1 and job control in bash -lc still work", async () => {
    const box = sandbox()
    // The job is bash until its fork has exec'd sleep: ps is asked again until then (a loaded machine is slow to).
    const settled = 'for try in $(seq 100); do [ "$(ps -o comm= -p $!)" = sleep ] && break; sleep 0.02; done'
    const line = `bash -lc 'set -m; sleep 100 & ${settled}; ps -o pid=,comm= -p $! ; kill %1; wait $!; echo "ended $?"; echo "me $$"'`
    const result = await run(box, line)
    expect(result.status).toBe("success")
    expect(result.stdout).toMatch(/^\s*\d+ sleep\nended 143\nme \d+\n$/)
  })
})
