// Starting a supervisor as the first process of a PID namespace of its own (Native.spawnInPidNamespace). Between
// unshare and the way back, the thread that spawns can start no thread (the kernel refuses it), and the runtime
// aborts when it cannot start one it needs: one collection or compilation falling there ended core (`panic: abort()
// called`). Spawned as the pool spawns, from a fresh process (where those threads are first started) with a little
// allocated between spawns, hundreds of times: a window that ran any JavaScript (a closure, the arguments made there)
// aborted every such run here.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Native } from "../../src/shell/native"

const CHILD = join(import.meta.dir, "pid-namespace-child.ts")
const capable = Native.capable(Native.CAP_SYS_ADMIN)
const skipped = capable ? "" : " (SKIPPED: needs CAP_SYS_ADMIN to make a PID namespace)"

describe("a supervisor spawned in a PID namespace of its own", () => {
  test.skipIf(!capable)(`is its first process, and spawning it hundreds of times from a fresh process never aborts the runtime${skipped}`, () => {
    for (const churn of [20, 50, 200]) {
      const child = Bun.spawnSync([process.execPath, CHILD, "300", String(churn)], { stderr: "pipe" })
      const stderr = child.stderr.toString()
      expect({ churn, exitCode: child.exitCode, signal: child.signalCode ?? null, aborted: stderr.includes("panic") }).toEqual({
        churn,
        exitCode: 0,
        signal: null,
        aborted: false,
      })
      expect(JSON.parse(child.stdout.toString())).toEqual({ count: 300, namespaced: 300, first: 300, failed: true, worker: "up" })
    }
  }, 60_000)
})
