// A confined search (grep, glob, list) runs rg from a thread of core that restricted itself with Landlock, and a
// thread inherits the restriction of the thread that starts it. The runtime starts the threads of its shared I/O
// pool from whichever thread first needs one, and a subprocess read through the runtime's own pipes needs one: had
// the search thread started them, core's own asynchronous file work after a search would run confined. It did, in
// the compiled binary (which loads no module from a file, so nothing needs that pool before the first search):
// `core exec glob` whose answer was to be kept as a managed output failed with EACCES and lost it. A process that
// loads its modules from files starts the pool as it loads them, so the check runs bundled into one file.

import { beforeAll, describe, expect, test } from "bun:test"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { Ripgrep } from "../../src/builtin/ripgrep"
import { Landlock } from "../../src/shell/landlock"
import { tempDir } from "../support/temp"

const landlock = Landlock.abi() > 0
if (!landlock) console.warn("search-threads.test: this kernel has no Landlock; searches are not confined, nothing to check")

/** Threads of the engine that only compute (collection, compilation), which a search thread may start. */
const COMPUTING = new Set(["HeapHelper", "JITWorker"])

let bundled = ""
beforeAll(async () => {
  const outdir = tempDir()
  const built = await Bun.build({ entrypoints: [join(import.meta.dir, "search-threads-child.ts")], target: "bun", outdir })
  if (!built.success) throw new Error(`bundling the child failed:\n${built.logs.join("\n")}`)
  bundled = built.outputs[0]!.path
}, 60_000)

describe.skipIf(!landlock)("a confined search starts no thread that works for core", () => {
  test("after searches with input on rg's stdin and with much output, only the search thread and the engine's computing threads are confined, and core's asynchronous writes elsewhere succeed", async () => {
    const root = tempDir()
    for (let index = 0; index < 40; index++) writeFileSync(join(root, `f${index}.txt`), "needle here\n".repeat(2_000))
    const outside = join(tempDir(), "kept")
    mkdirSync(outside)
    const rg = await Effect.runPromise(Ripgrep.executable)
    const child = Bun.spawn([process.execPath, bundled, root, rg, outside], {
      stdout: "pipe",
      stderr: "pipe",
    })
    const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
    const seen = JSON.parse(stdout) as {
      poolBefore: boolean
      searches: Array<{ ended: unknown; printed: number }>
      marked: Array<string>
      failed: Array<string>
    }
    // Otherwise the pool was there before the searches, and this shows nothing.
    expect(seen.poolBefore).toBe(false)
    expect(seen.searches.map((search) => search.ended)).toEqual([0, 0])
    expect(seen.searches[0]!.printed).toBeGreaterThan(0)
    // Everything rg prints, as many batches: as much as rg run here prints.
    const bare = Bun.spawnSync([rg, "--no-config", "--line-number", "--regexp=needle", "--", "."], { cwd: root })
    expect(seen.searches[1]!.printed).toBe(bare.stdout.length)
    expect(bare.stdout.length).toBeGreaterThan(1 << 20)
    expect(seen.marked.filter((name) => name !== "Worker" && !COMPUTING.has(name))).toEqual([])
    expect(seen.marked).toContain("Worker")
    expect(seen.failed).toEqual([])
  })
})
