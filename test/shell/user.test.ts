// core run by a user who is not root, as developers run it: no PID namespace for a command, no capabilities. Its
// sandboxed command still cannot end its supervisor and leave something hidden running (the supervisor never shares
// the command's Landlock domain), nor write outside its Location. Run as an unprivileged user (65534) when the tests
// run as root and the checkout is readable by that user; real processes throughout.

import { describe, expect, test } from "bun:test"
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Landlock } from "../../src/shell/landlock"
import { Starter } from "../../src/shell/starter"
import { tempDir } from "../support/temp"
import { alive, named } from "./processes"

const USER = 65534
const CHILD = join(import.meta.dir, "user-child.ts")
const setpriv = Bun.which("setpriv")

/** Runs `argv` as the unprivileged user, in /tmp, with a home of its own. */
const asUser = (argv: ReadonlyArray<string>, home: string) =>
  Bun.spawnSync([setpriv!, `--reuid=${USER}`, `--regid=${USER}`, "--clear-groups", ...argv], {
    cwd: "/tmp",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home },
  })

/** A directory the unprivileged user owns. */
const owned = (prefix: string) => {
  const directory = tempDir(prefix)
  chownSync(directory, USER, USER)
  return directory
}

/** Whether the unprivileged user can run this checkout's tests (root here, setpriv, every path readable). */
const possible = (): boolean => {
  if (process.getuid?.() !== 0 || setpriv === null || Landlock.abi() < 6) return false
  const shell = join(import.meta.dir, "..", "..", "src", "shell", "shell.ts")
  return asUser([process.execPath, "-e", `await import(${JSON.stringify(shell)})`], owned("core-user-home-")).exitCode === 0
}
const runnable = possible()

/** The user's processes that run a command's reaper (Starter `reaperFor`): what the shell that is one runs. */
const reapers = (): Array<number> =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return statSync(`/proc/${pid}`).uid === USER && readFileSync(`/proc/${pid}/cmdline`, "latin1").includes("kill -9 -1")
      } catch {
        return false
      }
    })
    .map(Number)

const run = (command: string, frozen?: { readonly name: string; readonly text: string }) => {
  const home = owned("core-user-home-")
  const records = owned("core-user-runs-")
  const cwd = owned("core-user-cwd-")
  if (frozen !== undefined) {
    writeFileSync(join(cwd, frozen.name), frozen.text)
    chownSync(join(cwd, frozen.name), USER, USER)
  }
  const child = asUser([process.execPath, CHILD, records, cwd, command, ...(frozen === undefined ? [] : [frozen.name])], home)
  const line = child.stdout.toString().trim().split("\n").pop() ?? ""
  if (!line.startsWith("{")) throw new Error(`the child failed: ${child.stderr.toString()}`)
  return { cwd, result: JSON.parse(line) }
}

describe.skipIf(!runnable)(`core run by a user who is not root${runnable ? "" : " (SKIPPED: not root, no setpriv or Landlock 6, or checkout unreadable)"}`, () => {
  test("a sandboxed command cannot signal its supervisor, and what it hid from the call ends with it", () => {
    const hidden = `core-hidden-${crypto.randomUUID().slice(0, 8)}`
    const { result } = run(
      `id -u; (env -i setsid bash -c 'exec -a ${hidden} sleep 1000' &); sleep 0.3
       tasks=(/proc/$PPID/task/*); echo "threads: \${#tasks[@]}"
       for task in "\${tasks[@]}"; do kill -0 "\${task##*/}" 2>/dev/null && echo "signalled \${task##*/}"; done
       kill -KILL $PPID 2>/dev/null; echo "kill: $?"`,
    )
    expect(result.uid).toBe(USER)
    expect(result.stdout).toMatch(new RegExp(`^${USER}\\nthreads: ([2-9]|\\d{2,})\\nkill: 1\\n$`))
    expect(result.exitCode).toBe(0)
    expect(result.signal).toBeNull()
    expect(named(hidden)).toEqual([])
  })

  test("the sandbox holds: the command writes in its Location, not in a folder of the user's outside it", () => {
    const outside = owned("core-user-outside-")
    const { cwd, result } = run(`echo kept > inside; echo "$?"; echo lost > ${outside}/file; echo "$?"`)
    expect(result.stdout).toBe("0\n1\n")
    // Refused by Landlock, or first by the read-only mount the folder is in the command's mount namespace.
    expect(result.stderr).toMatch(/Permission denied|Read-only file system/)
    expect(readFileSync(join(cwd, "inside"), "utf8")).toBe("kept\n")
    expect(readdirSync(outside)).toEqual([])
  })

  // What the edit rules deny is read-only in the command's mount namespace, made in a user namespace here.
  test("a file the edit rules deny reads as it is and cannot be changed, renamed or removed, by any program", () => {
    const { cwd, result } = run(
      `cat frozen.txt; echo; echo changed > frozen.txt; echo "$?"; mv frozen.txt moved.txt; echo "$?"; rm -f frozen.txt; echo "$?"`,
      { name: "frozen.txt", text: "kept" },
    )
    expect(result.stdout).toMatch(/^kept\n1\n1\n1\n$/)
    expect(readFileSync(join(cwd, "frozen.txt"), "utf8")).toBe("kept")
  })

  test("nor does it change the mode, times or attributes of the user's files outside it: a key stays the user's alone", () => {
    const outside = owned("core-user-outside-")
    const key = join(outside, "id_ed25519")
    writeFileSync(key, "key\n", { mode: 0o600 })
    chownSync(key, USER, USER)
    const before = statSync(key)
    const { cwd, result } = run(
      `chmod 644 ${key}; echo "chmod $?"; touch -m -d 2001-01-01 ${key}; echo "touch $?"
       python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.planted", b"1")' ${key} 2>/dev/null; echo "xattr $?"
       echo mine > own; chmod 755 own; echo "own $?"`,
    )
    expect(result.stdout).toBe("chmod 1\ntouch 1\nxattr 1\nown 0\n")
    expect(result.stderr).toContain("Read-only file system")
    const after = statSync(key)
    expect(after.mode & 0o777).toBe(0o600)
    expect(after.mtimeMs).toBe(before.mtimeMs)
    expect(statSync(join(cwd, "own")).mode & 0o777).toBe(0o755)
  })

  // A folder a command left read-only in its own temp folder made the cleanup throw: `core exec` ended with an
  // operational failure (exit 3) and the command's output was lost; the temp folder stayed.
  test("what a command leaves read-only in its temp folder is removed after it; its output stands; a link out is not followed", () => {
    const outside = owned("core-user-outside-")
    chmodSync(outside, 0o555)
    const { result } = run(
      `d=$(mktemp -d); mkdir "$d/ro" "$d/none"; echo x > "$d/ro/f"; chmod 555 "$d/ro"; chmod 000 "$d/none"
       ln -s ${outside} "$d/link"; chmod 500 "$d"; echo "$TMPDIR"; echo done`,
    )
    const [temporary, said] = result.stdout.trim().split("\n")
    expect({ said, exitCode: result.exitCode, stderr: result.stderr }).toEqual({ said: "done", exitCode: 0, stderr: "" })
    // The call's own temp folder (the home is under /tmp here): removed whole.
    expect(temporary).toStartWith("/tmp/core-call-")
    expect(existsSync(temporary!)).toBe(false)
    expect(statSync(outside).mode & 0o777).toBe(0o555)
  })

  // Approving `ls /root/.cargo/bin` stopped the command before it started: the search for repositories in what the
  // call may write met /root/.cargo, which this user cannot reach, and refused the folders as hiding something.
  test("a folder beneath one of another user's that this user may neither write nor enter hides nothing; one beneath its own does", () => {
    const mine = owned("core-user-shut-")
    mkdirSync(join(mine, "parent", "child"), { recursive: true })
    chownSync(join(mine, "parent"), USER, USER)
    chownSync(join(mine, "parent", "child"), USER, USER)
    chmodSync(join(mine, "parent"), 0o444)
    const listing = join(import.meta.dir, "..", "..", "src", "shell", "listing.ts")
    const script = `const { Listing } = await import(${JSON.stringify(listing)}); console.log(JSON.stringify([Listing.shut("/root/.cargo"), Listing.shut(${JSON.stringify(join(mine, "parent", "child"))})]))`
    const child = asUser([process.execPath, "-e", script], owned("core-user-home-"))
    expect(JSON.parse(child.stdout.toString())).toEqual([null, "EACCES"])
  })

  // What the system's own permissions keep from the user was said to be the sandbox's, to be granted in core.json.
  test("a path the user's own permissions keep out is not named as the sandbox's", () => {
    // And one in the Location the user shut (a folder it may not enter): read from the output, it failed the call.
    const { result } = run("ls /root/.cargo 2>&1; cat /root/.bashrc 2>&1; mkdir shut; chmod 000 shut; ls shut/x 2>&1; chmod 755 shut; echo done")
    expect(result.stdout).toContain("Permission denied")
    expect(result.stdout).toEndWith("done\n")
    expect(result.refused).toEqual([])
  })

  // Every rename or link into another directory failed with EXDEV here: the supervisor's Landlock layer (the signal
  // scope) handled no filesystem right so that the starter in it could mount, and Landlock then takes REFER as denied
  // by it. The starter now seals itself after its mounts, in a layer that grants REFER, and leaves the reaper there.
  test("a file renamed or linked into another directory, as git mv does; the command's reaper leaves with the call", async () => {
    const { cwd, result } = run(
      `mkdir a b c && echo x > a/f && python3 -c 'import os; os.rename("a/f", "b/f")' && ln b/f c/g && cat b/f c/g
       git init -q r && cd r && echo y > y && git add y && git -c user.name=u -c user.email=u@x commit -qm one
       mkdir d && git mv y d/y && git status --short`,
    )
    expect({ stdout: result.stdout, stderr: result.stderr, exitCode: result.exitCode }).toEqual({ stdout: "x\nx\nR  y -> d/y\n", stderr: "", exitCode: 0 })
    expect(readFileSync(join(cwd, "r", "d", "y"), "utf8")).toBe("y\n")
    // Its pipe closed with the supervisor, the reaper ends: nothing of the call is left running.
    let left = reapers()
    for (let tries = 0; tries < 100 && left.length > 0; tries++) {
      await Bun.sleep(20)
      left = reapers()
    }
    expect(left).toEqual([])
  })

  // The reaper gone (the machine ran out of memory and took it, or a person's `pkill sh`): the supervisor must not
  // make the kill(-1) itself, which outside the command's PID namespace would reach every process of the user, core's
  // among them. It searches for what is left instead.
  test("its reaper killed from outside, what the command leaves still ends with the call, and nothing else of the user's", async () => {
    const home = owned("core-user-home-")
    const cwd = owned("core-user-cwd-")
    const hidden = `core-hidden-${crypto.randomUUID().slice(0, 8)}`
    const bystander = Bun.spawn([setpriv!, `--reuid=${USER}`, `--regid=${USER}`, "--clear-groups", "sleep", "60"], { stdio: ["ignore", "ignore", "ignore"] })
    const child = Bun.spawn(
      [setpriv!, `--reuid=${USER}`, `--regid=${USER}`, "--clear-groups", process.execPath, CHILD, owned("core-user-runs-"), cwd,
        `for c in $(cat /proc/$PPID/task/*/children); do [ "$c" != "$$" ] && echo "$c" > reaper; done
         until [ -e go ]; do sleep 0.01; done
         (env -i setsid bash -c 'exec -a ${hidden} sleep 1000' &); sleep 0.1`],
      { cwd: "/tmp", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home }, stdout: "pipe", stderr: "pipe" },
    )
    try {
      const reaperAt = join(cwd, "reaper")
      for (let tries = 0; tries < 500 && !existsSync(reaperAt); tries++) await Bun.sleep(10)
      const reaper = Number(readFileSync(reaperAt, "utf8"))
      expect(reapers()).toContain(reaper)
      process.kill(reaper, "SIGKILL")
      writeFileSync(join(cwd, "go"), "")
      const [code, stdout] = await Promise.all([child.exited, new Response(child.stdout).text()])
      expect(code).toBe(0)
      expect(JSON.parse(stdout.trim().split("\n").pop()!)).toMatchObject({ exitCode: 0, signal: null, survivors: [] })
      expect(named(hidden)).toEqual([])
      expect(bystander.exitCode).toBeNull()
      expect(alive(bystander.pid)).toBe(true)
    } finally {
      bystander.kill("SIGKILL")
      child.kill("SIGKILL")
    }
  })

  // Without a PID namespace, nothing ended a command's detached processes when its supervisor was killed outright (the
  // OOM killer, SIGKILL): the reaper's pipe closed and it only exited. At its pipe's end it now makes one more kill(-1).
  test("its supervisor killed outright, what the command detached ends too", async () => {
    const home = owned("core-user-home-")
    const cwd = owned("core-user-cwd-")
    const hidden = `core-hidden-${crypto.randomUUID().slice(0, 8)}`
    const child = Bun.spawn(
      [setpriv!, `--reuid=${USER}`, `--regid=${USER}`, "--clear-groups", process.execPath, CHILD, owned("core-user-runs-"), cwd,
        `(env -i setsid bash -c 'exec -a ${hidden} sleep 1000' &); echo "$PPID" > supervisor; sleep 60`],
      { cwd: "/tmp", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home }, stdout: "pipe", stderr: "pipe" },
    )
    try {
      const at = join(cwd, "supervisor")
      for (let tries = 0; tries < 500 && (!existsSync(at) || named(hidden).length === 0); tries++) await Bun.sleep(10)
      expect(named(hidden)).toHaveLength(1)
      process.kill(Number(readFileSync(at, "utf8")), "SIGKILL")
      let left = named(hidden)
      for (let tries = 0; tries < 200 && left.length > 0; tries++) {
        await Bun.sleep(10)
        left = named(hidden)
      }
      expect(left).toEqual([])
    } finally {
      child.kill("SIGKILL")
      await child.exited
      for (const pid of named(hidden)) process.kill(Number(pid), "SIGKILL")
    }
  })

  // The kernel counts a user's processes and threads per user namespace, and the command is in its supervisor's.
  test("its processes are bounded (a fork bomb stops there), and it cannot raise the bound", () => {
    const { result } = run(
      `ulimit -Hu; ulimit -Su; (ulimit -Hu unlimited) 2>/dev/null; echo "raise $?"
       perl -e 'my $n = 0; while ($n < ${Starter.PROCESSES + 500}) { my $p = fork; last unless defined $p; if ($p == 0) { sleep 60; exit } $n++ } print "forked $n\\n"'`,
    )
    const [hard, soft, raised, forked] = result.stdout.trim().split("\n")
    expect([hard, soft, raised]).toEqual([`${Starter.PROCESSES}`, `${Starter.PROCESSES}`, "raise 1"])
    // The supervisor's threads, the shell and perl count too.
    const count = Number(/^forked (\d+)$/.exec(forked ?? "")?.[1])
    expect(count).toBeLessThan(Starter.PROCESSES)
    expect(count).toBeGreaterThan(Starter.PROCESSES - 200)
    expect(result.survivors).toEqual([])
  })
})
