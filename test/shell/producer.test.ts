// The process producer with real processes: exit codes and signals, honest capture, the whole process group
// ended on exit, timeout and interruption (checked in /proc), inactivity timeouts and live progress.

import { describe, expect, test } from "bun:test"
import { Cause, Deferred, Effect, Exit, Fiber } from "effect"
import { ProcessGroup } from "../../src/shell/process-group"
import { Shell } from "../../src/shell/shell"
import { tempDir } from "../support/temp"
import { alive, pidsIn } from "./processes"

const shell = Shell.make({}, { records: tempDir("core-runs-") })

const run = (command: string, request: Partial<Shell.Request> = {}, producer: Shell.Interface = shell) =>
  Effect.runPromise(producer.run({ argv: [producer.shell, "-c", command], cwd: tempDir("core-shell-"), ...request }))

describe("Shell.run", () => {
  test("reports the exit code and each stream, and both interleaved in arrival order", async () => {
    // Apart in time, so that each stream's pipe is read before the next line is written (two pipes keep no order
    // between them): 50 ms was once too little on a loaded machine.
    const result = await run("echo out; sleep 0.25; echo err >&2; sleep 0.25; echo again; exit 3")
    expect(result.exitCode).toBe(3)
    expect(result.signal).toBeNull()
    expect(result.timedOut).toBeUndefined()
    expect(result.stdout).toMatchObject({ text: "out\nagain\n", seen: 10, kept: 10, gap: undefined })
    expect(result.stderr).toMatchObject({ text: "err\n", seen: 4, gap: undefined })
    expect(result.output.text).toBe("out\nerr\nagain\n")
    expect(result.survivors).toEqual([])
  })

  test("reports the signal that killed the process", async () => {
    const result = await run("kill -9 $$")
    expect(result.exitCode).toBeNull()
    expect(result.signal).toBe("SIGKILL")
  })

  test("a command that does not exist exits 127", async () => {
    const result = await run("surely-no-such-command-here")
    expect(result.exitCode).toBe(127)
    expect(result.stderr.text).toContain("command not found")
  })

  test("keeps the head and tail of a long stream and reports the exact gap", async () => {
    const producer = Shell.make({ maxCaptureBytes: 1000 })
    // 100,000 bytes of "0123456789\n" repeated, on stdout only.
    const result = await run("yes 0123456789 | head -c 100000", {}, producer)
    const stream = "0123456789\n".repeat(Math.ceil(100_000 / 11)).slice(0, 100_000)
    expect(result.stdout.seen).toBe(100_000)
    expect(result.stdout.kept).toBe(1000)
    expect(result.stdout.gap).toEqual({ offset: 500, length: 99_000 })
    expect(result.stdout.head).toBe(stream.slice(0, 500))
    expect(result.stdout.tail).toBe(stream.slice(-500))
    expect(result.output.gap).toEqual({ offset: 500, length: 99_000 })
    expect(result.stderr).toMatchObject({ seen: 0, kept: 0, gap: undefined })
  })

  test("a stream of many megabytes keeps exactly its first and last bytes, though read chunks are freed as it goes", async () => {
    // Numbered lines (no two chunks alike), on stdout and stderr both, so a chunk freed while still kept would show.
    const result = await run("seq 1 2000000; seq 2000001 2200000 >&2")
    const out = Array.from({ length: 2_000_000 }, (_, index) => `${index + 1}\n`).join("")
    const err = Array.from({ length: 200_000 }, (_, index) => `${2_000_001 + index}\n`).join("")
    const half = Shell.DEFAULT_MAX_CAPTURE_BYTES / 2
    expect(result.exitCode).toBe(0)
    expect(result.stdout.seen).toBe(out.length)
    expect(result.stdout.head).toBe(out.slice(0, half))
    expect(result.stdout.tail).toBe(out.slice(-half))
    expect(result.stdout.gap).toEqual({ offset: half, length: out.length - 2 * half })
    expect(result.stderr.head).toBe(err.slice(0, half))
    expect(result.stderr.tail).toBe(err.slice(-half))
    expect(result.output.seen).toBe(out.length + err.length)
    expect(result.output.kept).toBe(2 * half)
  })

  test("a per-call capture limit overrides the configured one", async () => {
    const result = await run("printf abcdefghij", { maxCaptureBytes: 4 })
    expect(result.stdout).toMatchObject({ head: "ab", tail: "ij", seen: 10, kept: 4, gap: { offset: 2, length: 6 } })
  })

  test("stdin is closed unless bytes are given", async () => {
    expect((await run("cat")).stdout.text).toBe("")
    expect((await run("cat", { stdin: new TextEncoder().encode("fed in") })).stdout.text).toBe("fed in")
  })

  test("runs in the given directory with exactly the given environment", async () => {
    const directory = tempDir("core-shell-cwd-")
    const result = await run('pwd; echo "[$CORE_TEST_VALUE]"; echo "[$HOME]"', {
      cwd: directory,
      env: { CORE_TEST_VALUE: "given", PATH: process.env.PATH },
    })
    expect(result.stdout.text).toBe(`${directory}\n[given]\n[]\n`)
  })

  test("a directory or program that does not exist is a SpawnError with its errno", async () => {
    const error = await Effect.runPromise(
      shell.run({ argv: [shell.shell, "-c", "true"], cwd: "/nonexistent/core-shell" }).pipe(Effect.flip),
    )
    expect(error).toMatchObject({ _tag: "Shell.SpawnError", cwd: "/nonexistent/core-shell", code: "ENOENT" })
    const missing = await Effect.runPromise(shell.run({ argv: ["/nonexistent/program"], cwd: tempDir("core-shell-") }).pipe(Effect.flip))
    expect(missing).toMatchObject({ _tag: "Shell.SpawnError", code: "ENOENT" })
  })

  test("an argument list too long for the system is a SpawnError (E2BIG)", async () => {
    const error = await Effect.runPromise(
      shell.run({ argv: [shell.shell, "-c", `echo ${"x".repeat(200_000)}`], cwd: tempDir("core-shell-") }).pipe(Effect.flip),
    )
    expect(error).toMatchObject({ _tag: "Shell.SpawnError", code: "E2BIG" })
  })

  test("anything else Bun.spawn throws is a defect, never a SpawnError", async () => {
    for (const argv of [[], ["echo", "a\u0000b"]]) {
      const exit = await Effect.runPromiseExit(shell.run({ argv, cwd: tempDir("core-shell-") }))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        expect(Cause.hasDies(exit.cause)).toBe(true)
        expect(Cause.hasFails(exit.cause)).toBe(false)
      }
    }
  })

  test("a background job ends with the call, which does not wait for it", async () => {
    const result = await run("sleep 1000 & echo $!")
    const [pid] = pidsIn(result.stdout.text)
    expect(result.exitCode).toBe(0)
    expect(alive(pid!)).toBe(false)
  })

  test("a command that closes stdout early still settles with its stderr", async () => {
    const result = await run("exec 1>&-; sleep 0.2; echo x >&2")
    expect(result.exitCode).toBe(0)
    expect(result.stdout.text).toBe("")
    expect(result.stderr.text).toBe("x\n")
  })

  test("a process that left the group with setsid ends with the call, and so do the pipes it held", async () => {
    // The shell reports the pid only once the job is in its own session, out of the group's reach, and is sleep
    // (setsid makes the session, then becomes sleep: killed in between, it was reported as setsid).
    const session = (pid: string) => `$(cut -d' ' -f6 /proc/${pid}/stat)`
    const result = await run(
      `setsid sleep 1000 & pid=$!; while [ "${session("$pid")}" = "${session("$$")}" ] || [ "$(cat /proc/$pid/comm)" != sleep ]; do :; done; echo $pid`,
    )
    const [pid] = pidsIn(result.stdout.text)
    expect(result.exitCode).toBe(0)
    expect(alive(pid!)).toBe(false)
    expect(result.killed).toEqual([{ pid: pid!, name: "sleep" }])
    expect(result.unread).toEqual([])
  })

  test("unsupervised, a stream a process outside the group keeps writing to is reported as not read", async () => {
    const session = (pid: string) => `$(cut -d' ' -f6 /proc/${pid}/stat)`
    const result = await run(
      `setsid sh -c 'while :; do echo tick; sleep 0.05; done' 2>/dev/null & pid=$!; ` +
        `while [ "${session("$pid")}" = "${session("$$")}" ]; do :; done; echo "writer $pid" >&2`,
      { supervise: false },
    )
    const [pid] = pidsIn(result.stderr.text)
    try {
      expect(result.unread).toEqual(["stdout"])
      expect(result.stdout.text).toContain("tick\n")
    } finally {
      process.kill(-pid!, "SIGKILL")
    }
  })

  test("streams closed by the time the command ends are not reported as unread", async () => {
    expect((await run("echo done")).unread).toEqual([])
  })

  test("the wall-clock timeout ends the whole group, grandchildren included", async () => {
    const result = await run("sleep 1000 & echo $! $$; sleep 1000", { timeoutMs: 300 })
    const [background, leader] = pidsIn(result.stdout.text)
    expect(result.timedOut).toEqual({ kind: "wall", ms: 300 })
    expect(result.signal).toBe("SIGTERM")
    expect(alive(background!)).toBe(false)
    expect(ProcessGroup.members(leader!)).toEqual([])
  })

  test("a process that ignores SIGTERM is killed with SIGKILL", async () => {
    const result = await run("trap '' TERM; echo $$; sleep 1000 & wait", { timeoutMs: 200 })
    const [leader] = pidsIn(result.stdout.text)
    expect(result.timedOut?.kind).toBe("wall")
    expect(result.signal).toBe("SIGKILL")
    expect(ProcessGroup.members(leader!)).toEqual([])
  })

  test("the timeout is never more than the configured maximum", async () => {
    const producer = Shell.make({ timeoutMs: 50_000, maxTimeoutMs: 200 })
    expect(producer.limits.timeoutMs).toBe(200)
    const result = await run("sleep 1000", { timeoutMs: 100_000 }, producer)
    expect(result.timedOut).toEqual({ kind: "wall", ms: 200 })
  })

  test("the inactivity timeout ends a command that stops printing", async () => {
    const producer = Shell.make({ inactivityTimeoutMs: 300 })
    const result = await run("echo started; sleep 1000", {}, producer)
    expect(result.timedOut).toEqual({ kind: "inactivity", ms: 300 })
    expect(result.stdout.text).toBe("started\n")
  })

  test("output keeps the inactivity timeout from firing", async () => {
    // Output every 50 ms against a 1,000 ms limit: a margin no loaded machine should eat, over a run twice the limit.
    const result = await run("for i in $(seq 40); do echo $i; sleep 0.05; done", { inactivityTimeoutMs: 1000 })
    expect(result.timedOut).toBeUndefined()
    expect(result.exitCode).toBe(0)
  })

  test("interrupting the run ends the whole group before it returns", async () => {
    const started = Effect.runSync(Deferred.make<string>())
    const fiber = Effect.runFork(
      shell.run({
        argv: [shell.shell, "-c", "sleep 1000 & echo $! $$; sleep 1000"],
        cwd: tempDir("core-shell-"),
        onProgress: (update) => Deferred.succeed(started, update.tail).pipe(Effect.asVoid),
      }),
    )
    const [background, leader] = pidsIn(await Effect.runPromise(Deferred.await(started)))
    expect(alive(background!)).toBe(true)
    await Effect.runPromise(Fiber.interrupt(fiber))
    expect(alive(background!)).toBe(false)
    expect(alive(leader!)).toBe(false)
    expect(ProcessGroup.members(leader!)).toEqual([])
  })

  test("reports progress while the command runs, at most every 250 ms", async () => {
    const updates: Array<Shell.Progress> = []
    const result = await run("echo one; sleep 0.5; echo two; for i in $(seq 200); do echo $i; done", {
      onProgress: (update) => Effect.sync(() => updates.push(update)),
    })
    expect(result.exitCode).toBe(0)
    // The first update came while the command was still sleeping: it holds only the first line.
    expect(updates[0]).toMatchObject({ tail: "one\n", bytes: 4 })
    expect(updates.some((update) => update.tail.includes("two"))).toBe(true)
    for (let index = 1; index < updates.length; index++) {
      expect(updates[index]!.elapsedMs - updates[index - 1]!.elapsedMs).toBeGreaterThanOrEqual(Shell.PROGRESS_INTERVAL_MS - 5)
    }
  })
})
