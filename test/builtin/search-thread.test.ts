// The confined search thread's own fail-safe: a thread that could not restrict itself with Landlock runs nothing,
// whatever it is told (its code run directly in a worker, as SearchProcess starts it).

import { afterEach, describe, expect, test } from "bun:test"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { SearchProcess } from "../../src/builtin/search-process"
import { tempDir } from "../support/temp"

type Reply = { readonly kind: string; readonly failed?: string; readonly message?: string; readonly id?: number }

const workers: Array<Worker> = []
afterEach(() => {
  for (const worker of workers.splice(0)) worker.terminate()
})

/** A worker running the thread's code, and the next reply it sends. */
const thread = () => {
  const worker = new Worker(URL.createObjectURL(new Blob([SearchProcess.SOURCE], { type: "application/javascript" })))
  workers.push(worker)
  const replies: Array<Reply> = []
  let waiting: ((reply: Reply) => void) | undefined
  worker.onmessage = (event: MessageEvent<Reply>) => {
    if (waiting !== undefined) {
      const wake = waiting
      waiting = undefined
      wake(event.data)
    } else replies.push(event.data)
  }
  const next = () =>
    new Promise<Reply>((resolve) => {
      const queued = replies.shift()
      if (queued !== undefined) resolve(queued)
      else waiting = resolve
    })
  return { worker, next }
}

describe("the confined search thread", () => {
  test("told to run before it was confined, it refuses and starts nothing", async () => {
    const { worker, next } = thread()
    const planted = join(tempDir(), "ran")
    worker.postMessage({ kind: "run", id: 1, argv: ["touch", planted], cwd: "/", stderrBytes: 1024 })
    expect(await next()).toEqual({ kind: "failed", id: 1, message: "the search thread is not confined" })
    expect(existsSync(planted)).toBe(false)
  })

  test("whose restriction fails (a ruleset that is no descriptor), it says why and then runs nothing", async () => {
    const { worker, next } = thread()
    worker.postMessage({ kind: "confine", ruleset: -1 })
    const confined = await next()
    expect(confined.kind).toBe("confined")
    expect(confined.failed).toBe("landlock_restrict_self failed")
    const planted = join(tempDir(), "ran")
    worker.postMessage({ kind: "run", id: 2, argv: ["touch", planted], cwd: "/", stderrBytes: 1024 })
    expect(await next()).toEqual({ kind: "failed", id: 2, message: "the search thread is not confined" })
    expect(existsSync(planted)).toBe(false)
  })
})
