// Starting a supervisor as the first process of a PID namespace of its own (Native.spawnInPidNamespace). Between
// unshare and the way back, the thread that spawns can start no thread (the kernel refuses it), and the runtime
// aborts when it cannot start one it needs (`panic: abort() called`), as it can when a garbage collection ends. Before
// the collector was settled ahead of the spawn, a fresh process spawning in a loop aborted every time within 700-850
// spawns, and one young process in fifty of the attack tests; with JavaScript of core's in the window (the arguments
// made there, the spawn behind a closure), every run of 300 spawns with a little allocated between them.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Native } from "../../src/shell/native"

const CHILD = join(import.meta.dir, "pid-namespace-child.ts")
const capable = Native.capable(Native.CAP_SYS_ADMIN)
const skipped = capable ? "" : " (SKIPPED: needs CAP_SYS_ADMIN to make a PID namespace)"

/** Runs the child; answers what it printed, failing on an abort or any other end. */
const child = (...args: ReadonlyArray<string>) => {
  const run = Bun.spawnSync([process.execPath, CHILD, ...args], { stderr: "pipe" })
  const stderr = run.stderr.toString()
  expect({ args, exitCode: run.exitCode, signal: run.signalCode ?? null, aborted: stderr.includes("panic") }).toEqual({
    args,
    exitCode: 0,
    signal: null,
    aborted: false,
  })
  return JSON.parse(run.stdout.toString())
}

describe("a supervisor spawned in a PID namespace of its own", () => {
  test.skipIf(!capable)(`3,000 spawns in a row from a fresh process, collections starting and ending among them, never abort the runtime${skipped}`, () => {
    expect(child("bare", "3000")).toEqual({ count: 3000, namespaced: 3000 })
  }, 60_000)

  test.skipIf(!capable)(`is its namespace's first process; a failed spawn comes back to core's namespace; then threads start as before${skipped}`, () => {
    for (const churn of ["20", "50", "200"]) {
      expect(child("churn", "300", churn)).toEqual({ count: 300, namespaced: 300, first: 300, failed: true, worker: "up" })
    }
  }, 60_000)
})
