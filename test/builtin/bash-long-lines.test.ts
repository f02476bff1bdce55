// A long command line a model sends bash: checking it takes time in step with its length, never its square. A
// 60 KB `echo a a a …` (30,000 words) held the sidecar's one thread for 48 s, a megabyte of words for over ten
// minutes (each path's command text was read whole for each of its paths), while no other request was answered.
// A line longer than bash can be given is refused before it is read at all. Each case runs in a process killed
// after a bound no linear check comes near, since no test timeout stops synchronous code.

import { describe, expect, test } from "bun:test"
import { binary } from "../support/binary"
import { sandbox } from "../cli/fixture"

const BOUND_MS = 20_000

/** `core ARGS` with `input` on stdin in `box`, killed past BOUND_MS: its exit code (null when killed) and stdout. */
const bounded = async (box: ReturnType<typeof sandbox>, args: ReadonlyArray<string>, input: unknown) => {
  const child = Bun.spawn([await binary(), ...args, "--input", "-", "--location", box.location], {
    cwd: box.location,
    env: box.env,
    stdin: new Blob([JSON.stringify(input)]),
    stdout: "pipe",
    stderr: "pipe",
  })
  const timer = setTimeout(() => child.kill("SIGKILL"), BOUND_MS)
  const [code, stdout] = await Promise.all([child.exited, new Response(child.stdout).text()])
  clearTimeout(timer)
  return { code: child.signalCode === "SIGKILL" ? null : code, stdout }
}

describe("bash: long command lines", () => {
  test("a line of 40,000 words, or of 10,000 commands, is checked in time in step with its length", async () => {
    const box = sandbox()
    const words = await bounded(box, ["check", "bash"], { command: `echo${" a".repeat(40_000)}` })
    expect(words.code).toBe(0)
    const commands = await bounded(box, ["check", "bash"], { command: "echo a;".repeat(10_000) })
    expect(commands.code).toBe(0)
  }, 60_000)

  test("a line longer than bash can be given is refused before it is read, saying what to do instead", async () => {
    const box = sandbox()
    const command = `echo${" a".repeat(100_000)}`
    const result = await bounded(box, ["exec", "bash", "--yes"], { command })
    expect(result.code).toBe(1)
    const settlement = JSON.parse(result.stdout) as { status: string; error: { kind: string; message: string } }
    expect(settlement.status).toBe("error")
    expect(settlement.error).toEqual({
      kind: "failure",
      message:
        "The command is 200004 bytes: bash is given it as one argument, which the system holds to 131071 bytes, so it " +
        "cannot run. Write it to a script file and run that file instead.",
    })
  }, 60_000)
})
