// A hostile sandboxed command against the processes around it: its supervisor, core, the spare supervisor and
// starter readied for the next call, another call running meanwhile. Signals, pidfds, ptrace, process_vm_readv,
// /proc/PID/mem, environ, fd and oom_score_adj, and what Landlock does not mediate: another process's resource
// limits (prlimit), priority, affinity and scheduling. Each as core run by root (the command in a PID namespace of
// its own, and without one) and by a user who is not root (65534 through setpriv, as test/shell/user.test.ts does),
// whose command sees every process of core's. Real cores, real processes; python3 makes the system calls.

import { describe, expect, test } from "bun:test"
import { chownSync, copyFileSync, readdirSync, readFileSync, readlinkSync } from "node:fs"
import { basename, join } from "node:path"
import { Landlock } from "../../src/shell/landlock"
import { tempDir } from "../support/temp"
import { named } from "./processes"

const USER = 65534
const CHILD = join(import.meta.dir, "attacks-child.ts")
const ATTACKS = join(import.meta.dir, "attacks.py")
const setpriv = Bun.which("setpriv")
const python = Bun.which("python3", { PATH: "/usr/local/bin:/usr/bin:/bin" })

type Variant = { readonly name: string; readonly user: boolean; readonly pids: boolean }

/** A directory the user of `variant` owns. */
const owned = (prefix: string, variant: Variant) => {
  const directory = tempDir(prefix)
  if (variant.user) chownSync(directory, USER, USER)
  return directory
}

/** Runs the child as the variant's user, in /tmp, with a home of its own. */
const spawnAs = (variant: Variant, argv: ReadonlyArray<string>) =>
  Bun.spawnSync(variant.user ? [setpriv!, `--reuid=${USER}`, `--regid=${USER}`, "--clear-groups", ...argv] : [...argv], {
    cwd: "/tmp",
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: owned("core-attack-home-", variant) },
  })

/** Whether the unprivileged user can run this checkout's code (root here, setpriv, every path readable). */
const userPossible = (): boolean => {
  if (process.getuid?.() !== 0 || setpriv === null) return false
  const shell = join(import.meta.dir, "..", "..", "src", "shell", "shell.ts")
  const variant = { name: "", user: true, pids: false }
  return spawnAs(variant, [process.execPath, "-e", `await import(${JSON.stringify(shell)})`]).exitCode === 0
}

const ROOT = process.getuid?.() === 0
const ready = Landlock.abi() >= 6 && python !== null
const variants: ReadonlyArray<Variant & { readonly skip: boolean }> = [
  { name: "core run by root, the command in a PID namespace of its own", user: false, pids: true, skip: !ready || !ROOT },
  { name: "core run by root, without a PID namespace", user: false, pids: false, skip: !ready || !ROOT },
  { name: "core run by a user who is not root", user: true, pids: false, skip: !ready || !userPossible() },
]

type Outcome = {
  readonly stdout: string
  readonly stderr: string
  readonly exitCode: number | null
  readonly signal: string | null
  readonly survivors: ReadonlyArray<number>
}

/** Runs the child (`mode` and commands as attacks-child.ts takes them) in a Location holding attacks.py. */
type Mode = "sequence" | "sockets" | "crowd" | "bare"

const core = (variant: Variant, mode: Mode, ...commands: ReadonlyArray<string>): Array<Outcome> =>
  coreIn(variant, owned("core-attack-cwd-", variant), mode, ...commands)

/** `core`, the commands run in `cwd` (which the variant's user owns). */
const coreIn = (variant: Variant, cwd: string, mode: Mode, ...commands: ReadonlyArray<string>): Array<Outcome> => {
  copyFileSync(ATTACKS, join(cwd, "attacks.py"))
  const child = spawnAs(variant, [
    process.execPath,
    CHILD,
    owned("core-attack-runs-", variant),
    cwd,
    variant.pids ? "yes" : "no",
    mode,
    ...commands,
  ])
  const lines = child.stdout.toString().trim().split("\n").filter((line) => line.startsWith("{"))
  // One line per command (crowd: 3); fewer means core itself ended early, which its stderr says.
  const expected = mode === "crowd" ? 3 : commands.length
  if (lines.length < expected) {
    throw new Error(
      `core printed ${lines.length} of ${expected} outcomes (exit ${child.exitCode}, signal ${child.signalCode}): ` +
        `${child.stdout.toString()}\n${child.stderr.toString()}`,
    )
  }
  return lines.map((line) => JSON.parse(line))
}

/** Waits (up to 3 s) until no process named `name` is left; answers those left. */
const gone = async (name: string) => {
  for (let tries = 0; tries < 30 && named(name).length > 0; tries++) await Bun.sleep(100)
  return named(name)
}

/**
 * A chain that outruns a search of /proc: each process forks the next and exits at once, so its pid changes faster
 * than /proc can be read. Its first process makes a session of its own and adds its id and its PID namespace to
 * `sessions` in the command's directory: every later process of the chain is in that process group. On x86-64 the loop is machine
 * code (fork, the parent exits, the child forks again), as fast as a compiled program's; elsewhere Python's.
 */
const chain = () => {
  const start = `python3 -c 'import ctypes, mmap, os
if os.fork() == 0:
    os.setsid()
    with open("sessions", "a") as sessions: sessions.write(str(os.getpid()) + " " + os.readlink("/proc/self/ns/pid") + "\\n")`
  return process.arch === "x64"
    ? `${start}
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(bytes([0xb8, 57, 0, 0, 0, 0x0f, 0x05, 0x85, 0xc0, 0x74, 0xf5, 0x31, 0xff, 0xb8, 231, 0, 0, 0, 0x0f, 0x05]))
    ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
'`
    : `${start}
    while True:
        if os.fork() != 0: os._exit(0)
'`
}

/** Whether a process of `group` is left: the kernel's answer (kill -0 to the group), which no chain outruns. */
const groupAlive = (group: number) => {
  try {
    process.kill(-group, 0)
    return true
  } catch {
    return false
  }
}

/**
 * Whether a process of the command's is left in the PID namespace `namespace` (as /proc/PID/ns/pid names it),
 * searched 20 times. Its first process, the supervisor, is not the command's: it reports the call's end and then
 * exits, and may still be exiting when the call has returned.
 */
/**
 * Whether a process of the chains (python, not the namespace's first process) is left in `namespace`. A namespace's
 * number is reused once it is gone, by the next one made (the spare supervisor readied for the next command, whose
 * own processes are core's): only the chains' program counts.
 */
const namespaceAlive = (namespace: string) =>
  Array.from({ length: 20 }).some(() =>
    readdirSync("/proc").some((entry) => {
      try {
        if (!/^\d+$/.test(entry) || readlinkSync(`/proc/${entry}/ns/pid`) !== namespace) return false
        if (!basename(readlinkSync(`/proc/${entry}/exe`)).startsWith("python")) return false
        // NSpid: the process's pid in each namespace it is in, its own namespace's last.
        const numbers = /^NSpid:\s*(.*)$/m.exec(readFileSync(`/proc/${entry}/status`, "latin1"))![1]!.trim().split(/\s+/)
        return numbers.at(-1) !== "1"
      } catch {
        return false
      }
    }),
  )

/** Ends the process groups a test's chains made, should they have outlived the call: one kill reaches a whole group. */
const endGroups = async (groups: ReadonlyArray<number>) => {
  for (let tries = 0; tries < 100 && groups.some(groupAlive); tries++) {
    for (const group of groups) {
      try {
        process.kill(-group, "SIGKILL")
      } catch {
        // gone already
      }
    }
    await Bun.sleep(10)
  }
}

/**
 * Many processes outside core, idle (`count`), so that every search of /proc takes long: a chain's pid read in the
 * listing is gone before its entry is read. Answers how to end them all.
 */
const crowd = async (count: number) => {
  const parent = Bun.spawn(
    [python!, "-c", `import os, signal, sys
# Gone within 2 minutes however the test ends: SIGALRM ends each (an alarm is not inherited by a fork).
for _ in range(${count}):
    if os.fork() == 0:
        signal.alarm(120)
        signal.pause()
        os._exit(0)
signal.alarm(120)
print("up", flush=True)
signal.pause()`],
    { stdout: "pipe", stderr: "inherit", detached: true },
  )
  const reader = parent.stdout.getReader()
  await reader.read()
  reader.releaseLock()
  return () => {
    try {
      process.kill(-parent.pid, "SIGKILL")
    } catch {
      // gone already
    }
  }
}

/**
 * Runs 4 chains (`chain`) at once in one command, with 2,000 idle processes outside core, and checks that none
 * outlived the call: in a PID namespace, the namespace is gone; otherwise no process is left in any chain's group.
 */
const chainsEnd = async (variant: Variant, mode: Mode) => {
  const cwd = owned("core-attack-cwd-", variant)
  const dismiss = await crowd(2000)
  let groups: ReadonlyArray<number> = []
  try {
    const [outcome] = coreIn(variant, cwd, mode, `for i in 1 2 3 4; do ${chain()}; done; sleep 0.2`)
    expect(outcome).toMatchObject({ exitCode: 0, signal: null })
    const sessions = readFileSync(join(cwd, "sessions"), "latin1").trim().split("\n").map((line) => line.split(" "))
    expect(sessions).toHaveLength(4)
    const host = readlinkSync("/proc/self/ns/pid")
    if (variant.pids) {
      // Its pids are its namespace's: the namespace itself must be gone, with everything in it.
      expect(sessions.every(([, namespace]) => namespace !== host)).toBe(true)
      expect(namespaceAlive(sessions[0]![1]!)).toBe(false)
    } else {
      expect(sessions.every(([, namespace]) => namespace === host)).toBe(true)
      groups = sessions.map(([group]) => Number(group))
      expect(groups.filter(groupAlive)).toEqual([])
    }
  } finally {
    dismiss()
    await endGroups(groups)
  }
}

const EPERM = 1

/**
 * Whether this kernel runs 32-bit system calls at all (int 0x80): one built without IA-32 emulation, or with it
 * turned off (ia32_emulation=0), ends the process that tries with SIGSEGV, inside core or not.
 */
const ia32 =
  process.arch === "x64" &&
  Bun.which("python3") !== null &&
  Bun.spawnSync([
    "python3",
    "-c",
    `import ctypes, mmap
page = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40, prot=7)
page[0:8] = b"\\xb8\\x14\\x00\\x00\\x00\\xcd\\x80\\xc3"
ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()`,
  ]).exitCode === 0
const EACCES = 13
const EROFS = 30
const ENOENT = 2

describe("a sandboxed command that turns on the processes around it", () => {
  for (const variant of variants) {
    const skipped = variant.skip ? " (SKIPPED: needs root, Landlock 6, python3, and for another user setpriv and a readable checkout)" : ""

    test.skipIf(variant.skip)(`${variant.name}: every attempt on its supervisor, its reaper, core, the spare and another call is refused${skipped}`, () => {
      const [attack, other, next] = core(variant, "crowd", "python3 attacks.py $PPID")
      const results = JSON.parse(attack!.stdout) as Record<string, Record<string, number | "ok">>
      // In a PID namespace of its own, the command sees its supervisor alone; otherwise every process of core's.
      expect(Object.keys(results).sort()).toEqual(
        variant.pids
          ? ["every process of the user", "supervisor"]
          : ["core", "every process of the user", "other command", "other supervisor", "reaper", "spare starter", "spare supervisor", "supervisor"],
      )
      for (const [target, attempts] of Object.entries(results)) {
        for (const [attempt, result] of Object.entries(attempts)) {
          expect({ target, attempt, result }).toEqual({ target, attempt, result: expect.any(Number) })
          // What the kernel's permission checks answer (Landlock's scope and ptrace rules, non-dumpable
          // processes, the filter on limits and scheduling, /proc read-only in the command's mount namespace): a
          // refusal, never a missing process.
          expect([EPERM, EACCES, EROFS]).toContain(result as number)
        }
      }
      // The other call ran its course, and the next one ran in the spare: nothing was ended or harmed.
      expect(other).toMatchObject({ exitCode: 0, signal: null })
      expect(next).toMatchObject({ stdout: "next\n", exitCode: 0, signal: null })
    }, 60_000)

    test.skipIf(variant.skip)(`${variant.name}: cannot limit its supervisor's descriptors to hide a process, nor core's file size to end it${skipped}`, async () => {
      const hidden = `core-hidden-${crypto.randomUUID().slice(0, 8)}`
      // Without descriptors, a supervisor could not read /proc to find what left the command's group; with a file
      // size limit of 0, core dies at its next write. Both the kernel allows among processes of one user.
      const limit = (target: string, resource: string) =>
        `python3 -c 'import os, resource, sys
supervisor = int(sys.argv[1])
stat = open(f"/proc/{supervisor}/stat").read()
target = supervisor if sys.argv[2] == "supervisor" else int(stat[stat.rindex(")") + 2:].split()[1])
try:
    resource.prlimit(target, resource.${resource}, (0, 0)); print("limited")
except OSError as error: print("refused", error.errno)' $PPID ${target}`
      const outcomes = core(
        variant,
        "sequence",
        `(env -i setsid bash -c 'exec -a ${hidden} sleep 1000' > /dev/null 2>&1 &); ${limit("supervisor", "RLIMIT_NOFILE")}`,
        variant.pids ? "echo refused 1" : limit("core", "RLIMIT_FSIZE"),
        "echo next",
      )
      expect(outcomes.map((outcome) => outcome.stdout)).toEqual([`refused ${EPERM}\n`, `refused ${EPERM}\n`, "next\n"])
      expect(outcomes[0]).toMatchObject({ exitCode: 0, signal: null, survivors: [] })
      expect(await gone(hidden)).toEqual([])
    }, 60_000)

    test.skipIf(variant.skip)(`${variant.name}: what it starts in a burst and leaves as it exits ends with the call${skipped}`, async () => {
      const hidden = `core-burst-${crypto.randomUUID().slice(0, 8)}`
      // Started before the supervisor could hear that the command runs, each leaving the session, the marker and
      // the command's parent; the command exits at once.
      const [outcome] = core(
        variant,
        "sequence",
        `for i in $(seq 20); do (env -i setsid bash -c 'exec -a ${hidden} sleep 1000' > /dev/null 2>&1 &); done; exit 0`,
      )
      expect(outcome).toMatchObject({ exitCode: 0, signal: null })
      expect(await gone(hidden)).toEqual([])
    }, 60_000)

    test.skipIf(variant.skip)(`${variant.name}: no descriptor but 0, 1 and 2 reaches a grandchild; its own limits and scheduling are still its own${skipped}`, () => {
      // The descriptors still open once the listing's own is closed; PR_GET_PDEATHSIG (2) of the command and of
      // its child: the command dies with its supervisor, what it forks does not inherit that.
      const listing = `python3 -c 'import ctypes, os
fds = []
for entry in os.listdir("/proc/self/fd"):
    try: os.readlink(f"/proc/self/fd/{entry}"); fds.append(int(entry))
    except OSError: pass
signal = ctypes.c_int()
ctypes.CDLL(None).prctl(2, ctypes.byref(signal))
print(sorted(fds), signal.value)'`
      const [forked, command] = core(
        variant,
        "sequence",
        `(${listing}; true); ulimit -n 64; ulimit -n; nice -n 3 nice; taskset -c 0 true && echo affinity; ionice -c 3 true && echo idle`,
        `exec ${listing}`,
      )
      expect(forked!.stdout).toBe("[0, 1, 2] 0\n64\n3\naffinity\nidle\n")
      expect(command!.stdout).toBe("[0, 1, 2] 9\n")
    }, 60_000)

    // A command shared the host's IPC namespace: it read and rewrote a user's System V shared memory and message
    // queue; and run by root, it read root's user keyring and left keys in it that outlived the call.
    test.skipIf(variant.skip)(`${variant.name}: the host's System V IPC is not its to reach, nor are the kernel's keyrings${skipped}`, () => {
      const key = 0x43000000 + Math.floor(Math.random() * 0xffffff)
      const ipc = (mode: "make" | "probe" | "remove") => `python3 - ${key} ${mode} <<'PY'
import ctypes, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
key, mode = int(sys.argv[1]), sys.argv[2]
def answer(result): return result if result >= 0 else -ctypes.get_errno()
if mode == "make":
    print(answer(libc.shmget(key, 4096, 0o1666)), answer(libc.msgget(key, 0o1666)))
elif mode == "remove":
    print(answer(libc.shmctl(libc.shmget(key, 0, 0), 0, None)), answer(libc.msgctl(libc.msgget(key, 0), 0, None)))
else:
    add_key, keyctl = (248, 250) if platform.machine() == "x86_64" else (217, 219)
    print("shm", answer(libc.shmget(key, 0, 0)), "msg", answer(libc.msgget(key, 0)), flush=True)
    # add_key("user", ..., KEY_SPEC_USER_KEYRING) and keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING).
    print("add_key", answer(libc.syscall(add_key, b"user", b"core-test-key", b"x", 1, -4)))
    print("keyctl", answer(libc.syscall(keyctl, 0, -4, 0)))
PY`
      const outside = (mode: "make" | "probe" | "remove") => spawnAs(variant, ["bash", "-c", ipc(mode)]).stdout.toString()
      expect(outside("make")).toMatch(/^\d+ \d+\n$/)
      try {
        // Outside core, the user reaches both (and the keyring): what the command must not.
        expect(outside("probe")).toMatch(/^shm \d+ msg \d+\nadd_key \d+\nkeyctl -?\d+\n$/)
        const [inside] = core(variant, "sequence", ipc("probe"))
        expect(inside!.stdout).toBe(`shm -${ENOENT} msg -${ENOENT}\nadd_key -${EPERM}\nkeyctl -${EPERM}\n`)
      } finally {
        expect(outside("remove")).toBe("0 0\n")
      }
    }, 60_000)

    // The filter cannot read a 32-bit system call's arguments, so it refuses every one: were it let through,
    // int 0x80 would set core's limits past it. With Unix sockets granted, this filter alone is installed.
    if (process.arch === "x64") test.skipIf(variant.skip)(`${variant.name}: a 32-bit system call does not get past the filter${skipped}`, () => {
      const script = `python3 -c 'import ctypes, mmap, resource, socket, struct, sys
target = int(sys.argv[1])
socket.socket(socket.AF_UNIX).close(); print("unix socket", flush=True)
try: resource.prlimit(target, resource.RLIMIT_NOFILE, resource.prlimit(target, resource.RLIMIT_NOFILE)); print("prlimit ok", flush=True)
except OSError as error: print("prlimit", error.errno, flush=True)
# prlimit64 (340 on i386) through int 0x80, its arguments in memory below 4 GiB (MAP_32BIT).
page = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40, prot=7)
base = ctypes.addressof(ctypes.c_char.from_buffer(page))
page[2048:2064] = struct.pack("<QQ", *resource.prlimit(target, resource.RLIMIT_NOFILE))
code = b"\\x53\\xb8" + struct.pack("<I", 340) + b"\\xbb" + struct.pack("<i", target) + b"\\xb9\\x07\\x00\\x00\\x00\\xba"
code += struct.pack("<I", base + 2048) + b"\\x31\\xf6\\xcd\\x80\\x5b\\xc3"
page[0:len(code)] = code
print("int 0x80", ctypes.CFUNCTYPE(ctypes.c_int)(base)())' $PPID`
      const [outcome] = core(variant, "sockets", script)
      // Where the kernel runs no 32-bit call, int 0x80 ends the command before any call is made.
      if (ia32) expect(outcome!.stdout).toBe(`unix socket\nprlimit ${EPERM}\nint 0x80 -38\n`)
      else expect(outcome).toMatchObject({ stdout: `unix socket\nprlimit ${EPERM}\n`, signal: "SIGSEGV" })
    }, 60_000)

    // A search of /proc misses a chain whose pid changes faster than /proc is read, all the more with many other
    // processes to read: the supervisor, sealed in a Landlock domain the command's is nested in (in a PID namespace,
    // its first process), ends every process in its reach at once with kill(-1), found or not.
    test.skipIf(variant.skip)(`${variant.name}: a chain of forks that outruns every search of /proc ends with the call${skipped}`, () =>
      chainsEnd(variant, "sequence"), 60_000)
  }
})

describe("a command without a sandbox that forks faster than /proc is read", () => {
  // No Landlock domain to seal the supervisor in, and no PID namespace: the supervisor, a subreaper, finds what is
  // left through its own children (a chain's process is one of them, or soon will be) rather than all of /proc, and
  // ends them until it has none. The same holds where Landlock has no signal scope (before ABI 6).
  for (const variant of variants.filter((each) => !each.pids)) {
    const skip = python === null || !(variant.user ? userPossible() : ROOT)
    const skipped = skip ? " (SKIPPED: needs python3, root, and for another user setpriv and a readable checkout)" : ""
    test.skipIf(skip)(`${variant.name}: a chain of forks ends with the call${skipped}`, () => chainsEnd(variant, "bare"), 60_000)
  }
})
