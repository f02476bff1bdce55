// The shell producer as a plugin's capability (`Plugin.Shell`): runs in the Location by default (or a directory
// relative to it), captures both streams and says when bytes were dropped, ends on its timeout, and ends every
// process the run started, however it detached, before answering.

import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync } from "node:fs"
import { join } from "node:path"
import { Cause, Effect, Exit } from "effect"
import { PluginShell } from "../../src/plugin/plugin-shell"
import { Shell } from "../../src/shell/shell"
import { aliveIn, pidsIn } from "../shell/processes"
import { tempDir } from "../support/temp"
import { Tool } from "../../src/tool/tool"

const location = realpathSync(tempDir("core-plugin-shell-"))
mkdirSync(join(location, "sub"))
const shell = PluginShell.capability(Shell.make({ maxCaptureBytes: 1000 }, { records: tempDir("core-runs-") }), location)
const run = (argv: ReadonlyArray<string>, extra: { cwd?: string; timeoutMs?: number } = {}) =>
  Effect.runPromise(shell.run({ argv, ...extra }))

describe("Plugin.Shell", () => {
  test("runs in the Location, or in a directory relative to it, and captures both streams with the exit code", async () => {
    const ran = await run(["sh", "-c", "pwd; echo oops >&2; exit 3"])
    expect(ran.exitCode).toBe(3)
    expect(ran.stdout).toEqual({ text: `${location}\n`, bytes: location.length + 1, complete: true })
    expect(ran.stderr.text).toBe("oops\n")
    expect((await run(["pwd"], { cwd: "sub" })).stdout.text).toBe(`${join(location, "sub")}\n`)
  })

  test("says when capture dropped bytes, with how many the stream carried", async () => {
    const ran = await run(["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x"])
    expect(ran.stdout.complete).toBe(false)
    expect(ran.stdout.bytes).toBe(5000)
    expect(ran.stdout.text.length).toBeLessThan(5000)
  })

  test("a timeout ends the run and says so", async () => {
    const ran = await run(["sleep", "30"], { timeoutMs: 200 })
    expect(ran.timedOut).toBe(true)
    expect(ran.exitCode).toBe(null)
  })

  test("a process the run left behind in the background is ended when the run ends", async () => {
    const ran = await run(["sh", "-c", "(setsid sleep 60 &) ; sleep 60 & echo $!"])
    const pids = pidsIn(ran.stdout.text)
    expect(pids.length).toBeGreaterThan(0)
    // Numbered as the command's own PID namespace numbers them, where it has one (core run as root).
    for (const pid of pids) expect(aliveIn(location, pid)).toBe(false)
  })

  test("a program that cannot start is a Tool.Failure", async () => {
    const exit = await Effect.runPromiseExit(shell.run({ argv: ["/nonexistent/program"] }))
    expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toBeInstanceOf(Tool.Failure)
  })
})
