// What a supervised command has of its supervisor: nothing to talk to it through and no way to signal it as a
// group. The command leads a session and a process group of its own, with no controlling terminal; nothing the
// supervisor holds open (its IPC channel to core above all) is open in it; a signal it sends to its own group
// (`kill 0`, `kill -- -$$`) reaches what it started and never the supervisor, which still ends everything and
// reports. With and without the sandbox. Real supervisors, real processes.

import { describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { Landlock } from "../../src/shell/landlock"
import { Shell } from "../../src/shell/shell"
import { tempDir } from "../support/temp"
import { alive, named, pidsIn } from "./processes"

const shell = Shell.make({}, { records: tempDir("core-runs-") })

const variants = [
  ["supervised", false],
  ["supervised and sandboxed", true],
] as const

const run = (command: string, sandboxed: boolean) => {
  const cwd = tempDir("core-isolation-")
  return Effect.runPromise(
    shell.run({ argv: ["bash", "-c", command], cwd, ...(sandboxed ? { sandbox: { location: cwd, approved: [] } } : {}) }),
  )
}

describe("a supervised command and its supervisor", () => {
  for (const [name, sandboxed] of variants) {
    const skip = sandboxed && Landlock.abi() === 0
    test.skipIf(skip)(`${name}: the command leads its own session and group, with no terminal`, async () => {
      // /proc/<pid>/stat after the name: state, ppid, pgrp, session, tty_nr.
      const result = await run('s=$(cat /proc/$$/stat); echo $$ ${s##*) }; exec 3</dev/tty && echo has-terminal', sandboxed)
      const [pid, , , group, session, tty] = result.stdout.text.trim().split(" ")
      expect(group).toBe(pid)
      expect(session).toBe(pid)
      expect(tty).toBe("0")
      expect(result.stdout.text).not.toContain("has-terminal")
      expect(result.stderr.text).toContain("/dev/tty")
    })

    test.skipIf(skip)(`${name}: nothing the supervisor holds is open in the command`, async () => {
      // Listed by a child into a file, so that no pipe of the shell's own is open in it meanwhile.
      const result = await run('ls /proc/$$/fd > fds; tr "\\n" " " < fds; readlink /proc/$$/fd/0', sandboxed)
      expect(result.stdout.text).toBe("0 1 2 /dev/null\n")
      // No variable tells it where a channel would be.
      const variables = await run("env | cut -d= -f1 | grep -i -e NODE_CHANNEL -e BUN_INTERNAL_IPC || true", sandboxed)
      expect(variables.stdout.text).toBe("")
    })

    test.skipIf(skip)(`${name}: a signal to its group never reaches the supervisor, which still reports`, async () => {
      // A signal whose default ends a process and that the supervisor has no handler for: were the supervisor in
      // the group, it would die, and the run would end without its report (as killed, with no exit code).
      const result = await run('trap "" ALRM; kill -ALRM 0; kill -ALRM -- -$$; echo survived', sandboxed)
      expect(result.stdout.text).toBe("survived\n")
      expect(result.exitCode).toBe(0)
      expect(result.signal).toBeNull()
    })

    test.skipIf(skip)(`${name}: the command starts with every signal at its default and none blocked`, async () => {
      // Bun ignores and blocks some signals of its own: a command that inherited them would not die of SIGPIPE.
      const result = await run("grep -E '^Sig(Blk|Ign):' /proc/self/status; yes | head -1; echo \"${PIPESTATUS[0]}\"", sandboxed)
      expect(result.stdout.text).toBe("SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\ny\n141\n")
    })

    test.skipIf(skip)(`${name}: a program, a directory or a file it cannot run is refused with its errno`, async () => {
      const cwd = tempDir("core-isolation-")
      const sandbox = sandboxed ? { sandbox: { location: cwd, approved: [] } } : {}
      const refused = (argv: ReadonlyArray<string>, where = cwd) =>
        Effect.runPromise(shell.run({ argv: [...argv], cwd: where, ...sandbox }).pipe(Effect.flip))
      expect(await refused(["core-no-such-program"])).toMatchObject({ _tag: "Shell.SpawnError", code: "ENOENT" })
      expect(await refused(["/nonexistent/program"])).toMatchObject({ _tag: "Shell.SpawnError", code: "ENOENT" })
      expect(await refused(["true"], join(cwd, "missing"))).toMatchObject({ _tag: "Shell.SpawnError", code: "ENOENT" })
      writeFileSync(join(cwd, "data"), "not a program")
      expect(await refused([join(cwd, "data")])).toMatchObject({ _tag: "Shell.SpawnError", code: "EACCES" })
      // The shell goes on: the next command runs.
      expect((await run("echo next", sandboxed)).stdout.text).toBe("next\n")
    })

    test.skipIf(skip)(`${name}: kill 0 ends what it started, and the run reports how it ended`, async () => {
      const result = await run("sleep 1000 & echo $!; sleep 0.1; kill 0", sandboxed)
      expect(result.signal).toBe("SIGTERM")
      expect(result.exitCode).toBeNull()
      // In a PID namespace of its own, the pid printed is not the host's: everything there ended with the supervisor.
      if (!sandboxed) expect(alive(pidsIn(result.stdout.text)[0]!)).toBe(false)
      expect(result.survivors).toEqual([])
    })
  }
})

// A sandboxed command starts as a child of its supervisor that applies the sandbox to itself and then becomes the
// command: the supervisor never shares its Landlock domain, whose signal scope then keeps every signal from it. So
// the command cannot end its supervisor and leave something hidden running after the call, with or without a PID
// namespace of its own (which only core run as root can give it).
const variantsWithout = [
  ["in a PID namespace of its own", {}],
  ["without a PID namespace (as core run by another user starts it)", { pids: false }],
] as const
describe("a sandboxed command that turns on its supervisor", () => {
  for (const [name, options] of variantsWithout) {
    test.skipIf(Landlock.abi() < 6)(`${name}: cannot signal any of its threads, and what it hid from the call ends with it`, async () => {
      const hidden = `core-hidden-${crypto.randomUUID().slice(0, 8)}`
      const owned = Shell.make({}, { records: tempDir("core-runs-"), ...options })
      const cwd = tempDir("core-isolation-")
      // Out of the command's session and group, with no marker in its environment; then every signal a command
      // can aim at its supervisor: kill -0 to each of its threads (a thread's own creds decide), and SIGKILL.
      const result = await Effect.runPromise(
        owned.run({
          argv: [
            "bash",
            "-c",
            `(env -i setsid bash -c 'exec -a ${hidden} sleep 1000' &); sleep 0.3
             tasks=(/proc/$PPID/task/*); echo "threads: \${#tasks[@]}"
             for task in "\${tasks[@]}"; do kill -0 "\${task##*/}" 2>/dev/null && echo "signalled \${task##*/}"; done
             kill -KILL $PPID 2>/dev/null; echo "kill: $?"`,
          ],
          cwd,
          sandbox: { location: cwd, approved: [] },
        }),
      )
      // Bun runs several threads: each was tried, and none could be signalled.
      expect(result.stdout.text).toMatch(/^threads: ([2-9]|\d{2,})\nkill: 1\n$/)
      // Still its supervisor's run: reported, not found dead.
      expect(result.exitCode).toBe(0)
      expect(result.signal).toBeNull()
      expect(named(hidden)).toEqual([])
    })

    // The other ways a process signals another: a pidfd, and a SIGIO its descriptor's owner gets (F_SETOWN with
    // F_SETSIG SIGKILL). Python makes each system call directly.
    test.skipIf(Landlock.abi() < 6 || Bun.which("python3") === null)(
      `${name}: a pidfd or a SIGIO owner reaches its supervisor no more than kill does`,
      async () => {
        const owned = Shell.make({}, { records: tempDir("core-runs-"), ...options })
        const cwd = tempDir("core-isolation-")
        const script = [
          "import fcntl, os, signal, sys, time",
          "supervisor = int(sys.argv[1])",
          "try:",
          "    signal.pidfd_send_signal(os.pidfd_open(supervisor), signal.SIGKILL)",
          "    print('pidfd: sent')",
          "except OSError as error:",
          "    print('pidfd:', error.errno)",
          "read, write = os.pipe()",
          "fcntl.fcntl(read, fcntl.F_SETOWN, supervisor)",
          "fcntl.fcntl(read, 10, signal.SIGKILL)  # F_SETSIG",
          "fcntl.fcntl(read, fcntl.F_SETFL, fcntl.fcntl(read, fcntl.F_GETFL) | os.O_ASYNC)",
          "os.write(write, b'x')",
          "time.sleep(0.3)",
          "print('after sigio', flush=True)",
        ].join("\n")
        const result = await Effect.runPromise(
          owned.run({ argv: ["bash", "-c", 'python3 -c "$1" "$PPID"', "bash", script], cwd, sandbox: { location: cwd, approved: [] } }),
        )
        // EPERM (1) for the pidfd; the SIGIO was not delivered: the supervisor is alive and reports the run.
        expect(result.stdout.text).toBe("pidfd: 1\nafter sigio\n")
        expect(result.exitCode).toBe(0)
        expect(result.signal).toBeNull()
      },
    )
  }
})
