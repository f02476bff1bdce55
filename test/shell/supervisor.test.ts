// The per-call supervisor with real processes: whatever a command starts, however it detaches (setsid, job
// control, a double fork, setpgrp), is dead when the call ends normally, times out, is cancelled, or core is
// killed with SIGKILL; a later core ends what a dead core and its supervisor left; the result names what was
// killed. Every check reads /proc.

import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Cause, Deferred, Effect, Fiber } from "effect"
import { Landlock } from "../../src/shell/landlock"
import { Shell } from "../../src/shell/shell"
import { Supervised } from "../../src/shell/supervised"
import { tempDir } from "../support/temp"
import { alive, DETACHING, pidsIn } from "./processes"

const shell = Shell.make({}, { records: tempDir("core-runs-") })

const sleepers = (cwd: string): Array<number> => pidsIn(readFileSync(join(cwd, "pids"), "utf8"))

/** Waits (bounded) for the kernel to deliver signals already sent: true once none of `pids` runs. */
const gone = async (pids: ReadonlyArray<number>): Promise<boolean> => {
  for (let tries = 0; tries < 250 && pids.some(alive); tries++) await Bun.sleep(20)
  return !pids.some(alive)
}

const escaped = (pid: number, command: number) => {
  // Each sleeper left the command's group (and the first its session) before the command ended.
  const fields = (of: number) => {
    const text = readFileSync(`/proc/${of}/stat`, "latin1")
    return text.slice(text.lastIndexOf(")") + 2).split(" ")
  }
  return fields(pid)[2] !== fields(command)[2]
}

describe("the per-call supervisor", () => {
  test("ends every detached descendant when the command exits, and names them", async () => {
    const cwd = tempDir("core-sup-")
    const result = await Effect.runPromise(shell.run({ argv: [shell.shell, "-c", DETACHING], cwd }))
    const pids = sleepers(cwd)
    expect(result.exitCode).toBe(0)
    expect(pids).toHaveLength(4)
    for (const pid of pids) expect(alive(pid)).toBe(false)
    expect(result.killed.map((killed) => killed.pid).sort()).toEqual([...pids].sort())
    expect(result.killed.every((killed) => killed.name === "sleep")).toBe(true)
    // Nothing was left for the pipes to wait on.
    expect(result.unread).toEqual([])
  })

  test("ends every detached descendant on a timeout, the command included", async () => {
    const cwd = tempDir("core-sup-")
    const result = await Effect.runPromise(
      shell.run({ argv: [shell.shell, "-c", `${DETACHING}\necho $$; sleep 1000`], cwd, timeoutMs: 1500 }),
    )
    const pids = sleepers(cwd)
    const [leader] = pidsIn(result.stdout.text)
    expect(result.timedOut).toEqual({ kind: "wall", ms: 1500 })
    for (const pid of [...pids, leader!]) expect(alive(pid)).toBe(false)
    expect(result.killed.map((killed) => killed.pid)).toEqual(expect.arrayContaining([...pids, leader!]))
  })

  test("ends every detached descendant when the call is interrupted", async () => {
    const cwd = tempDir("core-sup-")
    const ready = Effect.runSync(Deferred.make<void>())
    const fiber = Effect.runFork(
      shell.run({
        argv: [shell.shell, "-c", `${DETACHING}\necho ready; sleep 1000`],
        cwd,
        onProgress: (update) =>
          update.tail.includes("ready") ? Deferred.succeed(ready, undefined).pipe(Effect.asVoid) : Effect.void,
      }),
    )
    await Effect.runPromise(Deferred.await(ready))
    const pids = sleepers(cwd)
    for (const pid of pids) expect(alive(pid)).toBe(true)
    await Effect.runPromise(Fiber.interrupt(fiber))
    // The interruption returns only once the supervisor has ended them all.
    for (const pid of pids) expect(alive(pid)).toBe(false)
  })

  test("a command runs with no_new_privs set, so a setuid program cannot raise its privileges", async () => {
    const result = await Effect.runPromise(
      shell.run({ argv: [shell.shell, "-c", "grep NoNewPrivs /proc/self/status"], cwd: tempDir("core-sup-") }),
    )
    expect(result.exitCode).toBe(0)
    expect(result.stdout.text.trim()).toMatch(/^NoNewPrivs:\s+1$/)
  })

  // Nothing else bounds a command's memory: a hog must not take core (a sidecar serving others) down with it.
  test("a command is what the kernel ends first when memory runs out, sandboxed or not; core is not", async () => {
    const location = tempDir("core-sup-")
    for (const sandbox of [undefined, { location, approved: [] }]) {
      const result = await Effect.runPromise(
        shell.run({ argv: [shell.shell, "-c", "cat /proc/self/oom_score_adj"], cwd: location, ...(sandbox === undefined ? {} : { sandbox }) }),
      )
      expect([sandbox !== undefined, result.stdout.text.trim()]).toEqual([sandbox !== undefined, "1000"])
    }
    expect(readFileSync("/proc/self/oom_score_adj", "utf8").trim()).not.toBe("1000")
  })

  test.skipIf(Landlock.abi() === 0)("a command whose sandbox leaves /proc out is still ended on a stop, and named", async () => {
    const pool = Supervised.pool(undefined)
    const sandboxed = { read: ["/usr", "/bin", "/lib", "/lib64"].filter((path) => existsSync(path)), write: [], devices: ["/dev/null"] }
    const run = pool.launch({ argv: ["sleep", "1000"], cwd: "/", env: { PATH: process.env.PATH! }, grants: sandboxed, graceMs: 3000 })
    const started = await run.started
    expect(started.kind).toBe("started")
    const pid = (started as { readonly pid: number }).pid
    expect(alive(pid)).toBe(true)
    run.stop()
    const report = await run.ended
    expect(report).toMatchObject({ signal: "SIGTERM", killed: [{ pid, name: "sleep" }], survivors: [] })
    expect(alive(pid)).toBe(false)
  })
})

describe("when core dies", () => {
  const startCore = (records: string, cwd: string, command: string, env: Record<string, string> = {}) => {
    const child = Bun.spawn([process.execPath, join(import.meta.dir, "supervisor-child.ts"), records, cwd, command], {
      env: { ...process.env, ...env },
      stdout: "pipe",
      stderr: "inherit",
    })
    const ready = (async () => {
      let seen = ""
      for await (const chunk of child.stdout) {
        seen += new TextDecoder().decode(chunk)
        const match = /ready (\d+)/.exec(seen)
        if (match !== null) return Number(match[1])
      }
      throw new Error(`core ended before the command was ready: ${seen}`)
    })()
    return { child, ready }
  }

  test("a command cannot read core's token from /proc/<core>/environ", async () => {
    const cwd = tempDir("core-sup-")
    const token = `token-${crypto.randomUUID()}`
    const core = startCore(tempDir("core-runs-"), cwd, `core=$(cut -d' ' -f4 /proc/$PPID/stat); tr '\\0' '\\n' < /proc/$core/environ > environ; echo ready $PPID; sleep 1000`, {
      CORE_TOKEN: token,
    })
    await core.ready
    const environ = readFileSync(join(cwd, "environ"), "utf8")
    core.child.kill("SIGKILL")
    await core.child.exited
    // The variable is there (the read itself worked), its value is not.
    expect(environ).toContain("CORE_TOKEN=")
    expect(environ).not.toContain(token)
  })

  test("kill -9 of core: the supervisor ends every descendant", async () => {
    const cwd = tempDir("core-sup-")
    const core = startCore(tempDir("core-runs-"), cwd, `${DETACHING}\necho ready $PPID; sleep 1000`)
    const supervisor = await core.ready
    const pids = sleepers(cwd)
    for (const pid of pids) expect(escaped(pid, supervisor)).toBe(true)
    core.child.kill("SIGKILL")
    await core.child.exited
    expect(await gone([...pids, supervisor])).toBe(true)
  })

  test("a later core ends what a dead core and its dead supervisor left, before it runs anything", async () => {
    const cwd = tempDir("core-sup-")
    const records = tempDir("core-runs-")
    const core = startCore(records, cwd, `${DETACHING}\necho ready $PPID; sleep 1000`)
    const supervisor = await core.ready
    const pids = sleepers(cwd)
    // Both die at once, unable to clean up: stopped first, then killed.
    process.kill(supervisor, "SIGSTOP")
    process.kill(core.child.pid, "SIGSTOP")
    process.kill(core.child.pid, "SIGKILL")
    process.kill(supervisor, "SIGKILL")
    await core.child.exited
    expect(await gone([supervisor])).toBe(true)
    // Orphaned to init, still running.
    for (const pid of pids) expect(alive(pid)).toBe(true)
    expect(readdirSync(records)).toHaveLength(1)
    Shell.make({}, { records })
    for (const pid of pids) expect(alive(pid)).toBe(false)
    expect(readdirSync(records)).toEqual([])
  })

  test("a later core leaves the runs of a live core alone", async () => {
    const cwd = tempDir("core-sup-")
    const records = tempDir("core-runs-")
    const core = startCore(records, cwd, `${DETACHING}\necho ready $PPID; sleep 1000`)
    await core.ready
    const pids = sleepers(cwd)
    expect(Supervised.sweep({ directory: records })).toEqual([])
    for (const pid of pids) expect(alive(pid)).toBe(true)
    core.child.kill("SIGKILL")
    await core.child.exited
    expect(await gone(pids)).toBe(true)
  })
})

describe("a stuck supervisor", () => {
  test("one that says nothing about starting its command is killed after the start timeout: the call is not held", async () => {
    const pool = Supervised.pool(undefined, false, false, 300)
    const run = pool.launch({ argv: ["true"], cwd: "/", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, graceMs: 1000 })
    // Stopped before it has loaded, it can never report.
    process.kill(run.pid, "SIGSTOP")
    const started = await run.started
    expect(started).toEqual({
      kind: "gone",
      message: "The command's supervisor said nothing for 300 ms and was killed before starting it",
    })
    expect(await gone([run.pid])).toBe(true)
  })
})

describe("the records of runs", () => {
  const order = (cwd: string) => ({ argv: ["true"], cwd, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, graceMs: 1000 })

  test("a spare supervisor is recorded before it takes its order, and its record goes once it has ended", async () => {
    const directory = tempDir("core-runs-")
    const pool = Supervised.pool({ directory })
    await pool.warm()
    const files = readdirSync(directory)
    expect(files).toHaveLength(1)
    const entry = JSON.parse(readFileSync(join(directory, files[0]!), "utf8"))
    const run = pool.launch(order(directory))
    expect(files[0]).toBe(`${run.marker}.json`)
    expect(entry.owner.pid).toBe(process.pid)
    expect(entry.supervisor.pid).toBe(run.pid)
    expect((await run.started).kind).toBe("started")
    expect((await run.ended)?.exitCode).toBe(0)
    expect(await gone([run.pid])).toBe(true)
    for (let tries = 0; tries < 250 && readdirSync(directory).length > 0; tries++) await Bun.sleep(20)
    expect(readdirSync(directory)).toEqual([])
  })

  // `core exec` exits as soon as the call has ended, before it sees its supervisor exit: the record stayed, for the
  // next core to take for a dead core's.
  test("a run's record goes as its end is reported, before its supervisor's exit is seen", async () => {
    const directory = tempDir("core-runs-")
    const pool = Supervised.pool({ directory })
    const run = pool.launch(order(directory))
    expect(readdirSync(directory)).toContain(`${run.marker}.json`)
    expect((await run.ended)?.exitCode).toBe(0)
    expect(readdirSync(directory)).not.toContain(`${run.marker}.json`)
  })

  test("a stopped run ends only once its supervisor is gone", async () => {
    const pool = Supervised.pool({ directory: tempDir("core-runs-") })
    const run = pool.launch({ ...order(tempDir("core-sup-")), argv: ["sleep", "1000"] })
    expect((await run.started).kind).toBe("started")
    run.stop()
    expect((await run.ended)?.killed.map((process_) => process_.name)).toEqual(["sleep"])
    expect(alive(run.pid)).toBe(false)
  })

  test("a supervisor that cannot be recorded runs nothing: the call fails as it starts", async () => {
    const file = join(tempDir("core-runs-"), "file")
    writeFileSync(file, "")
    const pool = Supervised.pool({ directory: join(file, "runs") })
    await pool.warm()
    expect(() => pool.launch(order(tempDir("core-sup-")))).toThrow()
  })
})

// A full disk or a read-only data directory: the supervisor's record cannot be written, so the command must not
// start (nothing could end its processes should core die). Core's own failure, not the command's: the run dies
// (an operational failure of the call) saying where and why, without a stack trace naming no file.
describe("a supervisor that cannot be recorded", () => {
  test("starts no command, and the run fails operationally, saying where and why", async () => {
    const blocked = join(tempDir("core-runs-"), "a-file")
    writeFileSync(blocked, "not a directory\n")
    const records = join(blocked, "runs")
    const marker = join(tempDir("core-loc-"), "ran")
    const exit = await Effect.runPromiseExit(
      Shell.make({}, { records }).run({ argv: ["sh", "-c", `touch ${marker}`], cwd: tempDir("core-loc-") }),
    )
    expect(exit._tag).toBe("Failure")
    const said = exit._tag === "Failure" ? Cause.pretty(exit.cause) : ""
    expect(said).toContain(`core could not record its supervisor in ${records}`)
    expect(said).not.toContain(" at ")
    expect(existsSync(marker)).toBe(false)
  })
})
