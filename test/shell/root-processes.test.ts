// A sandboxed command of core run by root: the kernel does not apply RLIMIT_NPROC to root, so its processes are
// bounded through its PID namespace instead (Namespace.boundProcesses: the namespace's own kernel.pid_max, Linux
// 6.14 and later). A fork bomb stops there; the command cannot raise the bound (its /proc is read-only to it); the
// machine's own pid_max is never touched. Real supervisors, real processes.

import { describe, expect, test } from "bun:test"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { release } from "node:os"
import { Effect } from "effect"
import { Bash } from "../../src/builtin/bash"
import { Landlock } from "../../src/shell/landlock"
import { Namespace } from "../../src/shell/namespace"
import { Native } from "../../src/shell/native"
import { Shell } from "../../src/shell/shell"
import { Starter } from "../../src/shell/starter"
import { tempDir } from "../support/temp"
import { named } from "./processes"

const shell = Shell.make({}, { records: tempDir("core-runs-") })
const hostPidMax = () => readFileSync("/proc/sys/kernel/pid_max", "latin1").trim()

const runnable =
  process.getuid?.() === 0 && Native.capable(Native.CAP_SYS_ADMIN) && Landlock.abi() > 0 && Namespace.pidMaxPerNamespace(release())
const skipped = runnable ? "" : " (SKIPPED: needs root with CAP_SYS_ADMIN, Landlock and Linux 6.14 or later)"

const sandboxed = (command: string) => {
  const cwd = tempDir("core-root-processes-")
  return Effect.runPromise(shell.run({ argv: ["bash", "-c", command], cwd, sandbox: { location: cwd, approved: [] } }))
}

describe("which kernels keep kernel.pid_max for each PID namespace", () => {
  test("6.14 and later only; anything unreadable is taken for one that does not", () => {
    const cases = ["6.14.0", "6.14.0-rc1", "6.18.44-fc-v1272", "7.0.1", "10.2.0", "6.13.12", "5.14.0-427.vz9", "4.19.0", "", "six"]
    expect(cases.map((text) => [text, Namespace.pidMaxPerNamespace(text)])).toEqual([
      ["6.14.0", true],
      ["6.14.0-rc1", true],
      ["6.18.44-fc-v1272", true],
      ["7.0.1", true],
      ["10.2.0", true],
      ["6.13.12", false],
      ["5.14.0-427.vz9", false],
      ["4.19.0", false],
      ["", false],
      ["six", false],
    ])
  })

  test("a process that is not the first of a PID namespace of its own never writes it", () => {
    const before = hostPidMax()
    expect(Namespace.boundProcesses(Starter.PROCESSES)).toBe("this process is not the first process of a PID namespace of its own")
    expect(hostPidMax()).toBe(before)
  })
})

describe("what core says where root's commands are not bounded in processes", () => {
  test("nothing where they are, or core is not root; else why not", () => {
    const bounded = { root: true, sandboxed: true, release: "6.18.2", pidNamespaces: true }
    expect(Shell.processesNoticeOf(bounded)).toBeUndefined()
    expect(Shell.processesNoticeOf({ ...bounded, root: false, sandboxed: false, pidNamespaces: false, release: "5.15.0" })).toBeUndefined()
    const why = (changed: Partial<Shell.ProcessesBound>) => Shell.processesNoticeOf({ ...bounded, ...changed })
    expect(why({ sandboxed: false })).toStartWith("Commands run by root are not bounded in processes and threads here: they run without the sandbox.")
    expect(why({ release: "6.13.12" })).toContain("this kernel (6.13.12) keeps one kernel.pid_max for the whole machine")
    expect(why({ pidNamespaces: false })).toContain("core cannot make a PID namespace here (it lacks CAP_SYS_ADMIN")
    // The first reason that holds, one notice; each says what to do.
    expect(why({ sandboxed: false, release: "5.4.0", pidNamespaces: false })).toContain("they run without the sandbox")
    for (const changed of [{ sandboxed: false }, { release: "5.4.0" }, { pidNamespaces: false }]) {
      expect(why(changed)).toEndWith("bound core's from outside (a container's --pids-limit, systemd's TasksMax).")
    }
  })

  // A system program (/usr/sbin), which a PATH without the sbin folders misses.
  const capsh = Bun.which("capsh", { PATH: `${process.env.PATH ?? ""}:/usr/sbin:/sbin` })
  test.skipIf(!runnable || capsh === null)(`core check says so where core cannot make a PID namespace, or runs commands unsandboxed, and only then${capsh === null ? " (SKIPPED: needs capsh)" : skipped}`, () => {
    const location = tempDir("core-root-notice-")
    const check = (prefix: ReadonlyArray<string>, directory = location) => {
      const argv = [process.execPath, join(import.meta.dir, "../../src/cli/main.ts"), "check", "read", "--input", '{"filePath":"a.txt"}', "--location", directory]
      const env = { ...process.env, CORE_DATA_DIR: tempDir("core-data-"), CORE_HOME: tempDir("core-home-") }
      const ran = Bun.spawnSync(prefix.length === 0 ? argv : [...prefix, argv.map((word) => `'${word}'`).join(" ")], { env })
      expect(ran.exitCode).toBe(0)
      return ran.stderr.toString()
    }
    expect(check([])).not.toContain("not bounded in processes")
    // Root without CAP_SYS_ADMIN (as in a container by default): no PID namespace for its commands.
    const dropped = check([capsh!, "--drop=cap_sys_admin", "--", "-c"])
    expect(dropped).toContain("core: Commands run by root are not bounded in processes and threads here: core cannot make a PID namespace here")
    const off = tempDir("core-root-notice-off-")
    writeFileSync(join(off, "core.json"), '{ "shell": { "sandbox": "off" } }')
    expect(check([], off)).toContain("core: Commands run by root are not bounded in processes and threads here: they run without the sandbox.")
  })

  test.skipIf(!runnable || capsh === null)(`core serve says so where it starts${capsh === null ? " (SKIPPED: needs capsh)" : skipped}`, async () => {
    const argv = [process.execPath, join(import.meta.dir, "../../src/cli/main.ts"), "serve", "--location", tempDir("core-root-notice-")]
    const env = { ...process.env, CORE_DATA_DIR: tempDir("core-data-"), CORE_HOME: tempDir("core-home-") }
    const served = Bun.spawn([capsh!, "--drop=cap_sys_admin", "--", "-c", `exec ${argv.map((word) => `'${word}'`).join(" ")}`], { env, stdout: "pipe", stderr: "pipe" })
    const ready = await served.stdout.getReader().read()
    expect(new TextDecoder().decode(ready.value)).toContain('"url"')
    served.kill("SIGTERM")
    const [stderr] = await Promise.all([new Response(served.stderr).text(), served.exited])
    expect(stderr).toContain("core: Commands run by root are not bounded in processes and threads here: core cannot make a PID namespace here")
  })
})

describe(`a sandboxed command of root${skipped}`, () => {
  test.skipIf(!runnable)("its processes are bounded (a fork bomb stops there), it cannot raise the bound, and the machine's is untouched", async () => {
    const before = hostPidMax()
    const tag = `core-bomb-${crypto.randomUUID().slice(0, 8)}`
    const result = await sandboxed(
      `cat /proc/sys/kernel/pid_max; (echo 4194304 > /proc/sys/kernel/pid_max) 2>&1; echo "raise $?"
       perl -e 'my $n = 0; while ($n < ${Starter.PROCESSES + 500}) { my $p = fork; last unless defined $p; if ($p == 0) { $0 = "${tag}"; sleep 60; exit } $n++ } print "forked $n\\n"'`,
    )
    const [bound, refused, raised, forked] = result.stdout.text.trim().split("\n")
    // Root of the namespace may write it, capabilities or not: its /proc is read-only to the command.
    expect([bound, refused, raised]).toEqual([`${Starter.PROCESSES + 1}`, expect.stringContaining("Read-only file system"), "raise 1"])
    // The supervisor's threads, the shell and perl count too.
    const count = Number(/^forked (\d+)$/.exec(forked ?? "")?.[1])
    expect(count).toBeLessThan(Starter.PROCESSES)
    expect(count).toBeGreaterThan(Starter.PROCESSES - 200)
    // The supervisor (Bun) is in the namespace too: when a thread it needs cannot start while the namespace is
    // full, it aborts, and the kernel ends everything in the namespace with it. Then core reports the command
    // killed by its supervisor's crash, not its exit code.
    const crashed = result.exitCode === null && result.signal === "SIGKILL" && result.supervisorCrashed !== undefined
    expect(result.exitCode === 0 || crashed).toBe(true)
    expect(result.survivors).toEqual([])
    // Everything it forked ended with the call.
    expect(named(tag)).toEqual([])
    expect(hostPidMax()).toBe(before)
  }, 120_000)

  test.skipIf(!runnable)("a supervisor that crashes: the call says so and what to do; one killed from outside does not", async () => {
    for (const [sent, crashed] of [["SIGSEGV", true], ["SIGABRT", true], ["SIGKILL", false]] as const) {
      const tag = `core-crash-${crypto.randomUUID().slice(0, 8)}`
      const running = sandboxed(`exec -a ${tag} sleep 30`)
      let found: Array<string> = []
      for (let tries = 0; tries < 250 && found.length === 0; tries++) {
        await Bun.sleep(20)
        found = named(tag)
      }
      expect(found.length).toBe(1)
      // The command's parent, as the host numbers it: its supervisor.
      const supervisor = Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${found[0]}/status`, "latin1"))?.[1])
      expect(readFileSync(`/proc/${supervisor}/cmdline`, "latin1")).toContain("__supervise")
      process.kill(supervisor, sent)
      const result = await running
      expect({ sent, exitCode: result.exitCode, signal: result.signal }).toEqual({ sent, exitCode: null, signal: "SIGKILL" })
      // The command ended with its namespace.
      expect(named(tag)).toEqual([])
      if (!crashed) {
        expect(result.supervisorCrashed).toBeUndefined()
        continue
      }
      expect(["SIGSEGV", "SIGABRT", "SIGILL", "SIGTRAP", "SIGBUS"]).toContain(result.supervisorCrashed!)
      const output: Bash.Output = {
        exitCode: null,
        signal: "SIGKILL",
        supervisorCrashed: result.supervisorCrashed!,
        timedOut: false,
        stdout: "",
        stderr: "",
        output: "",
        capture: { stdout: { bytes: 0, kept: 0, complete: true }, stderr: { bytes: 0, kept: 0, complete: true }, output: { bytes: 0, kept: 0, complete: true } },
        durationMs: result.durationMs,
      }
      expect(Bash.text(Shell.limits())(output)).toBe(
        `(no output)\n\nKilled by SIGKILL: core's supervisor of the command stopped (${result.supervisorCrashed}), and every process ` +
          `the command started was ended with it, most likely because the command filled its bound of 4,096 processes and ` +
          "threads. Start fewer at once; its exit code is not known.",
      )
    }
  }, 120_000)
})
